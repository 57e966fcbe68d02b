package dev.runway.engine;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import dev.runway.support.ToolServer;
import dev.runway.support.ToolServer.Reply;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code workflow} step, through HTTP on both databases: a child run of another workflow
 * ({@code parent_run_id}) started in the parent step's commit, its output passed on, its failure,
 * approval and cancel reflected in the parent, a missing child workflow, cycles refused at PUT and
 * chains stopped at depth 5.
 */
class ChildWorkflowRunsTest {

  private static void put(Http http, String id, String body) {
    Http.Reply reply = http.put("/v1/workflows/" + id, body);
    assertTrue(reply.status() == 200 || reply.status() == 201, reply::toString);
  }

  private static JsonNode children(Http http, String parent) {
    return http.get("/v1/runs?parent_run_id=" + parent).json().get("data");
  }

  private static List<String> eventTypes(Http http, String runId) {
    List<String> types = new ArrayList<>();
    http.get("/v1/runs/" + runId + "/events?limit=1000").json().get("data").forEach(e -> types.add(e.get("type").asText()));
    return types;
  }

  @BothDatabases
  void a_child_run_gets_its_inputs_from_the_parent_and_passes_its_output_on(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/lookup", Reply.json(200, "{\"tier\":\"gold\"}"));
      tool.script("/score", Reply.json(200, "{\"score\":42}"));
      api.test(http -> {
        put(http, "score", """
            {"inputs_schema":{"type":"object","required":["tier"]},
             "steps":[{"id":"s","type":"http","url":"%s","body":{"tier":"{{ inputs.tier }}"}}],
             "output":{"score":"{{ steps.s.output.score }}","tier":"{{ inputs.tier }}"}}
            """.formatted(tool.url("/score")));
        put(http, "main", """
            {"steps":[{"id":"lookup","type":"http","url":"%s"},
                      {"id":"child","type":"workflow","workflow":"score","inputs":{"tier":"{{ steps.lookup.output.tier }}"}},
                      {"id":"after","type":"http","url":"%s","body":{"got":"{{ steps.child.output.score }}"}}],
             "output":"{{ steps.child.output }}"}
            """.formatted(tool.url("/lookup"), tool.url("/lookup")));
        String parent = Runs.start(http, "main", "ops", "{}").get("id").asText();
        JsonNode run = awaitStatus(http, parent, "succeeded");
        JsonNode step = run.get("steps").get(1);
        assertEquals("workflow", step.get("type").asText());
        assertEquals("succeeded", step.get("status").asText(), run::toString);
        String childId = step.get("child_run_id").asText();
        assertEquals(Json.tree("{\"score\":42,\"tier\":\"gold\"}"), step.get("output"));
        assertEquals(Json.tree("{\"score\":42,\"tier\":\"gold\"}"), run.get("output"));
        assertEquals(Json.tree("{\"got\":42}"), tool.calls("/lookup").get(1).body());

        JsonNode child = http.get("/v1/runs/" + childId).json();
        assertEquals("succeeded", child.get("status").asText());
        assertEquals("score", child.get("workflow").asText());
        assertEquals(parent, child.get("parent_run_id").asText());
        assertEquals("ops", child.get("project").asText(), "a child runs in its parent's project");
        assertEquals(Json.tree("{\"tier\":\"gold\"}"), child.get("inputs"));
        assertTrue(run.get("parent_run_id").isNull());
        assertEquals(childId + ":0", tool.calls("/score").get(0).idempotencyKey());
        JsonNode listed = children(http, parent);
        assertEquals(1, listed.size(), listed::toString);
        assertEquals(childId, listed.get(0).get("id").asText());
        assertEquals(parent, api.storedRun(childId).orElseThrow().get("parent_run_id"));
        assertTrue(eventTypes(http, parent).contains("step.waiting"));
      });
    }
  }

  @BothDatabases
  void a_failed_child_fails_the_step_and_on_failure_continue_goes_on(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/bad", Reply.json(400, "{}"));
      api.test(http -> {
        put(http, "fails", "{\"steps\":[{\"type\":\"http\",\"url\":\"" + tool.url("/bad") + "\"}]}");
        put(http, "strict", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"fails\"}]}");
        put(http, "lenient", """
            {"steps":[{"id":"c","type":"workflow","workflow":"fails","on_failure":"continue"}],
             "output":"{{ steps.c.status }}"}""");
        String strict = Runs.start(http, "strict", "demo", "{}").get("id").asText();
        JsonNode run = awaitStatus(http, strict, "failed");
        assertEquals("child_failed", run.get("error").get("code").asText(), run::toString);
        assertEquals("child_failed", run.get("steps").get(0).get("error").get("code").asText());
        assertTrue(run.get("error").get("message").asText().contains("step_failed"), run::toString);
        String childId = run.get("steps").get(0).get("child_run_id").asText();
        assertEquals("failed", http.get("/v1/runs/" + childId).json().get("status").asText());

        String lenient = Runs.start(http, "lenient", "demo", "{}").get("id").asText();
        JsonNode goesOn = awaitStatus(http, lenient, "succeeded");
        assertEquals("failed", goesOn.get("output").asText(), goesOn::toString);
      });
    }
  }

  /**
   * A child run whose stored state cannot be read fails with internal_error when the engine takes it
   * up (see EngineIsolationTest), and its parent's step fails with it, instead of waiting for ever.
   */
  @BothDatabases
  void a_child_that_cannot_be_read_fails_and_so_does_its_parents_step(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start()) {
      api.test(http -> {
        put(http, "leaf", "{\"steps\":[{\"type\":\"http\",\"url\":\"" + tool.url("/leaf") + "\"}]}");
        put(http, "top", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"leaf\"}]}");
        String parent = Runs.start(http, "top", "demo", "{}").get("id").asText();
        String childId = http.get("/v1/runs/" + parent).json().get("steps").get(0).get("child_run_id").asText();
        api.jdbi().useHandle(h -> h.execute("UPDATE run SET steps = 'not json' WHERE id = ?", childId));
        try (Engine engine = api.database().startEngine()) {
          JsonNode run = awaitStatus(http, parent, "failed");
          assertEquals("child_failed", run.get("error").get("code").asText(), run::toString);
          assertTrue(run.get("error").get("message").asText().contains("internal_error"), run::toString);
          JsonNode child = http.get("/v1/runs/" + childId).json();
          assertEquals("failed", child.get("status").asText(), child::toString);
          assertEquals("internal_error", child.get("error").get("code").asText());
          assertEquals(0, tool.calls("/leaf").size());
          assertEquals("failed", api.storedRun(parent).orElseThrow().get("status"));
        }
      });
    }
  }

  @BothDatabases
  void a_child_waiting_for_approval_shows_in_the_parent_and_approving_it_moves_both_on(Api api) {
    try (Engine engine = api.database().startEngine()) {
      childApproval(api);
    }
  }

  private static void childApproval(Api api) {
    api.test(http -> {
      put(http, "gated", "{\"requires_approval\":true,\"output\":\"{{ inputs.n * 2 }}\"}");
      put(http, "outer", "{\"steps\":[{\"id\":\"g\",\"type\":\"workflow\",\"workflow\":\"gated\",\"inputs\":{\"n\":21}}],"
          + "\"output\":\"{{ steps.g.output }}\"}");
      JsonNode started = Runs.start(http, "outer", "demo", "{}");
      String parent = started.get("id").asText();
      JsonNode run = http.get("/v1/runs/" + parent).json();
      assertEquals("running", run.get("status").asText());
      assertEquals("waiting", run.get("steps").get(0).get("status").asText(), run::toString);
      String child = run.get("steps").get(0).get("child_run_id").asText();
      assertEquals("awaiting_approval", http.get("/v1/runs/" + child).json().get("status").asText());

      Http.Reply approved = http.post("/v1/runs/" + child + "/approve", "{}");
      assertEquals(200, approved.status(), approved::toString);
      JsonNode done = awaitStatus(http, parent, "succeeded");
      assertEquals(42, done.get("output").asInt(), done::toString);
      assertEquals("succeeded", done.get("steps").get(0).get("status").asText());
    });
  }

  @BothDatabases
  void canceling_a_parent_cancels_its_children_and_theirs(Api api) {
    api.test(http -> {
      put(http, "leaf", "{\"requires_approval\":true}");
      put(http, "middle", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"leaf\"}]}");
      put(http, "top", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"middle\"}]}");
      String top = Runs.start(http, "top", "demo", "{}").get("id").asText();
      String middle = http.get("/v1/runs/" + top).json().get("steps").get(0).get("child_run_id").asText();
      String leaf = http.get("/v1/runs/" + middle).json().get("steps").get(0).get("child_run_id").asText();
      assertEquals("waiting", http.get("/v1/runs/" + top).json().get("steps").get(0).get("status").asText(),
          "a grandchild's approval shows up the chain");
      Http.Reply canceled = http.post("/v1/runs/" + top + "/cancel", "{}");
      assertEquals(200, canceled.status(), canceled::toString);
      assertEquals("canceled", canceled.json().get("status").asText());
      assertEquals("canceled", http.get("/v1/runs/" + middle).json().get("status").asText());
      assertEquals("canceled", http.get("/v1/runs/" + leaf).json().get("status").asText());
      assertEquals("canceled", api.storedRun(leaf).orElseThrow().get("status"));
      assertEquals("canceled", http.get("/v1/runs/" + top).json().get("steps").get(0).get("status").asText());

      // A child canceled on its own fails its parent's step.
      String again = Runs.start(http, "middle", "demo", "{}").get("id").asText();
      String itsLeaf = http.get("/v1/runs/" + again).json().get("steps").get(0).get("child_run_id").asText();
      assertEquals(200, http.post("/v1/runs/" + itsLeaf + "/cancel", "{}").status());
      JsonNode parent = http.get("/v1/runs/" + again).json();
      assertEquals("failed", parent.get("status").asText(), parent::toString);
      assertEquals("child_failed", parent.get("error").get("code").asText());
    });
  }

  @BothDatabases
  void a_run_and_its_grandchild_canceled_at_once_all_end_without_an_error(Api api) {
    api.test(http -> {
      put(http, "leaf", "{\"requires_approval\":true}");
      put(http, "middle", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"leaf\"}]}");
      put(http, "top", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"middle\"}]}");
      java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
      try {
        for (int round = 0; round < 20; round++) {
          String top = Runs.start(http, "top", "demo", "{}").get("id").asText();
          String middle = http.get("/v1/runs/" + top).json().get("steps").get(0).get("child_run_id").asText();
          String leaf = http.get("/v1/runs/" + middle).json().get("steps").get(0).get("child_run_id").asText();
          java.util.concurrent.Future<Http.Reply> a = pool.submit(() -> http.post("/v1/runs/" + top + "/cancel", "{}"));
          java.util.concurrent.Future<Http.Reply> b = pool.submit(() -> http.post("/v1/runs/" + leaf + "/cancel", "{}"));
          for (Http.Reply reply : List.of(a.get(), b.get())) {
            assertTrue(reply.status() == 200 || reply.status() == 409, reply::toString);
          }
          // Whichever commit came first decides: the leaf's cancel fails the middle and the top (child_failed),
          // the top's cancel cancels all three. Either way all three ended, and nothing answered 5xx.
          assertEquals("canceled", http.get("/v1/runs/" + leaf).json().get("status").asText());
          for (String run : List.of(top, middle)) {
            String status = http.get("/v1/runs/" + run).json().get("status").asText();
            assertTrue(status.equals("canceled") || status.equals("failed"), run + " " + status);
          }
        }
      } catch (Exception e) {
        throw new AssertionError(e);
      } finally {
        pool.shutdownNow();
      }
    });
  }

  @BothDatabases
  void a_missing_or_archived_child_workflow_fails_the_step_with_workflow_not_found(Api api) {
    api.test(http -> {
      put(http, "calls-ghost", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"ghost\"}]}");
      JsonNode run = awaitStatus(http, Runs.start(http, "calls-ghost", "demo", "{}").get("id").asText(), "failed");
      assertEquals("workflow_not_found", run.get("error").get("code").asText(), run::toString);
      assertEquals("workflow_not_found", run.get("steps").get(0).get("error").get("code").asText());
      assertEquals(0, children(http, run.get("id").asText()).size());

      put(http, "ghost", "{}");
      JsonNode ok = awaitStatus(http, Runs.start(http, "calls-ghost", "demo", "{}").get("id").asText(), "succeeded");
      assertEquals(1, children(http, ok.get("id").asText()).size());
      assertEquals(200, http.delete("/v1/workflows/ghost").status());
      JsonNode archived = awaitStatus(http, Runs.start(http, "calls-ghost", "demo", "{}").get("id").asText(), "failed");
      assertEquals("workflow_not_found", archived.get("error").get("code").asText());
    });
  }

  @BothDatabases
  void a_child_whose_inputs_break_its_schema_fails_and_so_does_the_step(Api api) {
    api.test(http -> {
      put(http, "strict-inputs", "{\"inputs_schema\":{\"type\":\"object\",\"required\":[\"email\"]}}");
      put(http, "sends-nothing", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"strict-inputs\"}]}");
      JsonNode run = awaitStatus(http, Runs.start(http, "sends-nothing", "demo", "{}").get("id").asText(), "failed");
      String child = run.get("steps").get(0).get("child_run_id").asText();
      JsonNode childRun = http.get("/v1/runs/" + child).json();
      assertEquals("inputs_invalid", childRun.get("error").get("code").asText(), childRun::toString);
      assertEquals("inputs.email", childRun.get("error").get("field").asText());
      assertEquals("child_failed", run.get("error").get("code").asText());
    });
  }

  @BothDatabases
  void a_workflow_that_would_call_itself_is_refused_and_a_long_chain_stops_at_depth_5(Api api) {
    api.test(http -> {
      assertProblem(http.put("/v1/workflows/self", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"self\"}]}"),
          400, "validation_failed", "steps[0].workflow");
      put(http, "a", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"b\"}]}");
      put(http, "b", "{\"steps\":[{\"type\":\"delay\",\"seconds\":0},{\"type\":\"workflow\",\"workflow\":\"c\"}]}");
      Http.Reply cycle = http.put("/v1/workflows/c", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"a\"}]}");
      assertProblem(cycle, 400, "validation_failed", "steps[0].workflow");
      assertTrue(cycle.json().get("detail").asText().contains("c → a → b → c"), cycle::toString);
      assertEquals(404, http.get("/v1/workflows/c").status());

      for (int i = 1; i <= 6; i++) {
        put(http, "chain" + i, i == 6 ? "{}" : "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"chain" + (i + 1) + "\"}]}");
      }
      JsonNode top = awaitStatus(http, Runs.start(http, "chain1", "demo", "{}").get("id").asText(), "failed");
      String id = top.get("id").asText();
      for (int depth = 1; depth < 5; depth++) {
        id = http.get("/v1/runs/" + id).json().get("steps").get(0).get("child_run_id").asText();
      }
      JsonNode fifth = http.get("/v1/runs/" + id).json();
      assertEquals("chain5", fifth.get("workflow").asText());
      assertEquals("max_depth_exceeded", fifth.get("error").get("code").asText(), fifth::toString);
      assertEquals(0, children(http, id).size(), "no sixth run was started");
      assertEquals("child_failed", top.get("error").get("code").asText());
    });
  }

  @BothDatabases
  void bad_workflow_steps_are_400_naming_the_field(Api api) {
    api.test(http -> {
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"workflow\"}]}"), 400, "validation_failed",
          "steps[0].workflow");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"Not A Slug\"}]}"),
          400, "validation_failed", "steps[0].workflow");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"x\",\"inputs\":7}]}"),
          400, "validation_failed", "steps[0].inputs");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"x\","
          + "\"inputs\":{\"a\":\"{{ 1 + }}\"}}]}"), 400, "validation_failed", "steps[0].inputs.a");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"x\",\"url\":\"y\"}]}"),
          400, "unknown_parameter", "steps[0].url");
    });
  }
}
