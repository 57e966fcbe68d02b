package dev.runway.engine;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import dev.runway.support.ToolServer;
import dev.runway.support.ToolServer.Reply;

/**
 * POST /v1/runs/{run_id}/rerun through HTTP with the engine and a local tool: from a step, the
 * steps before it keep their outputs (reused, not called again) and later steps see them; from the
 * start, everything runs again; the rerun names its run; approval is asked again and passes over the
 * reused steps; an Idempotency-Key gives one rerun; what cannot be rerun is refused naming why.
 */
class RerunTest {
  /** fetch (answers {"v": 41}), then check (sends v + 1 to a tool that fails at first), then done. */
  private static void workflow(Http http, ToolServer tool, boolean requiresApproval) {
    Http.Reply put = http.put("/v1/workflows/pipeline", "{\"requires_approval\": " + requiresApproval
        + ", \"inputs_schema\": {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}}, \"steps\": ["
        + "{\"id\": \"fetch\", \"type\": \"http\", \"url\": \"" + tool.url("/fetch") + "\"},"
        + "{\"id\": \"check\", \"type\": \"http\", \"url\": \"" + tool.url("/check") + "\", \"max_attempts\": 1,"
        + " \"body\": {\"v\": \"{{ steps.fetch.output.v + 1 }}\"}},"
        + "{\"id\": \"done\", \"type\": \"http\", \"url\": \"" + tool.url("/done") + "\"}]}");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
    tool.script("/fetch", Reply.json(200, "{\"v\": 41}"));
    tool.script("/check", Reply.json(500, "{\"error\": \"not yet\"}"));
    tool.script("/done", Reply.json(200, "{\"ok\": true}"));
  }

  /** A run of pipeline that failed at check. */
  private static String failedRun(Http http) {
    Http.Reply started = http.post("/v1/workflows/pipeline/runs", "{\"project\": \"demo\", \"inputs\": {\"n\": 1}}");
    assertEquals(200, started.status(), started::toString);
    String id = started.json().get("id").asText();
    JsonNode run = Runs.awaitStatus(http, id, "failed");
    assertEquals("check", run.get("steps").get(1).get("id").asText());
    assertEquals("failed", run.get("steps").get(1).get("status").asText());
    return id;
  }

  @BothDatabases
  void a_rerun_from_a_step_reuses_the_steps_before_it_and_runs_the_rest(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); var engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, tool, false);
        String failed = failedRun(http);
        JsonNode before = http.get("/v1/runs/" + failed).json();
        tool.script("/check", Reply.json(200, "{\"checked\": true}"));

        Http.Reply rerun = http.post("/v1/runs/" + failed + "/rerun", "{\"from_step\": \"check\"}");
        assertEquals(200, rerun.status(), rerun::toString);
        assertEquals("running", rerun.json().get("status").asText());
        assertEquals(failed, rerun.json().get("rerun_of").asText());
        String id = rerun.json().get("id").asText();
        JsonNode run = Runs.awaitStatus(http, id, "succeeded");
        JsonNode fetch = run.get("steps").get(0);
        assertTrue(fetch.get("reused").asBoolean(), fetch::toString);
        assertEquals(before.get("steps").get(0).get("output"), fetch.get("output"));
        assertEquals(before.get("steps").get(0).get("finished_at"), fetch.get("finished_at"), "as it was in that run");
        assertFalse(run.get("steps").get(1).has("reused"));
        assertEquals(Json.tree("{\"checked\": true}"), run.get("steps").get(1).get("output"));
        assertEquals(1, tool.calls("/fetch").size(), "the reused step was not called again");
        assertEquals(2, tool.calls("/check").size());
        assertEquals(Json.tree("{\"v\": 42}"), tool.calls("/check").get(1).body(), "it sees the reused output");
        assertEquals(id + ":1", tool.calls("/check").get(1).idempotencyKey(), "its own run's key");
        assertEquals(Json.tree("{\"n\": 1}"), run.get("inputs"), "the run's inputs");
        assertEquals("demo", run.get("project").asText());
        assertEquals(before, http.get("/v1/runs/" + failed).json(), "the run it reruns is as it was");
        assertNull(api.storedRun(failed).orElseThrow().get("rerun_of"));

        // From the start, with new inputs: every step runs again.
        Http.Reply over = http.post("/v1/runs/" + failed + "/rerun", "{\"inputs\": {\"n\": 2}}");
        assertEquals(200, over.status(), over::toString);
        JsonNode again = Runs.awaitStatus(http, over.json().get("id").asText(), "succeeded");
        assertEquals(Json.tree("{\"n\": 2}"), again.get("inputs"));
        assertFalse(again.get("steps").get(0).has("reused"));
        assertEquals(2, tool.calls("/fetch").size());
        assertEquals(failed, api.storedRun(again.get("id").asText()).orElseThrow().get("rerun_of"));
      });
    }
  }

  /**
   * each (a foreach over 3 items), child (a workflow step: a child run of leaf), both (a parallel of
   * two calls), then last, which fails at first.
   */
  private static String failedComposite(Http http, ToolServer tool) {
    assertEquals(201, http.put("/v1/workflows/leaf", "{\"steps\": [{\"type\": \"http\", \"url\": \""
        + tool.url("/leaf") + "\"}]}").status());
    Http.Reply put = http.put("/v1/workflows/composite", """
        {"steps": [
          {"id": "each", "type": "foreach", "items": "[1, 2, 3]",
           "steps": [{"id": "item", "type": "http", "url": "%s", "body": {"i": "{{ item }}"}}]},
          {"id": "child", "type": "workflow", "workflow": "leaf"},
          {"id": "both", "type": "parallel", "branches": [[{"type": "http", "url": "%s"}], [{"type": "http", "url": "%s"}]]},
          {"id": "last", "type": "http", "url": "%s", "max_attempts": 1}]}""".formatted(tool.url("/item"),
        tool.url("/a"), tool.url("/b"), tool.url("/last")));
    assertEquals(201, put.status(), put::toString);
    tool.script("/item", Reply.json(200, "{\"item\": true}"));
    tool.script("/leaf", Reply.json(200, "{\"leaf\": true}"));
    tool.script("/a", Reply.json(200, "{\"a\": 1}"));
    tool.script("/b", Reply.json(200, "{\"b\": 2}"));
    tool.script("/last", Reply.json(500, "{\"error\": \"not yet\"}"));
    String id = http.post("/v1/workflows/composite/runs", "{\"project\": \"demo\"}").json().get("id").asText();
    Runs.awaitStatus(http, id, "failed");
    tool.script("/last", Reply.json(200, "{\"ok\": true}"));
    return id;
  }

  @BothDatabases
  void a_rerun_from_a_foreach_a_child_run_or_a_parallel_step_reuses_what_came_before_and_runs_the_rest(Api api)
      throws Exception {
    try (ToolServer tool = ToolServer.start(); var engine = api.database().startEngine()) {
      api.test(http -> {
        String failed = failedComposite(http, tool);
        JsonNode before = http.get("/v1/runs/" + failed).json().get("steps");
        String firstChild = before.get(1).get("child_run_id").asText();

        // From the last step: the foreach, the child run and the parallel are reused as they were.
        JsonNode fromLast = Runs.awaitStatus(http, http.post("/v1/runs/" + failed + "/rerun",
            "{\"from_step\": \"last\"}").json().get("id").asText(), "succeeded").get("steps");
        for (int i = 0; i < 3; i++) {
          assertTrue(fromLast.get(i).get("reused").asBoolean(), fromLast.get(i)::toString);
          assertEquals(before.get(i).get("output"), fromLast.get(i).get("output"));
        }
        assertEquals(before.get(0).get("iterations"), fromLast.get(0).get("iterations"), "the foreach's iterations");
        assertEquals(firstChild, fromLast.get(1).get("child_run_id").asText(), "no new child run");
        assertEquals(before.get(2).get("branches"), fromLast.get(2).get("branches"));
        assertEquals(3, tool.calls("/item").size());
        assertEquals(1, tool.calls("/leaf").size());
        assertEquals(1, tool.calls("/a").size());

        // From the child run's step: the foreach is reused, a new child run runs, then the rest.
        JsonNode fromChild = Runs.awaitStatus(http, http.post("/v1/runs/" + failed + "/rerun",
            "{\"from_step\": \"child\"}").json().get("id").asText(), "succeeded").get("steps");
        assertTrue(fromChild.get(0).get("reused").asBoolean());
        assertFalse(fromChild.get(1).has("reused"));
        String newChild = fromChild.get(1).get("child_run_id").asText();
        assertFalse(newChild.equals(firstChild), "a child run of its own");
        assertEquals("succeeded", http.get("/v1/runs/" + newChild).json().get("status").asText());
        assertEquals("succeeded", fromChild.get(1).get("status").asText());
        assertEquals(3, tool.calls("/item").size(), "the foreach was not run again");
        assertEquals(2, tool.calls("/leaf").size());
        assertEquals(2, tool.calls("/a").size());

        // From the parallel step, then from the foreach: each runs again from there.
        JsonNode fromBoth = Runs.awaitStatus(http, http.post("/v1/runs/" + failed + "/rerun",
            "{\"from_step\": \"both\"}").json().get("id").asText(), "succeeded").get("steps");
        assertTrue(fromBoth.get(1).get("reused").asBoolean());
        assertFalse(fromBoth.get(2).has("reused"));
        assertEquals(3, tool.calls("/b").size());
        assertEquals(2, tool.calls("/leaf").size());
        JsonNode fromEach = Runs.awaitStatus(http, http.post("/v1/runs/" + failed + "/rerun",
            "{\"from_step\": \"each\"}").json().get("id").asText(), "succeeded").get("steps");
        assertFalse(fromEach.get(0).has("reused"));
        assertEquals(6, tool.calls("/item").size(), "the foreach ran again, each item");
        assertEquals(3, tool.calls("/leaf").size());
      });
    }
  }

  @BothDatabases
  void a_rerun_asks_for_approval_again_and_then_passes_over_the_reused_steps(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); var engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, tool, true);
        Http.Reply started = http.post("/v1/workflows/pipeline/runs", "{\"project\": \"demo\"}");
        String first = started.json().get("id").asText();
        assertEquals(200, http.post("/v1/runs/" + first + "/approve", "{}").status());
        Runs.awaitStatus(http, first, "failed");
        tool.script("/check", Reply.json(200, "{}"));
        Http.Reply rerun = http.post("/v1/runs/" + first + "/rerun", "{\"from_step\": \"check\"}");
        assertEquals(200, rerun.status(), rerun::toString);
        String id = rerun.json().get("id").asText();
        Runs.awaitStatus(http, id, "awaiting_approval");
        assertEquals(200, http.post("/v1/runs/" + id + "/approve", "{}").status());
        JsonNode run = Runs.awaitStatus(http, id, "succeeded");
        assertTrue(run.get("steps").get(0).get("reused").asBoolean());
        assertEquals(1, tool.calls("/fetch").size(), "fetch ran once, in the first run");
        assertEquals(1, tool.calls("/done").size());
      });
    }
  }

  @BothDatabases
  void an_idempotency_key_gives_one_rerun(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); var engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, tool, false);
        String failed = failedRun(http);
        Http.Reply first = http.post("/v1/runs/" + failed + "/rerun", api.key, "{\"from_step\": \"check\"}",
            "Idempotency-Key", "rerun-1");
        Http.Reply second = http.post("/v1/runs/" + failed + "/rerun", api.key, "{\"from_step\": \"check\"}",
            "Idempotency-Key", "rerun-1");
        assertEquals(200, second.status(), second::toString);
        assertEquals(first.json().get("id"), second.json().get("id"));
        assertEquals("true", second.header("Idempotent-Replayed"));
        assertEquals(1, api.countRuns("rerun_of = :a", failed));
      });
    }
  }

  @BothDatabases
  void a_bulk_rerun_reruns_the_failed_runs_of_a_workflow_from_the_start_in_one_commit(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); var engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, tool, false);
        String first = failedRun(http);
        String second = failedRun(http);
        tool.script("/fetch", Reply.json(200, "{}").after(java.time.Duration.ofSeconds(20)));
        String running = http.post("/v1/workflows/pipeline/runs", "{\"project\": \"demo\"}").json().get("id").asText();
        long until = System.nanoTime() + 20_000_000_000L;
        while (tool.calls("/fetch").size() < 3) { // the running run's call hangs before the tool answers anew
          assertTrue(System.nanoTime() < until, "the third run's call");
          Thread.sleep(10);
        }
        tool.script("/fetch", Reply.json(200, "{\"v\": 41}"));
        tool.script("/check", Reply.json(200, "{}"));

        Http.Reply bulk = http.post("/v1/runs/rerun", "{\"workflow\": \"pipeline\", \"status\": \"failed,running\"}");
        assertEquals(200, bulk.status(), bulk::toString);
        JsonNode data = bulk.json().get("data");
        assertEquals(2, data.size(), bulk::toString);
        assertEquals(second, data.get(0).get("rerun_of").asText(), "newest first");
        assertEquals(first, data.get(1).get("rerun_of").asText());
        assertEquals(Json.tree("[{\"id\": \"" + running + "\", \"code\": \"run_state_conflict\"}]"),
            bulk.json().get("skipped"));
        for (JsonNode r : data) {
          JsonNode run = Runs.awaitStatus(http, r.get("id").asText(), "succeeded");
          assertEquals(r.get("rerun_of").asText(), run.get("rerun_of").asText());
          assertFalse(run.get("steps").get(0).has("reused"), "from the start");
        }
        assertEquals(2, api.countRuns("rerun_of IS NOT NULL"));

        Http.Reply none = http.post("/v1/runs/rerun", "{\"workflow\": \"pipeline\", \"created_before\": "
            + "\"2000-01-01T00:00:00Z\"}");
        assertEquals(Json.tree("{\"data\": [], \"skipped\": []}"), none.json());
        assertProblem(http.post("/v1/runs/rerun", "{\"status\": \"failed\"}"), 400, "validation_failed", "workflow");
        assertProblem(http.post("/v1/runs/rerun", "{\"workflow\": \"pipeline\", \"limit\": 1001}"), 400,
            "validation_failed", "limit");
        assertProblem(http.post("/v1/runs/rerun", "{\"workflow\": \"pipeline\", \"status\": \"broken\"}"), 400,
            "validation_failed", "status");
        assertProblem(http.post("/v1/runs/rerun", "{\"workflow\": \"nope\"}"), 404, "workflow_not_found");
        assertEquals(200, http.post("/v1/runs/" + running + "/cancel", "{}").status());
      });
      // With one run a minute left, the newest is rerun and the other waits for a later call.
      api.testWithServices(s -> s.with("quotas.runs_per_minute_per_workspace", "1"), http -> {
        Http.Reply bulk = http.post("/v1/runs/rerun", "{\"workflow\": \"pipeline\"}");
        assertEquals(200, bulk.status(), bulk::toString);
        assertEquals(1, bulk.json().get("data").size(), bulk::toString);
        assertEquals(1, bulk.json().get("skipped").size(), bulk::toString);
        assertEquals("quota_exceeded", bulk.json().get("skipped").get(0).get("code").asText());
        assertEquals(3, api.countRuns("rerun_of IS NOT NULL"));
      });
    }
  }

  @BothDatabases
  void what_cannot_be_rerun_is_refused_naming_why(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); var engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, tool, false);
        String failed = failedRun(http);
        assertProblem(http.post("/v1/runs/" + failed + "/rerun", "{\"from_step\": \"nope\"}"), 400,
            "validation_failed", "from_step");
        assertProblem(http.post("/v1/runs/" + failed + "/rerun", "{\"from_step\": \"done\"}"), 400,
            "validation_failed", "from_step"); // check, before it, failed
        assertProblem(http.post("/v1/runs/" + failed + "/rerun", "{\"inputs\": {\"n\": \"one\"}}"), 400,
            "validation_failed", "inputs.n");
        assertProblem(http.post("/v1/runs/" + failed + "/rerun", "{\"step\": \"check\"}"), 400, "unknown_parameter",
            "step");
        assertProblem(http.post("/v1/runs/run_00000000000000000000000000/rerun", "{}"), 404, "run_not_found");
        tool.script("/fetch", Reply.json(200, "{}").after(java.time.Duration.ofSeconds(20)));
        String running = http.post("/v1/workflows/pipeline/runs", "{\"project\": \"demo\"}").json().get("id").asText();
        assertProblem(http.post("/v1/runs/" + running + "/rerun", "{}"), 409, "run_state_conflict");
        assertEquals(200, http.post("/v1/runs/" + running + "/cancel", "{}").status());

        Http.Reply agent = http.put("/v1/agents/helper", "{\"model\": \"sandbox\", \"instructions\": \"Help.\"}");
        assertTrue(agent.status() == 200 || agent.status() == 201, agent::toString);
        String agentRun = http.post("/v1/agents/helper/runs", "{\"project\": \"demo\", \"input\": \"hi\"}").json()
            .get("id").asText();
        Runs.await(http, agentRun, "ended", r -> !r.get("finished_at").isNull());
        assertProblem(http.post("/v1/runs/" + agentRun + "/rerun", "{}"), 409, "rerun_not_supported");

        assertEquals(200, http.delete("/v1/workflows/pipeline").status());
        assertProblem(http.post("/v1/runs/" + failed + "/rerun", "{}"), 404, "workflow_not_found");
        assertEquals(0, api.countRuns("rerun_of IS NOT NULL"), "nothing was started");
      });
    }
  }
}
