package dev.runway.engine;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import dev.runway.support.ToolServer;
import dev.runway.support.ToolServer.Reply;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * {@code foreach} and {@code parallel} steps through HTTP on both databases: each iteration (or
 * branch) a child run that sees {@code item}, {@code index} and the outer steps, its calls keyed
 * by their path ({@code run_…:each[2].notify}), outputs in item order, concurrency, a failing
 * iteration or branch, cancel, bad definitions, and a workflow's list of runs leaving iterations out.
 */
class ForeachParallelTest {

  private static void put(Http http, String id, String body) {
    Http.Reply reply = http.put("/v1/workflows/" + id, body);
    assertTrue(reply.status() == 200 || reply.status() == 201, reply::toString);
  }

  private static JsonNode children(Http http, String parent) {
    return http.get("/v1/runs?parent_run_id=" + parent + "&limit=100").json().get("data");
  }

  @BothDatabases
  void foreach_runs_its_steps_per_item_with_item_index_and_outer_steps_in_item_order(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/lookup", Reply.json(200, "{\"name\":\"Ann\",\"orders\":[{\"id\":7},{\"id\":8},{\"id\":9}]}"));
      api.test(http -> {
        put(http, "per-order", """
            {"steps":[{"id":"lookup","type":"http","url":"%s"},
                      {"id":"each","type":"foreach","items":"steps.lookup.output.orders","concurrency":2,
                       "steps":[{"id":"notify","type":"http","url":"%s",
                                 "body":{"order":"{{ item.id }}","i":"{{ index }}","who":"{{ steps.lookup.output.name }}",
                                         "run":"{{ run.id }}","tier":"{{ inputs.tier }}"}}]}],
             "output":"{{ steps.each.output }}"}
            """.formatted(tool.url("/lookup"), tool.url("/notify")));
        String parent = Runs.start(http, "per-order", "demo", "{\"tier\":\"gold\"}").get("id").asText();
        JsonNode run = awaitStatus(http, parent, "succeeded");
        JsonNode each = run.get("steps").get(1);
        assertEquals("foreach", each.get("type").asText());
        assertEquals("succeeded", each.get("status").asText(), run::toString);
        assertEquals(3, each.get("iterations").size());
        assertEquals(3, each.get("output").size());
        assertEquals(each.get("output"), run.get("output"));

        List<ToolServer.Call> calls = tool.calls("/notify");
        assertEquals(3, calls.size());
        Set<String> keys = calls.stream().map(ToolServer.Call::idempotencyKey).collect(Collectors.toSet());
        assertEquals(Set.of(parent + ":each[0].notify", parent + ":each[1].notify", parent + ":each[2].notify"), keys);
        for (ToolServer.Call call : calls) {
          int i = call.body().get("i").asInt();
          assertEquals(Json.tree("{\"order\":" + (7 + i) + ",\"i\":" + i + ",\"who\":\"Ann\",\"run\":\"" + parent
              + "\",\"tier\":\"gold\"}"), call.body());
        }
        for (int i = 0; i < 3; i++) {
          JsonNode it = each.get("iterations").get(i);
          assertEquals(i, it.get("index").asInt());
          assertEquals("succeeded", it.get("status").asText());
          assertTrue(!it.has("output"), "the step's output holds the outputs once: " + it);
          JsonNode child = http.get("/v1/runs/" + it.get("child_run_id").asText()).json();
          assertEquals(parent, child.get("parent_run_id").asText());
          assertEquals(child.get("steps").get(0).get("output"), each.get("output").get(i), "outputs in item order");
        }
        assertEquals(3, children(http, parent).size());
      });
    }
  }

  @BothDatabases
  void foreach_over_0_and_1_items_and_1000_items_100_at_a_time(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/slow", Reply.json(200, "{\"ok\":true}").after(Duration.ofMillis(100)));
      api.test(http -> {
        put(http, "loop", """
            {"steps":[{"id":"each","type":"foreach","items":"inputs.items","concurrency":100,
                       "steps":[{"id":"call","type":"http","url":"%s","body":{"n":"{{ item }}"}}]}],
             "output":"{{ size(steps.each.output) }}"}""".formatted(tool.url("/slow")));
        JsonNode none = awaitStatus(http, Runs.start(http, "loop", "demo", "{\"items\":[]}").get("id").asText(), "succeeded");
        assertEquals(0, none.get("output").asInt());
        assertEquals(0, children(http, none.get("id").asText()).size());
        JsonNode one = awaitStatus(http, Runs.start(http, "loop", "demo", "{\"items\":[5]}").get("id").asText(), "succeeded");
        assertEquals(1, one.get("output").asInt());

        StringBuilder items = new StringBuilder("[");
        for (int i = 0; i < 1000; i++) {
          items.append(i == 0 ? "" : ",").append(i);
        }
        String big = Runs.start(http, "loop", "demo", "{\"items\":" + items + "]}").get("id").asText();
        JsonNode run = Runs.await(http, big, "succeeded within 60 s", r -> !r.get("status").asText().equals("running"),
            Duration.ofSeconds(60));
        assertEquals("succeeded", run.get("status").asText(), () -> run.toString().substring(0, 500));
        assertEquals(1000, run.get("output").asInt());
        assertTrue(tool.peakConcurrency() <= 100, "at most 100 at a time: " + tool.peakConcurrency());
        Set<String> keys = new HashSet<>();
        tool.calls("/slow").forEach(c -> keys.add(c.idempotencyKey()));
        assertEquals(1001, keys.size(), "each iteration's call once per key");
        assertEquals(1001, tool.calls("/slow").size());
        // The iterations after the first wave (which the start's commit stores) are stored leased to
        // the engine, their attempts started, in the commits of the ends that make room for them.
        assertTrue(engine.handedOver() >= 500, "iterations handed to the engine with no claim: " + engine.handedOver());
      });
    }
  }

  @BothDatabases
  void a_failing_iteration_fails_the_step_and_parallel_branches_join(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/item-2", Reply.json(400, "{\"no\":true}"));
      tool.script("/a", Reply.json(200, "{\"from\":\"a\"}"));
      tool.script("/b", Reply.json(200, "{\"from\":\"b\"}"));
      api.test(http -> {
        put(http, "fails", """
            {"steps":[{"id":"each","type":"foreach","items":"[1, 2, 3]","concurrency":1,
                       "steps":[{"id":"call","type":"http","url":"%s{{ item }}"}]}]}""".formatted(tool.url("/item-")));
        JsonNode failed = awaitStatus(http, Runs.start(http, "fails", "demo", "{}").get("id").asText(), "failed");
        assertEquals("iteration_failed", failed.get("error").get("code").asText(), failed::toString);
        JsonNode its = failed.get("steps").get(0).get("iterations");
        assertEquals("succeeded", its.get(0).get("status").asText());
        assertEquals("failed", its.get(1).get("status").asText());
        assertEquals("pending", its.get(2).get("status").asText(), "no iteration starts after a failure");
        assertEquals(0, tool.calls("/item-3").size());

        put(http, "both", """
            {"steps":[{"id":"ask","type":"parallel","branches":[[{"id":"x","type":"http","url":"%s"}],
                                                               [{"id":"y","type":"http","url":"%s"}]]}],
             "output":"{{ steps.ask.output }}"}""".formatted(tool.url("/a"), tool.url("/b")));
        String both = Runs.start(http, "both", "demo", "{}").get("id").asText();
        JsonNode joined = awaitStatus(http, both, "succeeded");
        assertEquals(Json.tree("[{\"from\":\"a\"},{\"from\":\"b\"}]"), joined.get("output"));
        assertEquals(both + ":ask[1].y", tool.calls("/b").get(0).idempotencyKey());

        put(http, "one-fails", """
            {"steps":[{"id":"ask","type":"parallel","on_failure":"continue","branches":[[{"type":"http","url":"%s"}],
                                                               [{"type":"http","url":"%s"}]]}],
             "output":"{{ steps.ask.status }}"}""".formatted(tool.url("/a"), tool.url("/item-2")));
        JsonNode goesOn = awaitStatus(http, Runs.start(http, "one-fails", "demo", "{}").get("id").asText(), "succeeded");
        assertEquals("failed", goesOn.get("output").asText(), goesOn::toString);
      });
    }
  }

  @BothDatabases
  void canceling_a_run_cancels_its_iterations(Api api) {
    api.test(http -> {
      put(http, "gated", "{\"steps\":[{\"id\":\"each\",\"type\":\"foreach\",\"items\":\"[1, 2]\","
          + "\"steps\":[{\"type\":\"approval\"}]}]}");
      String parent = Runs.start(http, "gated", "demo", "{}").get("id").asText();
      JsonNode run = http.get("/v1/runs/" + parent).json();
      assertEquals("waiting", run.get("steps").get(0).get("status").asText(), run::toString);
      assertEquals(200, http.post("/v1/runs/" + parent + "/cancel", "{}").status());
      for (JsonNode child : children(http, parent)) {
        assertEquals("canceled", child.get("status").asText(), child::toString);
      }
      assertEquals(2, children(http, parent).size());
    });
  }

  @BothDatabases
  void bad_foreach_and_parallel_steps_are_400_naming_the_nested_field(Api api) {
    api.test(http -> {
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"foreach\",\"steps\":[]}]}"), 400,
          "validation_failed", "steps[0].items");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"foreach\",\"items\":\"[1]\"}]}"), 400,
          "validation_failed", "steps[0].steps");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"foreach\",\"items\":\"[1\",\"steps\":[]}]}"),
          400, "validation_failed", "steps[0].items");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"foreach\",\"items\":\"[1]\",\"concurrency\":101,"
          + "\"steps\":[]}]}"), 400, "validation_failed", "steps[0].concurrency");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"foreach\",\"items\":\"[1]\","
          + "\"steps\":[{\"type\":\"http\",\"url\":\"ftp://x\"}]}]}"), 400, "validation_failed", "steps[0].steps[0].url");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"parallel\",\"branches\":[[]]}]}"), 400,
          "validation_failed", "steps[0].branches");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"parallel\",\"branches\":[[],"
          + "[{\"type\":\"delay\"}]]}]}"), 400, "validation_failed", "steps[0].branches[1][0].seconds");
      String nested = "{\"type\":\"delay\",\"seconds\":1}";
      for (int i = 0; i < 5; i++) {
        nested = "{\"type\":\"foreach\",\"items\":\"[1]\",\"steps\":[" + nested + "]}";
      }
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[" + nested + "]}"), 400, "validation_failed",
          "steps[0].steps[0].steps[0].steps[0].steps[0].type");
      assertEquals(404, http.get("/v1/workflows/bad").status());
    });
  }

  private static List<String> ids(JsonNode page) {
    List<String> ids = new java.util.ArrayList<>();
    page.get("data").forEach(r -> ids.add(r.get("id").asText()));
    return ids;
  }

  @BothDatabases
  void a_workflows_runs_leave_out_its_iterations_which_its_run_lists(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        put(http, "inner", "{}");
        put(http, "fan", """
            {"steps":[{"id":"each","type":"foreach","items":"[1, 2, 3]",
                       "steps":[{"id":"call","type":"workflow","workflow":"inner"}]}]}""");
        put(http, "caller", "{\"steps\":[{\"id\":\"fan\",\"type\":\"workflow\",\"workflow\":\"fan\"}]}");
        String top = Runs.start(http, "fan", "demo", "{}").get("id").asText();
        awaitStatus(http, top, "succeeded");
        JsonNode caller = awaitStatus(http, Runs.start(http, "caller", "demo", "{}").get("id").asText(), "succeeded");
        String called = caller.get("steps").get(0).get("child_run_id").asText();
        assertEquals(8, api.countRuns("workflow_id = 'fan'"), "2 runs of fan and their 6 iterations are stored");

        // The runs started (by the API or by another workflow's step), not the iterations, newest first.
        assertEquals(List.of(called, top), ids(http.get("/v1/runs?workflow=fan").json()));
        JsonNode first = http.get("/v1/runs?workflow=fan&limit=1").json();
        assertEquals(List.of(called), ids(first));
        assertTrue(first.get("has_more").asBoolean(), first::toString);
        assertEquals(List.of(top), ids(http.get("/v1/runs?workflow=fan&limit=1&starting_after=" + called).json()));
        // A run of inner started by an iteration's step is a run of inner as any other.
        assertEquals(6, ids(http.get("/v1/runs?workflow=inner&limit=100").json()).size());

        // The iterations are reached from their run, with or without the workflow named.
        List<String> iterations = ids(http.get("/v1/runs?parent_run_id=" + top).json());
        assertEquals(3, iterations.size());
        for (String iteration : iterations) {
          JsonNode run = http.get("/v1/runs/" + iteration).json();
          assertEquals("fan", run.get("workflow").asText());
          assertEquals(top, run.get("parent_run_id").asText());
        }
        assertEquals(iterations, ids(http.get("/v1/runs?workflow=fan&parent_run_id=" + top).json()));
        // Paged: the children after a cursor, newest first, the cursor's own run left out.
        JsonNode page = http.get("/v1/runs?parent_run_id=" + top + "&limit=2").json();
        assertEquals(iterations.subList(0, 2), ids(page));
        assertTrue(page.get("has_more").asBoolean(), page::toString);
        JsonNode rest = http.get("/v1/runs?parent_run_id=" + top + "&limit=2&starting_after=" + iterations.get(1)).json();
        assertEquals(iterations.subList(2, 3), ids(rest));
        assertFalse(rest.get("has_more").asBoolean(), rest::toString);
        assertEquals(iterations.subList(1, 3), ids(http.get("/v1/runs?parent_run_id=" + top + "&status=succeeded"
            + "&starting_after=" + iterations.get(0)).json()));
        assertEquals(List.of(called), ids(http.get("/v1/runs?parent_run_id=" + caller.get("id").asText()
            + "&workflow=fan").json()));
        // Without a workflow the list holds every run.
        assertEquals(15, ids(http.get("/v1/runs?limit=100").json()).size());
      });
    }
  }
}
