package dev.runway.events;

import dev.runway.run.Event;
import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.Scope;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.SseClient;
import dev.runway.support.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Live events through HTTP: GET /v1/events and GET /v1/runs/{id}/events with Accept:
 * text/event-stream. Resuming by Last-Event-ID with no gap and no duplicate (also while runs are
 * started meanwhile), a run's stream ending with the run, project-limited keys, heartbeats, the
 * bounds on open streams, revoked keys, bad input, and a stream on one instance of another's runs.
 */
class EventStreamTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  private static SseClient open(Http http, String path, String key, String... headers) {
    return SseClient.open(http.origin(), path, key, headers);
  }

  /** Every event of the workspace, oldest first, read as pages of JSON. */
  private static List<JsonNode> allEvents(Http http, String key) {
    List<JsonNode> all = new ArrayList<>();
    String after = null;
    while (true) {
      Http.Reply page = http.get("/v1/events?limit=1000" + (after == null ? "" : "&starting_after=" + after), key);
      assertEquals(200, page.status(), page::toString);
      page.json().get("data").forEach(all::add);
      if (!page.json().get("has_more").asBoolean()) {
        return all;
      }
      after = page.json().get("next_cursor").asText();
    }
  }

  private static List<String> ids(List<SseClient.Event> events) {
    return events.stream().map(SseClient.Event::id).toList();
  }

  @BothDatabases
  void a_workspace_stream_sends_each_new_event_as_the_json_feed_shows_it(Api api) {
    api.workflow("w", false);
    api.test(http -> {
      http.startRun("w", "p"); // before the stream: not sent (a stream without a cursor starts now)
      try (SseClient stream = open(http, "/v1/events", api.key)) {
        assertEquals(200, stream.status());
        assertTrue(stream.header("Content-Type").startsWith("text/event-stream"), stream.header("Content-Type"));
        assertEquals("no-store", stream.header("Cache-Control"));
        assertTrue(stream.header("Request-Id").startsWith("req_"));
        String run = http.startRun("w", "p").json().get("id").asText();
        List<SseClient.Event> got = stream.await(WAIT, e -> e.size() >= 2, "the run's two events");
        assertEquals(List.of("run.started", "run.succeeded"), got.stream().map(SseClient.Event::type).toList());
        JsonNode page = http.get("/v1/runs/" + run + "/events").json().get("data");
        for (int i = 0; i < 2; i++) {
          assertEquals(page.get(i).get("id").asText(), got.get(i).id());
          assertEquals(page.get(i), got.get(i).json(), "data: is the event as the JSON feed shows it");
          assertEquals(run, got.get(i).json().get("run_id").asText());
        }
      }
    });
  }

  @BothDatabases
  void resuming_by_last_event_id_misses_nothing_and_repeats_nothing_while_runs_start(Api api) throws Exception {
    api.workflow("w", false);
    api.test(http -> {
      for (int i = 0; i < 5; i++) {
        http.startRun("w", "p");
      }
      List<JsonNode> before = allEvents(http, api.key);
      String from = before.get(3).get("id").asText();
      ExecutorService starters = Executors.newFixedThreadPool(4);
      try {
        List<Future<?>> started = new ArrayList<>();
        List<SseClient.Event> received = new ArrayList<>();
        try (SseClient first = open(http, "/v1/events?starting_after=" + from, api.key)) {
          for (int t = 0; t < 4; t++) {
            started.add(starters.submit(() -> {
              for (int i = 0; i < 25; i++) {
                assertEquals(200, http.startRun("w", "p").status());
              }
            }));
          }
          received.addAll(first.await(WAIT, e -> e.size() >= 60, "60 events"));
        }
        for (Future<?> f : started) {
          f.get();
        }
        // Reconnect as an EventSource does: Last-Event-ID is the last event received (the URL's
        // starting_after gives way to it).
        String last = received.get(received.size() - 1).id();
        List<JsonNode> all = allEvents(http, api.key);
        int expected = all.size() - 4; // all after the 4th
        try (SseClient second = open(http, "/v1/events?starting_after=" + from, api.key, "Last-Event-ID", last)) {
          received.addAll(second.await(WAIT, e -> received.size() + e.size() >= expected, expected + " events in all"));
        }
        List<String> want = all.subList(4, all.size()).stream().map(e -> e.get("id").asText()).toList();
        assertEquals(want, ids(received).subList(0, want.size()), "every event once, in the feed's order");
        assertEquals(want.size(), received.size(), "no duplicate");
        assertEquals(want.size(), new HashSet<>(ids(received)).size());
      } finally {
        starters.shutdownNow();
      }
    });
  }

  @BothDatabases
  void a_run_stream_sends_the_run_from_its_first_event_and_ends_with_it(Api api) {
    api.workflow("approve-me", true);
    api.workflow("w", false);
    api.test(http -> {
      String run = http.startRun("approve-me", "p").json().get("id").asText();
      try (SseClient stream = open(http, "/v1/runs/" + run + "/events", api.key)) {
        assertEquals(200, stream.status());
        stream.await(WAIT, e -> e.size() >= 2, "run.started and run.awaiting_approval");
        assertFalse(stream.ended());
        assertEquals(200, http.post("/v1/runs/" + run + "/reject", "{\"comment\":\"no\"}").status());
        stream.awaitEnd(WAIT);
        List<String> types = stream.events().stream().map(SseClient.Event::type).toList();
        assertEquals("run.rejected", types.get(types.size() - 1), types::toString);
        JsonNode page = http.get("/v1/runs/" + run + "/events").json().get("data");
        assertEquals(page.size(), stream.events().size());
      }
      // An ended run: its events, then the end; after its last event, only the end.
      String ended = http.startRun("w", "p").json().get("id").asText();
      try (SseClient stream = open(http, "/v1/runs/" + ended + "/events", api.key)) {
        stream.awaitEnd(WAIT);
        assertEquals(List.of("run.started", "run.succeeded"),
            stream.events().stream().map(SseClient.Event::type).toList());
        String last = stream.events().get(1).id();
        try (SseClient again = open(http, "/v1/runs/" + ended + "/events", api.key, "Last-Event-ID", last)) {
          again.awaitEnd(WAIT);
          assertEquals(List.of(), again.events());
        }
      }
    });
  }

  @BothDatabases
  void a_key_limited_to_projects_streams_only_their_events(Api api) {
    api.workflow("approve-me", true);
    String limited = api.keyForProjects("mine");
    api.test(http -> {
      String theirs = http.startRun("approve-me", "theirs").json().get("id").asText();
      assertProblem(http.send("GET", "/v1/runs/" + theirs + "/events", limited, null, null,
          "Accept", "text/event-stream"), 404, "run_not_found");
      try (SseClient stream = open(http, "/v1/events", limited)) {
        http.startRun("approve-me", "theirs");
        String mine = http.startRun("approve-me", "mine").json().get("id").asText();
        List<SseClient.Event> got = stream.await(WAIT, e -> e.size() >= 2, "the events of project mine");
        for (SseClient.Event e : got) {
          assertEquals("mine", e.json().get("project").asText(), e::toString);
          assertEquals(mine, e.json().get("run_id").asText());
        }
      }
    });
  }

  @BothDatabases
  void a_quiet_stream_gets_heartbeats(Api api) {
    api.testWith(s -> s.with("sse.heartbeat_ms", "100"), http -> {
      try (SseClient stream = open(http, "/v1/events", api.key)) {
        List<String> comments = stream.awaitComments(WAIT, 4);
        assertEquals("stream open", comments.get(0));
        assertEquals(List.of("heartbeat", "heartbeat", "heartbeat"), comments.subList(1, 4));
        assertEquals(List.of(), stream.events());
      }
    });
  }

  @BothDatabases
  void open_streams_are_bounded_per_key_and_per_instance_and_hold_no_request_places(Api api) {
    String a = api.key(Scope.RUNS_READ);
    // Other workspaces: a workspace alone holds half the instance's streams (its fair share).
    String b = api.keyIn(Api.newWorkspaceId(), null, Scope.RUNS_READ);
    String c = api.keyIn(Api.newWorkspaceId(), null, Scope.RUNS_READ);
    api.testWith(s -> s.with("sse.max_streams_per_key", "2").with("sse.max_streams", "4")
        .with("http.max_in_flight", "2").with("sse.heartbeat_ms", "100"), http -> {
      try (SseClient a1 = open(http, "/v1/events", a); SseClient a2 = open(http, "/v1/events", a)) {
        assertEquals(200, a1.status());
        assertEquals(200, a2.status());
        Http.Reply third = http.send("GET", "/v1/events", a, null, null, "Accept", "text/event-stream");
        JsonNode problem = assertProblem(third, 429, "rate_limited");
        assertTrue(problem.get("detail").asText().contains("sse.max_streams_per_key"), problem::toString);
        assertEquals("5", third.header("Retry-After"));
        try (SseClient b1 = open(http, "/v1/events", b); SseClient c1 = open(http, "/v1/events", c)) {
          assertEquals(200, b1.status());
          assertEquals(200, c1.status());
          Http.Reply full = http.send("GET", "/v1/events", b, null, null, "Accept", "text/event-stream");
          assertProblem(full, 503, "unavailable");
          assertEquals("5", full.header("Retry-After"));
          // Four open streams, and the limit of requests in flight is 2: other requests still pass.
          assertEquals(200, http.get("/v1/events", a).status());
          assertEquals(200, http.get("/v1/runs", b).status());
        }
        // b1 closed: its place comes free once the server notices (at the next heartbeat).
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
          try (SseClient again = open(http, "/v1/events", b)) {
            if (again.status() == 200) {
              break;
            }
            assertTrue(System.nanoTime() < deadline, "the closed stream's place came free");
          }
          Thread.sleep(50);
        }
      }
    });
  }

  @BothDatabases
  void a_revoked_keys_streams_end(Api api) {
    var created = api.services().keys().create(api.workspace, "revoked", List.of(Scope.values()), null, null);
    api.testWith(s -> s.with("auth.key_cache_seconds", "0").with("sse.poll_interval_ms", "100"), http -> {
      try (SseClient stream = open(http, "/v1/events", created.key())) {
        assertEquals(200, stream.status());
        Thread.sleep(300);
        assertFalse(stream.ended());
        api.services().keys().revoke(created.record().id());
        stream.awaitEnd(WAIT);
      }
      assertEquals(401, http.send("GET", "/v1/events", created.key(), null, null, "Accept", "text/event-stream")
          .status());
    });
  }

  @BothDatabases
  void bad_requests_for_streams_are_problems_naming_the_field(Api api) {
    api.workflow("w", false);
    String other = Api.newWorkspaceId();
    api.workflowIn(other, "w", false);
    String otherKey = api.keyIn(other, null, Scope.values());
    api.test(http -> {
      String[] sse = {"Accept", "text/event-stream"};
      assertProblem(http.send("GET", "/v1/events", api.key, null, null, "Accept", "text/event-stream",
          "Last-Event-ID", "nope"), 400, "validation_failed", "Last-Event-ID");
      assertProblem(http.send("GET", "/v1/events", api.key, null, null, "Accept", "text/event-stream",
          "Last-Event-ID", "evt_01jaaaaaaaaaaaaaaaaaaaaaaa"), 400, "validation_failed", "Last-Event-ID");
      assertProblem(http.send("GET", "/v1/events?starting_after=evt_01jaaaaaaaaaaaaaaaaaaaaaaa", api.key, null, null,
          sse), 400, "validation_failed", "starting_after");
      assertProblem(http.send("GET", "/v1/events?limit=10", api.key, null, null, sse), 400, "unknown_parameter",
          "limit");
      assertEquals(401, http.send("GET", "/v1/events", null, null, null, sse).status());
      assertProblem(http.send("GET", "/v1/events", api.key(Scope.RUNS_WRITE), null, null, sse), 403,
          "insufficient_scope");
      // Another workspace's run and event do not exist.
      String theirs = http.post("/v1/workflows/w/runs", otherKey, "{\"project\":\"p\"}").json().get("id").asText();
      assertProblem(http.send("GET", "/v1/runs/" + theirs + "/events", api.key, null, null, sse), 404, "run_not_found");
      String theirEvent = http.get("/v1/events", otherKey).json().get("data").get(0).get("id").asText();
      assertProblem(http.send("GET", "/v1/events", api.key, null, null, "Accept", "text/event-stream",
          "Last-Event-ID", theirEvent), 400, "validation_failed", "Last-Event-ID");
      // The JSON feed is unchanged without the Accept header.
      assertEquals(200, http.get("/v1/events?limit=10").status());
    });
  }

  @Test
  void a_stream_on_one_instance_sends_what_another_instance_commits() {
    Assumptions.assumeTrue(TestDatabase.postgresReachable() || TestDatabase.PG_REQUIRED, "PostgreSQL is not reachable");
    Api api = Api.on(TestDatabase.POSTGRESQL);
    api.workflow("w", false);
    api.testTwoInstances((first, second) -> {
      try (SseClient stream = open(second, "/v1/events", api.key)) {
        Set<String> runs = new HashSet<>();
        for (int i = 0; i < 10; i++) {
          runs.add(first.startRun("w", "p").json().get("id").asText());
        }
        List<SseClient.Event> got = stream.await(WAIT, e -> e.size() >= 20, "the 20 events of 10 runs");
        assertEquals(runs, new HashSet<>(got.stream().map(e -> e.json().get("run_id").asText()).toList()));
        assertEquals(20, new HashSet<>(ids(got)).size());
      }
    });
  }
}
