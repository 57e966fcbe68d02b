package dev.runway.engine;

import dev.runway.run.EventDao;
import dev.runway.run.WorkflowRunMachine;
import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.ApiKey;
import dev.runway.auth.KeyHasher;
import dev.runway.auth.Scope;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.Tx;
import dev.runway.db.WorkspaceLocks;
import dev.runway.run.RunDao;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import dev.runway.support.TestDatabase;
import dev.runway.support.ToolServer;
import dev.runway.support.ToolServer.Reply;
import dev.runway.workflow.Step;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.Assumptions;

/**
 * The run engine against a real local tool server, on both databases: steps, retries, time-outs,
 * approvals, cancel, the event timelines, and each run keeping the definition it started with.
 */
class EngineTest {
  private static final String TIME = "\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z";

  // ---- helpers ----

  /** PUTs a workflow with these steps (JSON objects) and checks it was stored. */
  private static void workflow(Http http, String id, boolean requiresApproval, String... steps) {
    Http.Reply reply = http.put("/v1/workflows/" + id,
        "{\"requires_approval\":" + requiresApproval + ",\"steps\":[" + String.join(",", steps) + "]}");
    assertTrue(reply.status() == 200 || reply.status() == 201, reply::toString);
  }

  private static String httpStep(String url) {
    return "{\"type\":\"http\",\"url\":\"" + url + "\"}";
  }

  private static String httpStep(String url, int timeoutMs, int maxAttempts) {
    return "{\"type\":\"http\",\"url\":\"" + url + "\",\"timeout_ms\":" + timeoutMs + ",\"max_attempts\":" + maxAttempts + "}";
  }

  private static String delay(int seconds) {
    return "{\"type\":\"delay\",\"seconds\":" + seconds + "}";
  }

  private static String approval(int timeoutSeconds) {
    return "{\"type\":\"approval\",\"timeout_s\":" + timeoutSeconds + "}";
  }

  private static String start(Http http, String workflow) {
    Http.Reply reply = http.startRun(workflow, "demo");
    assertEquals(200, reply.status(), reply::toString);
    assertEquals("running", reply.json().get("status").asText(), "spec rule 3: a new run is running");
    return reply.json().get("id").asText();
  }

  /** The run's whole timeline, oldest first. */
  private static List<JsonNode> events(Http http, String runId) {
    Http.Reply reply = http.get("/v1/runs/" + runId + "/events?limit=1000");
    assertEquals(200, reply.status(), reply::toString);
    assertFalse(reply.json().get("has_more").asBoolean());
    List<JsonNode> out = new ArrayList<>();
    reply.json().get("data").forEach(out::add);
    return out;
  }

  private static List<String> types(List<JsonNode> events) {
    return events.stream().map(e -> e.get("type").asText()).toList();
  }

  /** The key id (key_…) of a key of the test's workspace. */
  private static String keyId(Api api, String key) {
    String hash = KeyHasher.hash(key);
    return api.services().keys().list(api.workspace).stream().filter(k -> k.keyHash().equals(hash))
        .map(ApiKey::id).findFirst().orElseThrow();
  }

  private static JsonNode run(Http http, String runId) {
    Http.Reply reply = http.get("/v1/runs/" + runId);
    assertEquals(200, reply.status(), reply::toString);
    return reply.json();
  }

  private static void assertFinished(JsonNode run) {
    assertTrue(run.get("finished_at").asText().matches(TIME), run::toString);
    assertFalse(Instant.parse(run.get("finished_at").asText()).isBefore(Instant.parse(run.get("created_at").asText())));
  }

  private static void assertConflict(Http.Reply reply, String currentStatus) {
    JsonNode body = assertProblem(reply, 409, "run_state_conflict");
    assertEquals(currentStatus, body.path("current_status").asText(), reply::toString);
  }

  private static long millisBetween(JsonNode run, String from, String to) {
    return Duration.between(Instant.parse(run.get(from).asText()), Instant.parse(run.get(to).asText())).toMillis();
  }

  // ---- runs without steps ----

  @BothDatabases
  void workflow_without_steps_goes_from_running_to_succeeded(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "empty", false);
        String runId = start(http, "empty");
        JsonNode run = awaitStatus(http, runId, "succeeded");
        assertFinished(run);
        assertTrue(run.get("error").isNull(), run::toString);
        assertTrue(run.get("approval").isNull(), run::toString);
        assertEquals(0, run.get("steps").size());
        List<JsonNode> events = events(http, runId);
        assertEquals(List.of("run.started", "run.succeeded"), types(events));
        assertEquals(keyId(api, api.key), events.get(0).get("actor").asText(), "the caller started the run");
        assertEquals("engine", events.get(1).get("actor").asText());
      });
    }
  }

  // ---- http steps ----

  @BothDatabases
  void http_steps_call_the_tool_with_run_context_and_keep_its_output(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/first", Reply.json(200, "{\"ticket\":\"T-1\",\"n\":[1,2]}"));
      tool.script("/second", Reply.json(201, "{\"done\":true}"));
      api.test(http -> {
        workflow(http, "two", false, httpStep(tool.url("/first")), httpStep(tool.url("/second")));
        String runId = Runs.start(http, "two", "demo", "{\"order\":42}").get("id").asText();
        JsonNode run = awaitStatus(http, runId, "succeeded");
        assertFinished(run);

        List<ToolServer.Call> first = tool.calls("/first");
        assertEquals(1, first.size(), first::toString);
        ToolServer.Call call = first.get(0);
        assertEquals("POST", call.method());
        assertEquals(runId + ":0", call.idempotencyKey());
        JsonNode body = call.body();
        assertEquals(Set.of("run_id", "workflow", "project", "step_index", "attempt", "inputs", "outputs"),
            fieldNames(body), body::toString);
        assertEquals(runId, body.get("run_id").asText());
        assertEquals("two", body.get("workflow").asText());
        assertEquals("demo", body.get("project").asText());
        assertEquals(0, body.get("step_index").asInt());
        assertEquals(1, body.get("attempt").asInt());
        assertEquals(Json.tree("{\"order\":42}"), body.get("inputs"));
        assertEquals(Json.tree("[]"), body.get("outputs"));

        List<ToolServer.Call> second = tool.calls("/second");
        assertEquals(1, second.size(), second::toString);
        assertEquals(runId + ":1", second.get(0).idempotencyKey());
        assertEquals(1, second.get(0).body().get("step_index").asInt());
        assertEquals(Json.tree("{\"order\":42}"), second.get(0).body().get("inputs"));
        assertEquals(Json.tree("[{\"ticket\":\"T-1\",\"n\":[1,2]}]"), second.get(0).body().get("outputs"),
            "the second step sees the first one's output");

        JsonNode steps = run.get("steps");
        assertEquals(2, steps.size());
        assertEquals("succeeded", steps.get(0).get("status").asText());
        assertEquals(Json.tree("{\"ticket\":\"T-1\",\"n\":[1,2]}"), steps.get(0).get("output"));
        assertEquals(Json.tree("{\"done\":true}"), steps.get(1).get("output"));
        assertEquals(1, steps.get(0).get("attempts").size());
        assertEquals(201, steps.get(1).get("attempts").get(0).get("http_status").asInt());
        // Stored leased to the engine with its first attempt started, in the start's commit: no claim.
        assertEquals(1, engine.handedOver(), "the run went to the engine in the commit that stored it");
      });
    }
  }

  @BothDatabases
  void server_errors_are_retried_with_the_same_idempotency_key_until_success(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/flaky", Reply.status(500), Reply.status(500), Reply.json(200, "{\"ok\":true}"));
      api.test(http -> {
        workflow(http, "flaky", false, httpStep(tool.url("/flaky")));
        String runId = start(http, "flaky");
        JsonNode run = awaitStatus(http, runId, "succeeded");

        JsonNode attempts = run.get("steps").get(0).get("attempts");
        assertEquals(3, attempts.size(), run::toString);
        String[] outcomes = {"failed", "failed", "succeeded"};
        int[] statuses = {500, 500, 200};
        for (int i = 0; i < 3; i++) {
          assertEquals(i + 1, attempts.get(i).get("attempt").asInt());
          assertEquals(outcomes[i], attempts.get(i).get("outcome").asText(), attempts::toString);
          assertEquals(statuses[i], attempts.get(i).get("http_status").asInt(), attempts::toString);
          assertTrue(attempts.get(i).get("started_at").asText().matches(TIME));
          assertTrue(attempts.get(i).get("finished_at").asText().matches(TIME));
        }
        assertEquals(Json.tree("{\"ok\":true}"), run.get("steps").get(0).get("output"));
        assertTrue(run.get("error").isNull());

        List<ToolServer.Call> calls = tool.calls("/flaky");
        assertEquals(3, calls.size(), calls::toString);
        for (int i = 0; i < 3; i++) {
          assertEquals(runId + ":0", calls.get(i).idempotencyKey(), "the same key on every attempt");
          assertEquals(i + 1, calls.get(i).body().get("attempt").asInt());
        }

        List<JsonNode> finished = events(http, runId).stream()
            .filter(e -> e.get("type").asText().equals("step.attempt_finished")).toList();
        assertEquals(3, finished.size());
        for (int i = 0; i < 3; i++) {
          assertEquals(outcomes[i], finished.get(i).get("data").get("outcome").asText());
          assertEquals(statuses[i], finished.get(i).get("data").get("http_status").asInt());
          assertEquals(i + 1, finished.get(i).get("attempt").asInt());
        }
      });
    }
  }

  @BothDatabases
  void a_4xx_fails_the_step_and_the_run_at_once(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/picky", Reply.json(400, "{\"error\":\"bad input\"}"));
      api.test(http -> {
        workflow(http, "picky", false, httpStep(tool.url("/picky")), httpStep(tool.url("/never")));
        String runId = start(http, "picky");
        JsonNode run = awaitStatus(http, runId, "failed");
        assertFinished(run);
        JsonNode error = run.get("error");
        assertEquals("step_failed", error.get("code").asText(), run::toString);
        assertEquals(400, error.get("http_status").asInt(), run::toString);
        assertTrue(error.get("message").asText().contains("400"), run::toString);
        assertEquals(1, run.get("steps").get(0).get("attempts").size(), run::toString);
        assertEquals("failed", run.get("steps").get(0).get("status").asText());
        assertEquals("pending", run.get("steps").get(1).get("status").asText());
        assertEquals(1, tool.calls("/picky").size());
        assertEquals(0, tool.calls("/never").size(), "no step after the failed one runs");
        List<String> types = types(events(http, runId));
        assertEquals("run.failed", types.get(types.size() - 1), types::toString);
        assertTrue(types.contains("step.failed"), types::toString);
      });
    }
  }

  @BothDatabases
  void retries_stop_at_max_attempts_and_fail_the_run(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/down", Reply.status(503));
      api.test(http -> {
        workflow(http, "down", false, httpStep(tool.url("/down"), 5_000, 2));
        String runId = start(http, "down");
        JsonNode run = awaitStatus(http, runId, "failed");
        assertFinished(run);
        assertEquals("step_failed", run.get("error").get("code").asText(), run::toString);
        assertEquals(503, run.get("error").get("http_status").asInt(), run::toString);
        JsonNode attempts = run.get("steps").get(0).get("attempts");
        assertEquals(2, attempts.size(), run::toString);
        attempts.forEach(a -> assertEquals(503, a.get("http_status").asInt()));
        assertEquals(2, tool.calls("/down").size());
      });
    }
  }

  @BothDatabases
  void a_call_past_timeout_ms_fails_the_step(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/slow", Reply.json(200, "{}").after(Duration.ofSeconds(2)));
      api.test(http -> {
        workflow(http, "slow", false, httpStep(tool.url("/slow"), 200, 1));
        String runId = start(http, "slow");
        JsonNode run = awaitStatus(http, runId, "failed");
        assertFinished(run);
        assertTrue(millisBetween(run, "created_at", "finished_at") < 1_900,
            () -> "the call was abandoned after 200 ms, not when the tool answered: " + run);
        JsonNode error = run.get("error");
        assertEquals("step_failed", error.get("code").asText(), run::toString);
        assertTrue(error.get("http_status").isNull(), run::toString);
        assertTrue(error.get("message").asText().contains("200 ms"), () -> "names the time-out: " + error);
        JsonNode attempts = run.get("steps").get(0).get("attempts");
        assertEquals(1, attempts.size(), run::toString);
        assertEquals("failed", attempts.get(0).get("outcome").asText());
        assertTrue(attempts.get(0).get("http_status").isNull());
        assertEquals(1, tool.calls("/slow").size());
      });
    }
  }

  @BothDatabases
  void private_addresses_are_refused_with_the_default_settings(Api api) throws Exception {
    EngineSettings defaults = EngineSettings.from(api.database().open().settings());
    assertFalse(defaults.allowPrivateNetworks(), "engine.http.allow_private_networks is off by default");
    try (ToolServer tool = ToolServer.start(); var strictClient = defaults.outbound(null)) {
      HttpStepCaller strict = new HttpStepCaller(strictClient, api.services().secrets(), defaults.maxResponseBytes());
      ObjectNode body = Json.MAPPER.createObjectNode().put("run_id", "run_x");
      for (String url : List.of(tool.url("/tool"), "http://localhost:" + tool.port() + "/tool",
          "http://[::1]:" + tool.port() + "/tool", "http://10.1.2.3/tool", "http://192.168.1.1/tool",
          "http://169.254.169.254/latest/meta-data", "http://198.18.0.1/tool", "http://[64:ff9b::7f00:1]/tool")) {
        HttpStepCaller.Outcome outcome = strict.call(api.workspace, new Step.Http(url, "POST", Map.of(), 5_000, 3), body,
            "run_x:0")
            .get(10, TimeUnit.SECONDS);
        assertFalse(outcome.succeeded(), url);
        assertFalse(outcome.retryable(), () -> "a refused address is not retried: " + url);
        assertNull(outcome.httpStatus());
        assertTrue(outcome.message().contains("allow_private_networks"), outcome::message);
      }
      assertEquals(List.of(), tool.calls(), "no call reached the tool");
    }
    // The same call with the setting on reaches the tool: the refusal above is the setting's doing.
    EngineSettings open = EngineSettings.from(api.database().open().settings()
        .with("engine.http.allow_private_networks", "true"));
    try (ToolServer tool = ToolServer.start(); var openClient = open.outbound(null)) {
      HttpStepCaller.Outcome outcome = new HttpStepCaller(openClient, api.services().secrets(), open.maxResponseBytes())
          .call(api.workspace, new Step.Http(tool.url("/tool"), "POST", Map.of(), 5_000, 3),
              Json.MAPPER.createObjectNode(), "run_x:0")
          .get(10, TimeUnit.SECONDS);
      assertTrue(outcome.succeeded(), outcome::toString);
      assertEquals(1, tool.calls().size());
    }
  }

  // ---- approvals ----

  @BothDatabases
  void requires_approval_waits_then_approve_runs_it_to_succeeded(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "gated", true, httpStep(tool.url("/after")));
        String runId = start(http, "gated");
        JsonNode waiting = awaitStatus(http, runId, "awaiting_approval");
        assertEquals("pending", waiting.get("approval").get("status").asText(), waiting::toString);
        assertTrue(waiting.get("approval").get("decided_by").isNull());
        assertTrue(waiting.get("finished_at").isNull());
        assertEquals(0, tool.calls().size(), "nothing runs before the approval");

        Http.Reply approved = http.post("/v1/runs/" + runId + "/approve", "{\"comment\":\"ok\"}");
        assertEquals(200, approved.status(), approved::toString);
        assertEquals("running", approved.json().get("status").asText());

        JsonNode run = awaitStatus(http, runId, "succeeded");
        assertFinished(run);
        JsonNode approval = run.get("approval");
        assertEquals("approved", approval.get("status").asText(), run::toString);
        assertEquals(keyId(api, api.key), approval.get("decided_by").asText());
        assertTrue(approval.get("decided_by").asText().startsWith("key_"));
        assertEquals("ok", approval.get("comment").asText());
        assertTrue(approval.get("decided_at").asText().matches(TIME), run::toString);
        assertEquals(1, tool.calls("/after").size());

        assertConflict(http.post("/v1/runs/" + runId + "/approve", "{\"comment\":\"again\"}"), "succeeded");
        List<String> types = types(events(http, runId));
        assertEquals(List.of("run.started", "run.awaiting_approval", "run.approved"), types.subList(0, 3), types::toString);
        assertEquals("run.succeeded", types.get(types.size() - 1));
      });
    }
  }

  @BothDatabases
  void reject_ends_the_run_rejected_and_nothing_moves_it_after(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "gated", true, httpStep(tool.url("/after")));
        String runId = start(http, "gated");
        awaitStatus(http, runId, "awaiting_approval");

        Http.Reply rejected = http.post("/v1/runs/" + runId + "/reject", "{\"comment\":\"no way\"}");
        assertEquals(200, rejected.status(), rejected::toString);
        JsonNode run = rejected.json();
        assertEquals("rejected", run.get("status").asText());
        assertFinished(run);
        assertEquals("rejected", run.get("approval").get("status").asText());
        assertEquals(keyId(api, api.key), run.get("approval").get("decided_by").asText());
        assertEquals("no way", run.get("approval").get("comment").asText());

        assertConflict(http.post("/v1/runs/" + runId + "/reject", "{}"), "rejected");
        assertConflict(http.post("/v1/runs/" + runId + "/approve", "{}"), "rejected");
        assertConflict(http.post("/v1/runs/" + runId + "/cancel", "{}"), "rejected");
        assertEquals("rejected", run(http, runId).get("status").asText());
        assertEquals(run.get("finished_at"), run(http, runId).get("finished_at"));
        assertEquals(0, tool.calls().size());
        List<String> types = types(events(http, runId));
        assertEquals("run.rejected", types.get(types.size() - 1), types::toString);
      });
    }
  }

  @BothDatabases
  void an_approval_step_between_http_steps_pauses_the_run_there(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "middle", false, httpStep(tool.url("/one")), approval(3600), httpStep(tool.url("/three")));
        String runId = start(http, "middle");
        JsonNode waiting = awaitStatus(http, runId, "awaiting_approval");
        assertEquals("succeeded", waiting.get("steps").get(0).get("status").asText(), waiting::toString);
        assertEquals("waiting", waiting.get("steps").get(1).get("status").asText(), waiting::toString);
        assertEquals("pending", waiting.get("steps").get(2).get("status").asText(), waiting::toString);
        assertEquals("pending", waiting.get("approval").get("status").asText());
        assertEquals(1, tool.calls("/one").size());
        assertEquals(0, tool.calls("/three").size());

        assertEquals(200, http.post("/v1/runs/" + runId + "/approve", "{}").status());
        JsonNode run = awaitStatus(http, runId, "succeeded");
        assertEquals("approved", run.get("approval").get("status").asText());
        assertTrue(run.get("approval").get("comment").isNull(), run::toString);
        for (JsonNode step : run.get("steps")) {
          assertEquals("succeeded", step.get("status").asText(), run::toString);
        }
        assertEquals(1, tool.calls("/one").size(), "step 0 is not called again");
        List<ToolServer.Call> three = tool.calls("/three");
        assertEquals(1, three.size());
        assertEquals(runId + ":2", three.get(0).idempotencyKey());
        assertEquals(2, three.get(0).body().get("outputs").size());
        assertEquals(run.get("steps").get(0).get("output"), three.get(0).body().get("outputs").get(0));
      });
    }
  }

  @BothDatabases
  void an_approval_past_its_timeout_fails_the_run_approval_expired(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "hurry", false, approval(1), httpStep(tool.url("/after")));
        String runId = start(http, "hurry");
        awaitStatus(http, runId, "awaiting_approval");
        JsonNode run = awaitStatus(http, runId, "failed");
        assertFinished(run);
        assertEquals("approval_expired", run.get("error").get("code").asText(), run::toString);
        assertEquals("expired", run.get("approval").get("status").asText(), run::toString);
        assertTrue(millisBetween(run, "created_at", "finished_at") >= 1_000, run::toString);
        assertEquals(0, tool.calls().size());
        assertConflict(http.post("/v1/runs/" + runId + "/approve", "{}"), "failed");
      });
    }
  }

  /**
   * A decision that comes after the approval's time-out is too late even when no engine has looked
   * at the run since (all instances down, or between polls): the run failed at expires_at.
   */
  @BothDatabases
  void a_decision_after_the_approval_timed_out_is_refused_even_before_the_engine_noticed(Api api)
      throws Exception {
    try (ToolServer tool = ToolServer.start()) {
      api.test(http -> {
        workflow(http, "hurry", false, approval(1), httpStep(tool.url("/after")));
        String runId = start(http, "hurry");
        JsonNode waiting;
        try (Engine engine = api.database().startEngine()) {
          waiting = awaitStatus(http, runId, "awaiting_approval");
        }
        Instant expires = Instant.parse(waiting.get("approval").get("expires_at").asText());
        while (!Instant.now().isAfter(expires.plusMillis(50))) {
          Thread.sleep(20); // no engine runs now: only the clock moves
        }
        assertConflict(http.post("/v1/runs/" + runId + "/approve", "{\"comment\":\"late\"}"), "failed");
        JsonNode run = run(http, runId);
        assertEquals("failed", run.get("status").asText(), run::toString);
        assertEquals("approval_expired", run.get("error").get("code").asText(), run::toString);
        assertEquals("expired", run.get("approval").get("status").asText(), run::toString);
        assertTrue(run.get("approval").get("comment").isNull(), run::toString);
        assertConflict(http.post("/v1/runs/" + runId + "/reject", "{}"), "failed");
        assertConflict(http.post("/v1/runs/" + runId + "/cancel", "{}"), "failed");
        assertEquals(0, tool.calls().size());
      });
    }
  }

  @BothDatabases
  void approve_of_a_run_that_is_not_waiting_is_409_with_its_status(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "sleepy", false, delay(30));
        String runId = start(http, "sleepy");
        Runs.await(http, runId, "its delay started",
            r -> r.get("steps").get(0).get("status").asText().equals("waiting"));
        assertConflict(http.post("/v1/runs/" + runId + "/approve", "{}"), "running");
        assertConflict(http.post("/v1/runs/" + runId + "/reject", "{}"), "running");
        JsonNode run = run(http, runId);
        assertEquals("running", run.get("status").asText());
        assertTrue(run.get("approval").isNull(), run::toString);
        assertEquals(200, http.post("/v1/runs/" + runId + "/cancel", "{}").status());
      });
    }
  }

  // ---- cancel ----

  @BothDatabases
  void cancel_during_a_delay_ends_the_run_and_the_next_step_never_runs(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "later", false, delay(30), httpStep(tool.url("/next")));
        String runId = start(http, "later");
        JsonNode waiting = Runs.await(http, runId, "its delay started",
            r -> r.get("steps").get(0).get("status").asText().equals("waiting"));
        assertEquals("running", waiting.get("status").asText());

        Http.Reply canceled = http.post("/v1/runs/" + runId + "/cancel", "{}");
        assertEquals(200, canceled.status(), canceled::toString);
        assertEquals("canceled", canceled.json().get("status").asText());
        assertFinished(canceled.json());

        Thread.sleep(500); // give a wrongly woken engine the chance to call the next step
        JsonNode run = run(http, runId);
        assertEquals("canceled", run.get("status").asText());
        assertEquals(canceled.json().get("finished_at"), run.get("finished_at"));
        assertEquals("canceled", run.get("steps").get(0).get("status").asText(), run::toString);
        assertEquals("pending", run.get("steps").get(1).get("status").asText(), run::toString);
        assertEquals(List.of(), tool.calls(), "the step after the delay was never called");

        assertConflict(http.post("/v1/runs/" + runId + "/cancel", "{}"), "canceled");
        List<JsonNode> events = events(http, runId);
        JsonNode last = events.get(events.size() - 1);
        assertEquals("run.canceled", last.get("type").asText());
        assertEquals(keyId(api, api.key), last.get("actor").asText(), "the caller canceled it");
      });
    }
  }

  @BothDatabases
  void cancel_of_a_run_waiting_for_approval_ends_it(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "gated", true);
        String runId = start(http, "gated");
        awaitStatus(http, runId, "awaiting_approval");
        Http.Reply canceled = http.post("/v1/runs/" + runId + "/cancel", "{}");
        assertEquals(200, canceled.status(), canceled::toString);
        assertEquals("canceled", canceled.json().get("status").asText());
        assertConflict(http.post("/v1/runs/" + runId + "/approve", "{}"), "canceled");
        assertEquals("canceled", run(http, runId).get("status").asText());
      });
    }
  }

  // ---- who may do what ----

  @BothDatabases
  void approve_needs_approvals_write_and_cancel_needs_runs_write(Api api) {
    String runsWriter = api.key(Scope.RUNS_WRITE, Scope.RUNS_READ);
    String approver = api.key(Scope.APPROVALS_WRITE, Scope.RUNS_READ);
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "gated", true);
        String first = start(http, "gated");
        String second = start(http, "gated");
        awaitStatus(http, first, "awaiting_approval");
        awaitStatus(http, second, "awaiting_approval");

        JsonNode p = assertProblem(http.post("/v1/runs/" + first + "/approve", runsWriter, "{}"), 403, "insufficient_scope");
        assertTrue(p.get("detail").asText().contains("approvals:write"), p::toString);
        assertProblem(http.post("/v1/runs/" + first + "/reject", runsWriter, "{}"), 403, "insufficient_scope");
        p = assertProblem(http.post("/v1/runs/" + first + "/cancel", approver, "{}"), 403, "insufficient_scope");
        assertTrue(p.get("detail").asText().contains("runs:write"), p::toString);
        assertEquals("awaiting_approval", run(http, first).get("status").asText(), "the refused requests changed nothing");

        Http.Reply approved = http.post("/v1/runs/" + first + "/approve", approver, "{}");
        assertEquals(200, approved.status(), approved::toString);
        assertEquals(keyId(api, approver), approved.json().get("approval").get("decided_by").asText());
        Http.Reply canceled = http.post("/v1/runs/" + second + "/cancel", runsWriter, "{}");
        assertEquals(200, canceled.status(), canceled::toString);
        awaitStatus(http, first, "succeeded");
      });
    }
  }

  @BothDatabases
  void another_workspaces_run_does_not_exist(Api api) {
    String other = Api.newWorkspaceId();
    String theirKey = api.keyIn(other, null, Scope.values());
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        Http.Reply put = http.send("PUT", "/v1/workflows/gated", theirKey, "{\"requires_approval\":true}", "application/json");
        assertEquals(201, put.status(), put::toString);
        Http.Reply started = http.post("/v1/workflows/gated/runs", theirKey, "{\"project\":\"demo\"}");
        assertEquals(200, started.status(), started::toString);
        String theirs = started.json().get("id").asText();
        Runs.awaitStatus(http, theirKey, theirs, "awaiting_approval");

        assertProblem(http.get("/v1/runs/" + theirs), 404, "run_not_found");
        assertProblem(http.post("/v1/runs/" + theirs + "/approve", "{}"), 404, "run_not_found");
        assertProblem(http.post("/v1/runs/" + theirs + "/reject", "{}"), 404, "run_not_found");
        assertProblem(http.post("/v1/runs/" + theirs + "/cancel", "{}"), 404, "run_not_found");
        assertProblem(http.get("/v1/runs/" + theirs + "/events"), 404, "run_not_found");
        Http.Reply mine = http.get("/v1/events");
        assertEquals(200, mine.status());
        assertEquals(0, mine.json().get("data").size(), "their events are not in my feed: " + mine);

        Http.Reply stillTheirs = http.get("/v1/runs/" + theirs, theirKey);
        assertEquals("awaiting_approval", stillTheirs.json().get("status").asText());
        assertEquals(200, http.post("/v1/runs/" + theirs + "/cancel", theirKey, "{}").status());
      });
    }
  }

  // ---- events ----

  @BothDatabases
  void run_events_are_the_timeline_oldest_first_and_page_with_starting_after(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "one", false, httpStep(tool.url("/tool")));
        String runId = start(http, "one");
        awaitStatus(http, runId, "succeeded");

        List<JsonNode> events = events(http, runId);
        assertEquals(List.of("run.started", "step.attempt_started", "step.attempt_finished", "step.succeeded",
            "run.succeeded"), types(events));
        String keyId = keyId(api, api.key);
        Instant previous = Instant.MIN;
        Set<String> ids = new HashSet<>();
        for (JsonNode e : events) {
          assertTrue(e.get("id").asText().matches("evt_[0-9a-z]{26}"), e::toString);
          assertTrue(ids.add(e.get("id").asText()));
          assertEquals(runId, e.get("run_id").asText());
          assertEquals("one", e.get("workflow").asText());
          assertEquals("demo", e.get("project").asText());
          assertTrue(e.get("created_at").asText().matches(TIME), e::toString);
          Instant at = Instant.parse(e.get("created_at").asText());
          assertFalse(at.isBefore(previous), "oldest first");
          previous = at;
          String actor = e.get("actor").asText();
          assertTrue(actor.equals("engine") || actor.equals(keyId), e::toString);
        }
        assertEquals(keyId, events.get(0).get("actor").asText());
        JsonNode finished = events.get(2);
        assertEquals(0, finished.get("step").asInt());
        assertEquals(1, finished.get("attempt").asInt());
        assertEquals("succeeded", finished.get("data").get("outcome").asText());
        assertEquals(200, finished.get("data").get("http_status").asInt());
        assertEquals("engine", finished.get("actor").asText());

        // Pages of two: 2 + 2 + 1, each continuing right after the cursor.
        List<JsonNode> paged = new ArrayList<>();
        String cursor = null;
        for (int page = 0; page < 3; page++) {
          Http.Reply reply = http.get("/v1/runs/" + runId + "/events?limit=2"
              + (cursor == null ? "" : "&starting_after=" + cursor));
          assertEquals(200, reply.status(), reply::toString);
          JsonNode body = reply.json();
          body.get("data").forEach(paged::add);
          boolean last = page == 2;
          assertEquals(last ? 1 : 2, body.get("data").size(), reply::toString);
          assertEquals(!last, body.get("has_more").asBoolean(), reply::toString);
          if (last) {
            assertTrue(body.get("next_cursor").isNull(), reply::toString);
          } else {
            assertEquals(body.get("data").get(1).get("id").asText(), body.get("next_cursor").asText());
          }
          cursor = body.get("next_cursor").asText();
        }
        assertEquals(events, paged);
        assertProblem(http.get("/v1/runs/" + runId + "/events?limit=0"), 400, "validation_failed", "limit");
        assertProblem(http.get("/v1/runs/" + runId + "/events?starting_after=nope"), 400, "validation_failed",
            "starting_after");
      });
    }
  }

  @BothDatabases
  void workspace_events_feed_continues_from_a_cursor_without_gaps_or_duplicates(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "empty", false);
        Http.Reply empty = http.get("/v1/events");
        assertEquals(200, empty.status(), empty::toString);
        assertEquals(0, empty.json().get("data").size());

        // A poller reads pages of two as runs happen, always from the last cursor it got.
        List<JsonNode> polled = new ArrayList<>();
        List<String> runIds = new ArrayList<>();
        String cursor = null;
        for (int i = 0; i < 4; i++) {
          String runId = start(http, "empty");
          runIds.add(runId);
          awaitStatus(http, runId, "succeeded");
          while (true) {
            Http.Reply reply = http.get("/v1/events?limit=2" + (cursor == null ? "" : "&starting_after=" + cursor));
            assertEquals(200, reply.status(), reply::toString);
            JsonNode page = reply.json();
            page.get("data").forEach(polled::add);
            if (page.get("data").size() == 0) {
              assertEquals(cursor, page.get("next_cursor").asText(), "an empty page keeps the given cursor");
              break;
            }
            assertEquals(page.get("data").get(page.get("data").size() - 1).get("id").asText(),
                page.get("next_cursor").asText(), "next_cursor is the last event's id");
            cursor = page.get("next_cursor").asText();
          }
        }

        Http.Reply all = http.get("/v1/events?limit=1000");
        assertEquals(200, all.status());
        List<JsonNode> everything = new ArrayList<>();
        all.json().get("data").forEach(everything::add);
        assertEquals(8, everything.size(), all::toString);
        assertEquals(everything, polled, "the poller saw every event once, in order");
        for (int i = 0; i < 4; i++) {
          assertEquals(runIds.get(i), everything.get(2 * i).get("run_id").asText());
          assertEquals("run.started", everything.get(2 * i).get("type").asText());
          assertEquals(runIds.get(i), everything.get(2 * i + 1).get("run_id").asText());
          assertEquals("run.succeeded", everything.get(2 * i + 1).get("type").asText());
        }

        String unknown = dev.runway.core.Ids.newId("evt");
        assertProblem(http.get("/v1/events?starting_after=" + unknown), 400, "validation_failed", "starting_after");
        assertProblem(http.get("/v1/events?starting_after=run_x"), 400, "validation_failed", "starting_after");
      });
    }
  }

  /**
   * A poller must not miss an event whose transaction commits after a later event's: here a run's
   * cancel (as another instance would save it) has written its event but not committed while a new
   * run starts. Whatever the poller reads meanwhile, after the commit it must still get every event
   * exactly once, in the feed's order. PostgreSQL only: on H2 (one process) every write goes
   * through the one commit thread, so no second writer exists; the test below covers both.
   */
  @BothDatabases
  void a_poller_does_not_miss_an_event_committed_after_a_later_one(Api api) throws Exception {
    Assumptions.assumeTrue(api.database() == TestDatabase.POSTGRESQL, "H2 has no second writer");
    api.workflow("gated", true); // runs wait at the gate: no engine runs here
    api.test(http -> {
      String first = start(http, "gated");
      Http.Reply before = http.get("/v1/events");
      assertEquals(200, before.status(), before::toString);
      String start = before.json().get("next_cursor").asText();
      List<JsonNode> seen = new ArrayList<>();
      ExecutorService pool = Executors.newSingleThreadExecutor();
      Handle slow = api.jdbi().open();
      try {
        slow.begin();
        // A writer as the group commit runs it: the workspace's lock first, then the run and its events.
        WorkspaceLocks.lock(slow.getConnection(), WorkspaceLocks.key(api.workspace));
        RunDao runs = slow.attach(RunDao.class);
        WorkflowRunMachine cancel = new WorkflowRunMachine(runs.findForUpdate(api.workspace, first).orElseThrow(), Time.now());
        cancel.cancel(WorkflowRunMachine.ENGINE);
        assertEquals(1, runs.saveProgress(cancel.toRun(null, null)));
        try (Tx tx = new Tx(slow)) {
          EventDao.insert(tx, cancel.events());
          tx.flush();
        }

        Future<Http.Reply> second = pool.submit(() -> http.startRun("gated", "demo"));
        try {
          second.get(300, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
          // the start may wait for the open transaction: that is one way to keep the feed in order
        }
        String cursor = poll(http, start, seen);
        slow.commit();
        Http.Reply started = second.get(10, TimeUnit.SECONDS);
        assertEquals(200, started.status(), started::toString);
        poll(http, cursor, seen);

        Http.Reply all = http.get("/v1/events?limit=1000&starting_after=" + start);
        List<JsonNode> everything = new ArrayList<>();
        all.json().get("data").forEach(everything::add);
        String secondId = started.json().get("id").asText();
        assertEquals(Set.of(first + " run.canceled", secondId + " run.started", secondId + " run.awaiting_approval"),
            everything.stream().map(e -> e.get("run_id").asText() + " " + e.get("type").asText())
                .collect(java.util.stream.Collectors.toSet()), all::toString);
        assertEquals(everything, seen, "the poller saw every event once, in the feed's order");
      } finally {
        if (slow.isInTransaction()) {
          slow.rollback();
        }
        slow.close();
        pool.shutdownNow();
      }
    });
  }

  /** Reads /v1/events from {@code cursor} until an empty page, adding to {@code seen}; returns the last cursor. */
  /**
   * A poller that reads the feed while several callers start and cancel runs at once gets every
   * event exactly once, in the feed's order: events become visible in the order of their numbers.
   */
  @BothDatabases
  void a_poller_during_concurrent_writes_sees_every_event_once_in_order(Api api) throws Exception {
    api.workflow("gated", true); // runs wait at the gate: starts and cancels are the only writes
    api.test(http -> {
      start(http, "gated"); // the feed's cursor starts after its events
      String start = http.get("/v1/events").json().get("next_cursor").asText();
      List<JsonNode> seen = new ArrayList<>();
      ExecutorService writers = Executors.newFixedThreadPool(4);
      try {
        List<Future<?>> done = new ArrayList<>();
        for (int w = 0; w < 4; w++) {
          done.add(writers.submit(() -> {
            for (int i = 0; i < 15; i++) {
              String runId = start(http, "gated");
              Http.Reply canceled = http.post("/v1/runs/" + runId + "/cancel", "{}");
              assertEquals(200, canceled.status(), canceled::toString);
            }
            return null;
          }));
        }
        String cursor = start;
        while (!done.stream().allMatch(Future::isDone)) {
          cursor = poll(http, cursor, seen);
        }
        for (Future<?> f : done) {
          f.get();
        }
        poll(http, cursor, seen);
      } finally {
        writers.shutdownNow();
      }
      Http.Reply all = http.get("/v1/events?limit=1000&starting_after=" + start);
      List<JsonNode> everything = new ArrayList<>();
      all.json().get("data").forEach(everything::add);
      assertEquals(4 * 15 * 3, everything.size(), "started, awaiting_approval and canceled for each run");
      assertEquals(everything, seen, "the poller saw every event once, in the feed's order");
    });
  }

  private static String poll(Http http, String cursor, List<JsonNode> seen) {
    while (true) {
      Http.Reply reply = http.get("/v1/events?limit=100&starting_after=" + cursor);
      assertEquals(200, reply.status(), reply::toString);
      reply.json().get("data").forEach(seen::add);
      String next = reply.json().get("next_cursor").asText();
      if (reply.json().get("data").size() == 0) {
        return next;
      }
      cursor = next;
    }
  }

  // ---- definitions ----

  @BothDatabases
  void a_run_keeps_the_definition_it_started_with(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, "evolving", false, delay(2), httpStep(tool.url("/v1-tool")));
        String oldRun = start(http, "evolving");
        Runs.await(http, oldRun, "its delay started",
            r -> r.get("steps").get(0).get("status").asText().equals("waiting"));

        workflow(http, "evolving", true, httpStep(tool.url("/v2-tool")));
        String newRun = start(http, "evolving");
        JsonNode newRecord = awaitStatus(http, newRun, "awaiting_approval");
        assertTrue(newRecord.get("requires_approval").asBoolean());
        assertEquals(200, http.post("/v1/runs/" + newRun + "/approve", "{}").status());
        awaitStatus(http, newRun, "succeeded");

        JsonNode run = awaitStatus(http, oldRun, "succeeded");
        assertFalse(run.get("requires_approval").asBoolean());
        assertTrue(run.get("approval").isNull(), run::toString);
        assertEquals(2, run.get("steps").size(), run::toString);
        assertEquals("delay", run.get("steps").get(0).get("type").asText());
        assertTrue(millisBetween(run, "created_at", "finished_at") >= 2_000, run::toString);
        List<ToolServer.Call> v1 = tool.calls("/v1-tool");
        assertEquals(1, v1.size(), tool.calls()::toString);
        assertEquals(oldRun + ":1", v1.get(0).idempotencyKey());
        List<ToolServer.Call> v2 = tool.calls("/v2-tool");
        assertEquals(1, v2.size(), tool.calls()::toString);
        assertEquals(newRun + ":0", v2.get(0).idempotencyKey());
      });
    }
  }

  private static Set<String> fieldNames(JsonNode node) {
    Set<String> names = new HashSet<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }
}
