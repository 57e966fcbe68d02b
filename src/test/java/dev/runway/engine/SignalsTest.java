package dev.runway.engine;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Sha256;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import dev.runway.support.TestDatabase;
import dev.runway.support.ToolServer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Wait steps and the signals they wait for, through HTTP on both databases: a signal sent during
 * the wait, before it (kept), after the run ended (409); through the API and the one-use signal URL;
 * time-outs; idempotency; what later steps see; waits in foreach iterations; a waiting run that
 * outlives its engine; and that a waiting run holds no lease.
 */
class SignalsTest {

  // ---- helpers ----

  private static void workflow(Http http, String id, String... steps) {
    Http.Reply reply = http.put("/v1/workflows/" + id, "{\"steps\":[" + String.join(",", steps) + "]}");
    assertTrue(reply.status() == 200 || reply.status() == 201, reply::toString);
  }

  private static String waitStep(String id, String signal, int timeoutSeconds) {
    return "{\"type\":\"wait\",\"id\":\"" + id + "\",\"signal\":\"" + signal + "\",\"timeout_s\":" + timeoutSeconds + "}";
  }

  private static String start(Http http, String workflow) {
    Http.Reply reply = http.startRun(workflow, "demo");
    assertEquals(200, reply.status(), reply::toString);
    return reply.json().get("id").asText();
  }

  private static Http.Reply signal(Http http, String runId, String name, String body, String... headers) {
    return http.post("/v1/runs/" + runId + "/signals/" + name, http.defaultKey(), body, headers);
  }

  private static JsonNode run(Http http, String runId) {
    Http.Reply reply = http.get("/v1/runs/" + runId);
    assertEquals(200, reply.status(), reply::toString);
    return reply.json();
  }

  private static List<JsonNode> events(Http http, String runId, String type) {
    Http.Reply reply = http.get("/v1/runs/" + runId + "/events?limit=1000");
    assertEquals(200, reply.status(), reply::toString);
    List<JsonNode> out = new ArrayList<>();
    reply.json().get("data").forEach(e -> {
      if (e.get("type").asText().equals(type)) {
        out.add(e);
      }
    });
    return out;
  }

  private static List<Map<String, Object>> signalRows(Api api, String runId) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT name, body, via, consumed_at, consumed_step FROM run_signal "
        + "WHERE run_id = :run ORDER BY id").bind("run", runId).mapToMap().list());
  }

  private static JsonNode waiting(Http http, String runId) {
    return Runs.await(http, runId, "its wait started", r -> r.get("steps").get(0).get("status").asText().equals("waiting"));
  }

  // ---- during the wait ----

  @BothDatabases
  void a_signal_during_the_wait_completes_the_step_and_later_steps_see_it(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "pay", waitStep("pay", "payment_received", 3600),
            "{\"type\":\"http\",\"id\":\"notify\",\"url\":\"" + tool.url("/paid") + "\",\"body\":{\"amount\":"
                + "\"{{ signal.amount }}\",\"same\":\"{{ steps.pay.output.amount }}\"}}");
        String runId = start(http, "pay");
        JsonNode before = waiting(http, runId);
        assertEquals("running", before.get("status").asText());
        JsonNode step = before.get("steps").get(0);
        assertEquals("wait", step.get("type").asText());
        assertEquals("payment_received", step.get("signal").asText());
        assertNotNull(step.get("expires_at").asText());
        // No thread, no lease: the run row is free, due only at the time-out.
        Map<String, Object> row = api.jdbi().withHandle(h -> h.createQuery("SELECT lease_owner, lease_until, due_at "
            + "FROM run WHERE id = :id").bind("id", runId).mapToMap().one());
        assertNull(row.get("lease_owner"), row::toString);
        assertNull(row.get("lease_until"), row::toString);
        assertNotNull(row.get("due_at"), "due at its time-out");

        Http.Reply sent = signal(http, runId, "payment_received", "{\"amount\":42}");
        assertEquals(202, sent.status(), sent::toString);
        assertEquals("delivered", sent.json().get("status").asText());
        assertEquals("pay", sent.json().get("step").asText());
        assertEquals(runId, sent.json().get("run_id").asText());
        assertEquals("payment_received", sent.json().get("signal").asText());

        JsonNode done = awaitStatus(http, runId, "succeeded");
        assertEquals(42, done.get("steps").get(0).get("output").get("amount").asInt());
        assertEquals(sent.json().get("id").asText(), done.get("steps").get(0).get("signal_id").asText());
        JsonNode body = tool.calls("/paid").get(0).body();
        assertEquals("42", body.get("amount").asText(), body::toString);
        assertEquals("42", body.get("same").asText(), body::toString);

        List<JsonNode> received = events(http, runId, "run.signal_received");
        assertEquals(1, received.size());
        assertEquals("payment_received", received.get(0).get("data").get("signal").asText());
        assertEquals("pay", received.get(0).get("data").get("step").asText());
        assertEquals("api", received.get(0).get("data").get("via").asText());
        assertTrue(received.get(0).get("actor").asText().startsWith("key_"), "the caller's key sent it");
        List<Map<String, Object>> rows = signalRows(api, runId);
        assertEquals(1, rows.size());
        assertNotNull(rows.get(0).get("consumed_at"));
      });
    }
  }

  // ---- before the wait: kept ----

  @BothDatabases
  void a_signal_before_the_wait_is_kept_and_taken_when_the_run_gets_there(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
      workflow(http, "later", "{\"type\":\"approval\",\"id\":\"gate\"}", waitStep("pay", "payment_received", 3600));
      String runId = start(http, "later");
      awaitStatus(http, runId, "awaiting_approval");
      Http.Reply first = signal(http, runId, "payment_received", "{\"n\":1}");
      assertEquals(202, first.status(), first::toString);
      assertEquals("kept", first.json().get("status").asText());
      assertTrue(first.json().get("step").isNull());
      assertEquals(202, signal(http, runId, "payment_received", "{\"n\":2}").status());
      assertEquals(202, signal(http, runId, "other", "\"not for this wait\"").status());
      assertEquals(3, signalRows(api, runId).size());
      assertEquals(List.of(), events(http, runId, "run.signal_received"), "nothing taken yet");

      assertEquals(200, http.post("/v1/runs/" + runId + "/approve", "{}").status());
      // The approval's commit reaches the wait, which takes the oldest kept signal of its name.
      JsonNode done = awaitStatus(http, runId, "succeeded");
      assertEquals(1, done.get("steps").get(1).get("output").get("n").asInt(), done::toString);
      List<Map<String, Object>> rows = signalRows(api, runId);
      assertNotNull(rows.get(0).get("consumed_at"), "the oldest was taken");
      assertEquals(1, ((Number) rows.get(0).get("consumed_step")).intValue());
      assertNull(rows.get(1).get("consumed_at"), "the second stays kept");
      assertEquals("other", rows.get(2).get("name"));
      assertNull(rows.get(2).get("consumed_at"), "a signal of another name stays kept");
      assertEquals(1, events(http, runId, "run.signal_received").size());
      });
    }
  }

  // ---- after the run ended ----

  @BothDatabases
  void a_signal_to_a_run_that_ended_is_409_with_its_status(Api api) {
    api.test(http -> {
      workflow(http, "quick", waitStep("pay", "go", 3600));
      String runId = start(http, "quick");
      assertEquals("delivered", signal(http, runId, "go", "null").json().get("status").asText());
      JsonNode done = awaitStatus(http, runId, "succeeded");
      assertTrue(done.get("steps").get(0).get("output").isNull());
      JsonNode problem = assertProblem(signal(http, runId, "go", "{}"), 409, "run_state_conflict");
      assertEquals("succeeded", problem.get("current_status").asText());
      assertEquals(1, signalRows(api, runId).size(), "the refused signal was not stored");

      String canceledId = start(http, "quick");
      assertEquals(200, http.post("/v1/runs/" + canceledId + "/cancel", "{}").status());
      assertEquals("canceled", assertProblem(signal(http, canceledId, "go", "{}"), 409, "run_state_conflict")
          .get("current_status").asText());
    });
  }

  // ---- the signal URL ----

  @BothDatabases
  void the_signal_url_sends_the_signal_once_without_a_key(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "link", "{\"type\":\"http\",\"id\":\"mail\",\"url\":\"" + tool.url("/mail") + "\",\"body\":"
            + "{\"link\":\"{{ run.signal_url.confirm }}\"}}", waitStep("confirm", "confirm", 3600));
        String runId = start(http, "link");
        Runs.await(http, runId, "its wait started", r -> r.get("steps").get(1).get("status").asText().equals("waiting"));
        String link = tool.calls("/mail").get(0).body().get("link").asText();
        assertTrue(link.matches("http://127\\.0\\.0\\.1:\\d+/signals/[A-Za-z0-9_-]{43}"), link);
        String path = link.substring(link.indexOf("/signals/"));
        String token = path.substring("/signals/".length());
        // Only its hash is stored: the token is in no row.
        int stored = api.jdbi().withHandle(h -> h.createQuery("SELECT count(*) FROM run_signal_url WHERE run_id = :r "
            + "AND token_hash = :h AND ended_at IS NULL").bind("r", runId).bind("h", Sha256.hex(token)).mapTo(Integer.class).one());
        assertEquals(1, stored);
        assertFalse(run(http, runId).toString().contains(token), "the run record does not show the token");

        Http.Reply sent = http.post(path, null, "{\"ok\":true}");
        assertEquals(202, sent.status(), sent::toString);
        assertEquals("delivered", sent.json().get("status").asText());
        JsonNode done = awaitStatus(http, runId, "succeeded");
        assertTrue(done.get("steps").get(1).get("output").get("ok").asBoolean());
        JsonNode byUrl = events(http, runId, "run.signal_received").get(0);
        assertEquals("url", byUrl.get("data").get("via").asText());
        assertEquals("signal_url", byUrl.get("actor").asText());

        assertProblem(http.post(path, null, "{\"ok\":true}"), 404, "signal_url_not_found");
        assertProblem(http.post("/signals/" + "A".repeat(43), null, "{}"), 404, "signal_url_not_found");
        assertEquals(1, signalRows(api, runId).size(), "the second use sent nothing");
      });
    }
  }

  @BothDatabases
  void a_signal_url_used_before_the_wait_keeps_the_signal_and_a_cancel_ends_the_others(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "two", "{\"type\":\"http\",\"url\":\"" + tool.url("/mail") + "\",\"body\":"
            + "{\"a\":\"{{ run.signal_url.a }}\",\"b\":\"{{ run.signal_url.b }}\"}}",
            "{\"type\":\"approval\"}", waitStep("wa", "a", 3600), waitStep("wb", "b", 3600));
        String runId = start(http, "two");
        awaitStatus(http, runId, "awaiting_approval");
        JsonNode links = tool.calls("/mail").get(0).body();
        String a = links.get("a").asText();
        String b = links.get("b").asText();
        Http.Reply kept = http.post(a.substring(a.indexOf("/signals/")), null, "1");
        assertEquals("kept", kept.json().get("status").asText(), kept::toString);
        assertProblem(http.post(a.substring(a.indexOf("/signals/")), null, "1"), 404, "signal_url_not_found");
        assertEquals(200, http.post("/v1/runs/" + runId + "/cancel", "{}").status());
        assertProblem(http.post(b.substring(b.indexOf("/signals/")), null, "2"), 404, "signal_url_not_found");
      });
    }
  }

  // ---- time-outs ----

  @BothDatabases
  void a_wait_past_its_time_out_fails_the_run_with_signal_timeout(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "short", waitStep("pay", "pay", 1));
        String runId = start(http, "short");
        JsonNode failed = awaitStatus(http, runId, "failed");
        assertEquals("signal_timeout", failed.get("error").get("code").asText(), failed::toString);
        assertEquals("signal_timeout", failed.get("steps").get(0).get("error").get("code").asText());
        assertEquals("failed", failed.get("steps").get(0).get("status").asText());
        assertEquals("failed", assertProblem(signal(http, runId, "pay", "{}"), 409, "run_state_conflict")
            .get("current_status").asText());
      });
    }
  }

  @BothDatabases
  void a_wait_that_times_out_with_on_failure_continue_lets_the_run_go_on(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "lenient", "{\"type\":\"wait\",\"id\":\"pay\",\"signal\":\"pay\",\"timeout_s\":1,"
            + "\"on_failure\":\"continue\"}", waitStep("next", "next", 3600));
        String runId = start(http, "lenient");
        JsonNode next = Runs.await(http, runId, "the next wait",
            r -> r.get("steps").get(1).get("status").asText().equals("waiting"));
        assertEquals("running", next.get("status").asText());
        assertEquals("signal_timeout", next.get("steps").get(0).get("error").get("code").asText());
        // The timed-out wait's signal is now kept (no wait for it), the next one is delivered.
        assertEquals("kept", signal(http, runId, "pay", "{}").json().get("status").asText());
        assertEquals("delivered", signal(http, runId, "next", "{}").json().get("status").asText());
        awaitStatus(http, runId, "succeeded");
      });
    }
  }

  // ---- idempotency ----

  @BothDatabases
  void the_same_idempotency_key_sends_one_signal_and_replays_its_answer(Api api) {
    api.test(http -> {
      workflow(http, "once", waitStep("pay", "pay", 3600), waitStep("again", "pay", 3600));
      String runId = start(http, "once");
      Http.Reply first = signal(http, runId, "pay", "{\"n\":1}", "Idempotency-Key", "pay-1");
      assertEquals(202, first.status(), first::toString);
      assertEquals("delivered", first.json().get("status").asText());
      Http.Reply again = signal(http, runId, "pay", "{\"n\":1}", "Idempotency-Key", "pay-1");
      assertEquals(202, again.status(), again::toString);
      assertEquals("true", again.header("Idempotent-Replayed"));
      assertEquals(first.json(), again.json());
      assertEquals(1, signalRows(api, runId).size(), "one signal");
      assertEquals("waiting", run(http, runId).get("steps").get(1).get("status").asText(), "the second wait still waits");
      assertProblem(signal(http, runId, "pay", "{\"n\":2}", "Idempotency-Key", "pay-1"), 422, "idempotency_key_mismatch");
      assertEquals(1, signalRows(api, runId).size());
    });
  }

  // ---- refusals ----

  @BothDatabases
  void signals_that_cannot_be_sent_are_refused_with_the_right_problem(Api api) {
    api.test(http -> {
      workflow(http, "w", waitStep("pay", "pay", 3600));
      String runId = start(http, "w");
      // Another workspace's run does not exist for this key.
      String otherKey = api.keyIn(Api.newWorkspaceId(), null, dev.runway.auth.Scope.values());
      assertProblem(http.post("/v1/runs/" + runId + "/signals/pay", otherKey, "{}"), 404, "run_not_found");
      assertProblem(signal(http, "run_01JDQ7Y7X9T2M4P6R8S0U2W4Y6", "pay", "{}"), 404, "run_not_found");
      assertProblem(signal(http, runId, "Pay", "{}"), 400, "validation_failed", "name");
      assertProblem(signal(http, runId, "pay", "{\"a\":\"" + "x".repeat(70_000) + "\"}"), 413, "body_too_large");
      assertProblem(signal(http, runId, "pay", "{\"a\":"), 400, "invalid_json");
      assertProblem(http.post("/v1/runs/" + runId + "/signals/pay", api.key(dev.runway.auth.Scope.RUNS_READ), "{}"),
          403, "insufficient_scope");
      assertEquals(List.of(), signalRows(api, runId));
      assertEquals("waiting", run(http, runId).get("steps").get(0).get("status").asText());
    });
  }

  @BothDatabases
  void a_wait_step_without_a_signal_or_with_a_bad_time_out_is_400_naming_the_field(Api api) {
    api.test(http -> {
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"wait\"}]}"), 400, "validation_failed",
          "steps[0].signal");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"wait\",\"signal\":\"Not A Slug\"}]}"), 400,
          "validation_failed", "steps[0].signal");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"wait\",\"signal\":\"s\",\"timeout_s\":0}]}"),
          400, "validation_failed", "steps[0].timeout_s");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"wait\",\"signal\":\"s\","
          + "\"timeout_s\":31536001}]}"), 400, "validation_failed", "steps[0].timeout_s");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"wait\",\"signal\":\"s\",\"seconds\":3}]}"),
          400, "unknown_parameter", "steps[0].seconds");
      Http.Reply ok = http.put("/v1/workflows/good", "{\"steps\":[{\"type\":\"wait\",\"signal\":\"s\"}]}");
      assertEquals(201, ok.status(), ok::toString);
      JsonNode step = run(http, start(http, "good")).get("steps").get(0);
      assertEquals(java.time.Duration.ofDays(1), java.time.Duration.between(
          java.time.Instant.parse(step.get("started_at").asText()), java.time.Instant.parse(step.get("expires_at").asText())),
          "the default time-out: a day");
    });
  }

  // ---- in foreach ----

  @BothDatabases
  void a_wait_inside_foreach_waits_in_each_iteration(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "each", "{\"type\":\"foreach\",\"id\":\"each\",\"items\":\"[1, 2]\",\"steps\":["
            + waitStep("ok", "ok", 3600) + "]}");
        String runId = start(http, "each");
        JsonNode fanned = Runs.await(http, runId, "both iterations wait", r -> {
          JsonNode its = r.get("steps").get(0).path("iterations");
          return its.size() == 2 && its.get(0).hasNonNull("child_run_id") && its.get(1).hasNonNull("child_run_id");
        });
        for (int i = 0; i < 2; i++) {
          String child = fanned.get("steps").get(0).get("iterations").get(i).get("child_run_id").asText();
          waiting(http, child);
          Http.Reply sent = signal(http, child, "ok", "{\"i\":" + i + "}");
          assertEquals("delivered", sent.json().get("status").asText(), sent::toString);
        }
        JsonNode done = awaitStatus(http, runId, "succeeded");
        assertEquals("[{\"i\":0},{\"i\":1}]", done.get("steps").get(0).get("output").toString());
      });
    }
  }

  // ---- restarts ----

  @BothDatabases
  void a_waiting_run_outlives_its_engine_and_moves_on_when_signaled(Api api) {
    try (ToolServer tool = ToolServer.start()) {
      api.test(http -> {
        workflow(http, "durable", waitStep("pay", "pay", 3600), "{\"type\":\"http\",\"url\":\"" + tool.url("/after")
            + "\",\"body\":{\"s\":\"{{ signal }}\"}}");
        String runId;
        try (Engine first = api.database().startEngine()) {
          runId = start(http, "durable");
          waiting(http, runId);
        }
        try (Engine second = api.database().startEngine()) {
          assertEquals("delivered", signal(http, runId, "pay", "\"paid\"").json().get("status").asText());
          awaitStatus(http, runId, "succeeded");
          assertEquals("paid", tool.calls("/after").get(0).body().get("s").asText());
        }
      });
    }
  }

  @Test
  void a_signal_url_made_on_one_instance_works_on_another() {
    Assumptions.assumeTrue(TestDatabase.postgresReachable() || TestDatabase.PG_REQUIRED, "PostgreSQL is not reachable");
    Api api = Api.on(TestDatabase.POSTGRESQL);
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.testTwoInstances((first, second) -> {
        workflow(first, "link", "{\"type\":\"http\",\"url\":\"" + tool.url("/mail") + "\",\"body\":"
            + "{\"link\":\"{{ run.signal_url.confirm }}\"}}", waitStep("confirm", "confirm", 3600));
        String runId = start(first, "link");
        Runs.await(first, runId, "its wait started", r -> r.get("steps").get(1).get("status").asText().equals("waiting"));
        String link = tool.calls("/mail").get(0).body().get("link").asText();
        Http.Reply sent = second.post(link.substring(link.indexOf("/signals/")), null, "{\"on\":\"second\"}");
        assertEquals(202, sent.status(), sent::toString);
        assertEquals("delivered", sent.json().get("status").asText());
        assertEquals("second", awaitStatus(first, runId, "succeeded").get("steps").get(1).get("output").get("on").asText());
      });
    }
  }

  @BothDatabases
  void a_wait_whose_time_out_passed_while_no_engine_ran_fails_when_one_starts(Api api) throws Exception {
    api.test(http -> {
      workflow(http, "brief", waitStep("pay", "pay", 1));
      String runId = start(http, "brief"); // no engine: the run stands at its wait, due at its time-out
      String expires = waiting(http, runId).get("steps").get(0).get("expires_at").asText();
      while (java.time.Instant.now().isBefore(java.time.Instant.parse(expires))) {
        Thread.sleep(50);
      }
      try (Engine engine = api.database().startEngine()) {
        JsonNode failed = awaitStatus(http, runId, "failed");
        assertEquals("signal_timeout", failed.get("error").get("code").asText());
      }
    });
  }

  @BothDatabases
  void a_run_keeps_at_most_100_signals_that_no_wait_took(Api api) {
    api.test(http -> {
      workflow(http, "full", waitStep("pay", "pay", 3600));
      String runId = start(http, "full");
      for (int i = 0; i < 100; i++) {
        assertEquals("kept", signal(http, runId, "other", String.valueOf(i)).json().get("status").asText());
      }
      JsonNode problem = assertProblem(signal(http, runId, "other", "100"), 409, "too_many_signals");
      assertEquals("running", problem.get("current_status").asText());
      assertEquals("delivered", signal(http, runId, "pay", "1").json().get("status").asText(),
          "a wait still takes its signal");
    });
  }

  // ---- rerun ----

  @BothDatabases
  void a_rerun_from_a_step_after_the_wait_keeps_its_signal(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "again", waitStep("pay", "pay", 3600), "{\"type\":\"http\",\"id\":\"use\",\"url\":\""
            + tool.url("/use") + "\",\"body\":{\"s\":\"{{ signal.v }}\"}}");
        String runId = start(http, "again");
        signal(http, runId, "pay", "{\"v\":\"first\"}");
        awaitStatus(http, runId, "succeeded");
        Http.Reply rerun = http.post("/v1/runs/" + runId + "/rerun", "{\"from_step\":\"use\"}");
        assertEquals(200, rerun.status(), rerun::toString);
        String second = rerun.json().get("id").asText();
        JsonNode done = awaitStatus(http, second, "succeeded");
        assertTrue(done.get("steps").get(0).get("reused").asBoolean());
        assertEquals(List.of("first", "first"), tool.calls("/use").stream().map(c -> c.body().get("s").asText()).toList());
      });
    }
  }
}
