package dev.runway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.Scope;
import dev.runway.engine.Engine;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import dev.runway.support.SseClient;
import dev.runway.support.ToolServer;
import dev.runway.support.WebhookReceiver;
import java.time.Duration;

/**
 * The engine's calls in flight, the webhook dispatcher's attempts and the event streams are shared
 * fairly across workspaces (FairShares): a workspace alone holds half of them, and with others
 * holding some, about total / (holders + 1), so that a workspace with many runs, endpoints or keys,
 * or many such workspaces, leave room for one more, which is served while they hold their places.
 */
class WorkspaceSharesTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  /** Longer than any test waits: a call or attempt that hangs holds its place throughout. */
  private static final Duration HANG = Duration.ofSeconds(25);

  private static String step(String url) {
    return "{\"type\":\"http\",\"url\":\"" + url + "\",\"timeout_ms\":30000,\"max_attempts\":1}";
  }

  private static void workflow(Http http, String key, String id, String url) {
    Http.Reply put = http.send("PUT", "/v1/workflows/" + id, key, "{\"steps\":[" + step(url) + "]}", "application/json");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
  }

  private static String start(Http http, String key, String workflow) {
    Http.Reply reply = http.post("/v1/workflows/" + workflow + "/runs", key, "{\"project\":\"p\"}");
    assertEquals(200, reply.status(), reply::toString);
    return reply.json().get("id").asText();
  }

  private static void await(String what, java.util.function.BooleanSupplier done) throws InterruptedException {
    long until = System.nanoTime() + WAIT.toNanos();
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < until, "timed out waiting for " + what);
      Thread.sleep(10);
    }
  }

  /**
   * Six calls in flight, and a workspace may hold all six (its cap): workspace A, whose tool hangs,
   * holds three (half); B, whose tool hangs too, then gets two (the share of two holders: 6 / 3); and
   * C's run is still served while A and B hold their places. (A alone used to take all six.)
   */
  @BothDatabases
  void the_engines_calls_are_shared_fairly_and_a_third_workspace_is_served_while_two_hold_theirs(Api api)
      throws Exception {
    String b = api.keyIn(Api.newWorkspaceId(), null, Scope.values());
    String c = api.keyIn(Api.newWorkspaceId(), null, Scope.values());
    try (ToolServer tool = ToolServer.start();
         Engine engine = api.database().startEngine(s -> s.with("engine.max_calls_in_flight", "6")
             .with("engine.max_calls_in_flight_per_workspace", "6"))) {
      tool.script("/hang-a", ToolServer.Reply.json(200, "{}").after(HANG));
      tool.script("/hang-b", ToolServer.Reply.json(200, "{}").after(HANG));
      api.test(http -> {
        workflow(http, api.key, "hang", tool.url("/hang-a"));
        workflow(http, b, "hang", tool.url("/hang-b"));
        workflow(http, c, "quick", tool.url("/quick"));
        for (int i = 0; i < 20; i++) {
          start(http, api.key, "hang");
        }
        await("A's calls", () -> tool.calls("/hang-a").size() >= 3);
        for (int i = 0; i < 20; i++) {
          start(http, b, "hang");
        }
        await("B's calls beside A's", () -> tool.calls("/hang-b").size() >= 2);
        String quick = start(http, c, "quick");
        JsonNode run = Runs.awaitStatus(http, c, quick, "succeeded");
        assertEquals("succeeded", run.get("status").asText());
        // C's run ended while A and B still held their places, with many runs due each.
        // C's place is freed once its run's last commit has been taken up, a moment after the run shows
        // as succeeded: then A's and B's calls are the 5 in flight.
        await("C's call to leave the calls in flight", () -> engine.callsInFlight() == 5);
        assertEquals(3, tool.calls("/hang-a").size(), "A holds half of the 6 places, no more");
        assertEquals(2, tool.calls("/hang-b").size(), "B holds its share of 6 / 3");
      });
    }
  }

  /**
   * Four attempts in flight: workspace A, with four endpoints that hang and a dozen deliveries due,
   * holds two (half); workspace B's delivery is made while A's two hang. (A's endpoints used to take
   * all four places, and B waited for them.)
   */
  @BothDatabases
  void webhook_attempts_are_shared_fairly_and_another_workspace_is_delivered_while_one_holds_its_share(Api api) {
    String otherWorkspace = Api.newWorkspaceId();
    String b = api.keyIn(otherWorkspace, null, Scope.values());
    api.workflow("w", false);
    api.workflowIn(otherWorkspace, "w", false);
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      receiver.script("/slow", new WebhookReceiver.Reply(200, null, HANG));
      api.testWebhooks(s -> s.with("webhooks.max_in_flight", "4").with("webhooks.max_in_flight_per_endpoint", "1")
          .with("webhooks.timeout_ms", "60000"), http -> {
        for (int i = 0; i < 4; i++) {
          create(http, api.key, receiver, "/slow");
        }
        create(http, b, receiver, "/fast");
        for (int i = 0; i < 3; i++) {
          start(http, api.key, "w");
        }
        receiver.await(WAIT, d -> d.stream().filter(x -> x.path().equals("/slow")).count() >= 2, "A's attempts");
        start(http, b, "w");
        receiver.await(WAIT, d -> d.stream().anyMatch(x -> x.path().equals("/fast")), "B's delivery");
        assertEquals(2, receiver.deliveries("/slow").size(),
            "A held its share, 2 of the 4 places, while its other deliveries were due");
      });
    }
  }

  private static void create(Http http, String key, WebhookReceiver receiver, String path) {
    Http.Reply made = http.post("/v1/webhook_endpoints", key,
        "{\"url\":\"" + receiver.url(path) + "\",\"event_types\":[\"run.succeeded\"]}");
    assertEquals(201, made.status(), made::toString);
    receiver.trust(made.json().get("secret").asText());
  }

  /**
   * Four streams on the instance: workspace A, with keys to spare, opens two (half); its third is
   * refused with 429 and Retry-After, and workspace B still opens one while A's are open.
   */
  @BothDatabases
  void event_streams_are_shared_fairly_across_workspaces(Api api) {
    String a2 = api.key(Scope.RUNS_READ);
    String b = api.keyIn(Api.newWorkspaceId(), null, Scope.RUNS_READ);
    api.testWith(s -> s.with("sse.max_streams", "4").with("sse.heartbeat_ms", "100"), http -> {
      try (SseClient first = SseClient.open(http.origin(), "/v1/events", api.key);
           SseClient second = SseClient.open(http.origin(), "/v1/events", a2)) {
        assertEquals(200, first.status());
        assertEquals(200, second.status());
        // Opened as a stream, so that a stream wrongly admitted fails the test rather than hang it.
        try (SseClient third = SseClient.open(http.origin(), "/v1/events", a2)) {
          assertEquals(429, third.status(), "A's third stream is past its share");
          JsonNode problem = third.problem();
          assertEquals("rate_limited", problem.get("code").asText(), problem::toString);
          assertTrue(problem.get("detail").asText().contains("sse.max_streams"), problem::toString);
          assertEquals("5", third.header("Retry-After"));
        }
        try (SseClient theirs = SseClient.open(http.origin(), "/v1/events", b)) {
          assertEquals(200, theirs.status(), "B opens a stream while A holds its two");
        }
      }
    });
  }
}
