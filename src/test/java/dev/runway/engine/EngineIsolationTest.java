package dev.runway.engine;

import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Scope;
import dev.runway.core.Json;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import dev.runway.support.ToolServer;
import dev.runway.support.ToolServer.Reply;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * What one run or one workspace can do to the engine: no tool's answer makes a run call its tool for
 * ever (whatever the answer, the attempt ends with a recorded outcome, and attempts count from their
 * start); a workspace whose tools hang does not delay the runs of another; and a call waiting for
 * its answer holds no thread.
 */
class EngineIsolationTest {

  private static void workflow(Http http, String id, String steps) {
    Http.Reply reply = http.put("/v1/workflows/" + id, "{\"steps\":[" + steps + "]}");
    assertTrue(reply.status() == 200 || reply.status() == 201, reply::toString);
  }

  private static String step(String url, int maxAttempts) {
    return "{\"type\":\"http\",\"url\":\"" + url + "\",\"timeout_ms\":5000,\"max_attempts\":" + maxAttempts + "}";
  }

  private static String start(Http http, String workflow, String key) {
    Http.Reply reply = http.post("/v1/workflows/" + workflow + "/runs", key, "{\"project\":\"demo\"}");
    assertEquals(200, reply.status(), reply::toString);
    return reply.json().get("id").asText();
  }

  /** JSON Runway cannot keep (nested 999 deep, a number no type holds) fails the step once, with a clear message. */
  @BothDatabases
  void an_answer_runway_cannot_keep_fails_the_step_after_one_call_not_for_ever(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/deep", Reply.json(200, "[".repeat(999) + "]".repeat(999)));
      tool.script("/number", Reply.json(200, "[1e-2147483648]"));
      api.test(http -> {
        workflow(http, "deep", step(tool.url("/deep"), 2));
        workflow(http, "number", step(tool.url("/number"), 2));
        for (String workflow : new String[] {"deep", "number"}) {
          String runId = start(http, workflow, api.key);
          JsonNode run = awaitStatus(http, runId, "failed");
          JsonNode error = run.get("error");
          assertEquals("step_failed", error.get("code").asText(), run::toString);
          assertEquals(200, error.get("http_status").asInt(), run::toString);
          assertTrue(error.get("message").asText().contains("cannot be kept"), run::toString);
          JsonNode attempts = run.get("steps").get(0).get("attempts");
          assertEquals(1, attempts.size(), run::toString);
          assertEquals("failed", attempts.get(0).get("outcome").asText());
        }
        assertEquals(200, http.get("/v1/runs").status(), "the runs list and read as any other");
        Thread.sleep(1000);
        assertEquals(1, tool.calls("/deep").size(), "called once (it used to be called for ever)");
        assertEquals(1, tool.calls("/number").size());
      });
    }
  }

  /**
   * 17 steps answering 65,000 bytes each: a run's stored outputs are bounded (about 512 KB), so the
   * step whose answer would take them past it fails with a clear message, once; later steps never run.
   */
  @BothDatabases
  void outputs_that_would_outgrow_the_run_fail_the_step_that_brings_them(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/big", Reply.json(200, "{\"blob\":\"" + "b".repeat(64_980) + "\"}"));
      api.test(http -> {
        List<String> steps = new ArrayList<>();
        for (int i = 0; i < 17; i++) {
          steps.add(step(tool.url("/big"), 2));
        }
        workflow(http, "big", String.join(",", steps));
        String runId = start(http, "big", api.key);
        JsonNode run = awaitStatus(http, runId, "failed");
        int failedAt = run.get("error").get("step").asInt();
        assertTrue(failedAt >= 6 && failedAt <= 8, run.get("error")::toString);
        assertTrue(run.get("error").get("message").asText().contains(StepRunner.MAX_STEPS_CHARS + " characters"),
            run.get("error")::toString);
        for (int i = 0; i < failedAt; i++) {
          assertEquals("succeeded", run.get("steps").get(i).get("status").asText());
          assertEquals(64_980, run.get("steps").get(i).get("output").get("blob").asText().length());
        }
        assertEquals("pending", run.get("steps").get(failedAt + 1).get("status").asText());
        Thread.sleep(500);
        assertEquals(failedAt + 1, tool.calls("/big").size(), "one call per step up to the one that failed");
        String stored = (String) api.storedRun(runId).orElseThrow().get("steps");
        assertTrue(stored.length() < 1_048_576, "fits its column: " + stored.length());
      });
    }
  }

  /**
   * An attempt is counted from its start: one cut off before its answer was recorded (a crash, or
   * a save that failed) uses up an attempt, so with max_attempts 1 the step fails and the tool is
   * not called again; with attempts left it is called again, with the same Idempotency-Key.
   */
  @BothDatabases
  void an_attempt_cut_off_before_its_answer_was_recorded_counts_against_max_attempts(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start()) {
      api.test(http -> {
        workflow(http, "once", step(tool.url("/once"), 1));
        workflow(http, "twice", step(tool.url("/twice"), 2));
        String once = start(http, "once", api.key);
        String twice = start(http, "twice", api.key);
        for (String runId : List.of(once, twice)) {
          cutOffFirstAttempt(api, runId);
        }
        try (Engine engine = api.database().startEngine()) {
          JsonNode failed = awaitStatus(http, once, "failed");
          assertTrue(failed.get("error").get("message").asText().contains("cut off"), failed::toString);
          JsonNode attempts = failed.get("steps").get(0).get("attempts");
          assertEquals(1, attempts.size(), failed::toString);
          assertEquals("interrupted", attempts.get(0).get("outcome").asText());
          assertEquals(0, tool.calls("/once").size(), "no attempt left: not called again");

          JsonNode succeeded = awaitStatus(http, twice, "succeeded");
          JsonNode both = succeeded.get("steps").get(0).get("attempts");
          assertEquals(List.of("interrupted", "succeeded"), List.of(both.get(0).get("outcome").asText(),
              both.get(1).get("outcome").asText()), succeeded::toString);
          assertEquals(1, tool.calls("/twice").size());
          assertEquals(twice + ":0", tool.calls("/twice").get(0).idempotencyKey());
        }
      });
    }
  }

  /** As an engine that crashed during the call would leave it: attempt 1 started, its lease run out. */
  private static void cutOffFirstAttempt(Api api, String runId) {
    String steps = (String) api.storedRun(runId).orElseThrow().get("steps");
    ArrayNode progress = (ArrayNode) Json.tree(steps);
    ObjectNode first = (ObjectNode) progress.get(0);
    first.put("status", "running").put("started_at", Json.TIME.format(Instant.now().minusSeconds(60)));
    ((ArrayNode) first.get("attempts")).addObject().put("attempt", 1)
        .put("started_at", Json.TIME.format(Instant.now().minusSeconds(60))).putNull("finished_at").putNull("outcome")
        .putNull("http_status").putNull("message");
    api.jdbi().useHandle(h -> h.createUpdate("UPDATE run SET steps = :steps, lease_owner = 'eng_crashed', "
        + "lease_until = :until, version = version + 1 WHERE id = :id").bind("steps", Json.string(progress))
        .bind("until", Instant.now().minusSeconds(1)).bind("id", runId).execute());
  }

  /**
   * A run whose stored state cannot be read (here: its steps document broken by hand) fails with
   * internal_error on its own; the runs claimed in the same round go on. It used to fail the whole
   * claim, round after round, so that no run of any workspace moved.
   */
  @BothDatabases
  void a_run_that_cannot_be_read_fails_alone_and_the_others_go_on(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start()) {
      api.test(http -> {
        workflow(http, "plain", step(tool.url("/plain"), 1));
        String broken = start(http, "plain", api.key);
        List<String> fine = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
          fine.add(start(http, "plain", api.key));
        }
        api.jdbi().useHandle(h -> h.execute("UPDATE run SET steps = 'not json' WHERE id = ?", broken));
        try (Engine engine = api.database().startEngine()) {
          for (String runId : fine) {
            awaitStatus(http, runId, "succeeded");
          }
          JsonNode run = Runs.await(http, broken, "failed", r -> r.get("status").asText().equals("failed"));
          assertEquals("internal_error", run.get("error").get("code").asText(), run::toString);
          assertEquals(5, tool.calls("/plain").size());
        }
      });
    }
  }

  /**
   * Workspace A starts 300 runs whose tool hangs; workspace B's run is served at once: A holds at
   * most its share of the calls in flight, and its many due runs do not crowd B's out of the claims.
   * (With 8 engine workers each holding a call, B waited for A's tool: 24 s in the security report.)
   */
  @BothDatabases
  void one_workspaces_hanging_tools_do_not_delay_another_workspaces_runs(Api api) throws Exception {
    String other = Api.newWorkspaceId();
    String theirKey = api.keyIn(other, null, Scope.values());
    try (ToolServer tool = ToolServer.start();
         Engine engine = api.database().startEngine(s -> s.with("engine.max_calls_in_flight", "8")
             .with("engine.max_calls_in_flight_per_workspace", "4"))) {
      Duration hang = Duration.ofSeconds(6);
      tool.script("/hang", Reply.json(200, "{}").after(hang));
      api.test(http -> {
        workflow(http, "hang", step(tool.url("/hang"), 1).replace("\"timeout_ms\":5000", "\"timeout_ms\":30000"));
        Http.Reply put = http.send("PUT", "/v1/workflows/quick", theirKey,
            "{\"steps\":[" + step(tool.url("/quick"), 1) + "]}", "application/json");
        assertEquals(201, put.status(), put::toString);
        for (int i = 0; i < 300; i++) {
          start(http, "hang", api.key);
        }
        long waitUntil = System.nanoTime() + Duration.ofSeconds(3).toNanos();
        while (tool.calls("/hang").size() < 4 && System.nanoTime() < waitUntil) {
          Thread.sleep(10);
        }
        String quick = start(http, "quick", theirKey);
        JsonNode run = Runs.awaitStatus(http, theirKey, quick, "succeeded");
        // B's run ended while A held all 4 of its places (A's calls hang `hang`, and A has 300 runs to
        // call for): it did not wait for A's places. No bound on B's time itself: on a loaded machine
        // B's run alone may take seconds.
        java.time.Instant ended = java.time.Instant.parse(run.get("finished_at").asText());
        List<ToolServer.Call> calls = tool.calls("/hang");
        assertEquals(4, inFlightAt(calls, ended, hang), "B's run ended while A's 4 calls were in flight: " + run);
        for (ToolServer.Call call : calls) {
          assertTrue(inFlightAt(calls, call.at(), hang) <= 4, "A holds its share of 4 calls, no more");
        }
      });
    }
  }

  /**
   * Calls in flight hold memory (their run, their request, room for the answer), bounded in all and
   * per workspace: a workspace whose runs carry large outputs gets only as many calls in flight as fit
   * its share, and another workspace's run is still served at once.
   */
  @BothDatabases
  void calls_in_flight_hold_at_most_their_memory_and_a_workspace_its_share(Api api) throws Exception {
    String other = Api.newWorkspaceId();
    String theirKey = api.keyIn(other, null, Scope.values());
    try (ToolServer tool = ToolServer.start();
         Engine engine = api.database().startEngine(s -> s.with("engine.max_call_bytes_in_flight", "4194304"))) {
      tool.script("/big", Reply.json(200, "{\"blob\":\"" + "b".repeat(60_000) + "\"}"));
      tool.script("/hang", Reply.json(200, "{}").after(Duration.ofSeconds(3)));
      api.test(http -> {
        workflow(http, "heavy", step(tool.url("/big"), 1) + "," + step(tool.url("/hang"), 1));
        Http.Reply put = http.send("PUT", "/v1/workflows/quick", theirKey,
            "{\"steps\":[" + step(tool.url("/quick"), 1) + "]}", "application/json");
        assertEquals(201, put.status(), put::toString);
        for (int i = 0; i < 60; i++) {
          start(http, "heavy", api.key);
        }
        long waitUntil = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        long most = 0;
        while (System.nanoTime() < waitUntil && tool.calls("/big").size() < 60) {
          most = Math.max(most, engine.callBytesInFlight());
          Thread.sleep(5);
        }
        Thread.sleep(300);
        most = Math.max(most, engine.callBytesInFlight());
        int hanging = tool.peakConcurrency(); // the hanging step's calls answered at once (the others are quick)
        // Each call past the first step holds about 200 KB (the run, a request with the 60 KB output,
        // room for the answer): the workspace's half of 4 MB fits about ten of them, not sixty.
        assertTrue(hanging >= 5 && hanging <= 12, "calls in flight at the hanging step: " + hanging);
        assertTrue(most <= 4_194_304, "memory held by calls in flight: " + most);

        long t0 = System.nanoTime();
        String quick = start(http, "quick", theirKey);
        Runs.awaitStatus(http, theirKey, quick, "succeeded");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms < 2_000, "another workspace's run took " + ms + " ms");
      });
    }
  }

  /**
   * A call waiting for its answer holds no thread: 200 runs whose tool answers after a second are
   * all called at once by an engine with 8 worker threads (they used to be called 8 at a time).
   */
  @BothDatabases
  void calls_waiting_for_their_answer_hold_no_thread(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start()) {
      tool.script("/second", Reply.json(200, "{\"ok\":true}").after(Duration.ofSeconds(1)));
      api.test(http -> {
        workflow(http, "second", step(tool.url("/second"), 1));
        List<String> runs = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
          runs.add(start(http, "second", api.key));
        }
        // Started before the engine: all 200 calls are due at once when it starts.
        try (Engine engine = api.database().startEngine()) {
          for (String runId : runs) {
            awaitStatus(http, runId, "succeeded");
          }
        }
        assertEquals(200, tool.calls("/second").size());
        assertTrue(tool.peakConcurrency() >= 150, "calls answered at once at the tool: " + tool.peakConcurrency());
      });
    }
  }

  /** How many of the calls (each answered {@code hang} after it arrived) were in flight at {@code t}. */
  private static long inFlightAt(List<ToolServer.Call> calls, java.time.Instant t, Duration hang) {
    return calls.stream().filter(c -> !c.at().isAfter(t) && c.at().plus(hang).isAfter(t)).count();
  }
}
