package dev.runway.engine;

import static dev.runway.support.Problems.assertProblem;
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
 * Concurrency keys through HTTP with the engine and a local tool: runs of a workflow with one key
 * wait {@code queued} while {@code limit} of them are active and start in creation order as each
 * active one ends (succeeds, fails, is canceled); a queued run canceled frees nothing;
 * {@code cancel_oldest} and {@code skip}; keys from inputs; what a definition may not say. Runs here
 * stop at their approval gate (the workflow requires approval), so each test decides when an active
 * run ends.
 */
class ConcurrencyKeysTest {
  /** A workflow whose runs wait for approval, then call the tool's /work once. */
  private static void workflow(Http http, ToolServer tool, String concurrency) {
    Http.Reply put = http.put("/v1/workflows/per-customer", "{\"requires_approval\": true, \"concurrency\": "
        + concurrency + ", \"steps\": [{\"id\": \"work\", \"type\": \"http\", \"url\": \"" + tool.url("/work")
        + "\", \"max_attempts\": 1}]}");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
  }

  /** Starts a run for {@code customer}: the answer says running, whatever becomes of the run. */
  private static String start(Http http, String customer) {
    Http.Reply started = http.post("/v1/workflows/per-customer/runs", "{\"project\": \"demo\", \"inputs\": "
        + "{\"customer\": \"" + customer + "\"}}");
    assertEquals(200, started.status(), started::toString);
    assertEquals("running", started.json().get("status").asText(), "spec rule 3");
    return started.json().get("id").asText();
  }

  private static String status(Http http, String run) {
    return http.get("/v1/runs/" + run).json().get("status").asText();
  }

  private static List<String> statuses(Http http, List<String> runs) {
    return runs.stream().map(r -> status(http, r)).toList();
  }

  private static List<String> eventTypes(Http http, String run) {
    List<String> types = new ArrayList<>();
    http.get("/v1/runs/" + run + "/events").json().get("data").forEach(e -> types.add(e.get("type").asText()));
    return types;
  }

  private static int active(Api api, String key) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COALESCE(MAX(active), 0) FROM concurrency_slot "
        + "WHERE workspace_id = :ws AND workflow_id = 'per-customer' AND concurrency_key = :key")
        .bind("ws", api.workspace).bind("key", key).mapTo(Integer.class).one());
  }

  /** What run_by_key holds for the key: each run that has not ended, with its status, oldest first. */
  private static List<String> keyed(Api api, String key) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT run_id || ' ' || status FROM run_by_key "
        + "WHERE workspace_id = :ws AND workflow_id = 'per-customer' AND concurrency_key = :key ORDER BY run_id")
        .bind("ws", api.workspace).bind("key", key).mapTo(String.class).list());
  }

  @BothDatabases
  void with_limit_1_runs_of_a_key_wait_queued_and_start_in_creation_order_as_the_active_one_ends(Api api)
      throws Exception {
    try (ToolServer tool = ToolServer.start(); var engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, tool, "{\"key\": \"{{inputs.customer}}\"}");
        String a = start(http, "acme");
        String b = start(http, "acme");
        String c = start(http, "acme");
        String d = start(http, "acme");
        String other = start(http, "globex");
        assertEquals(List.of("awaiting_approval", "queued", "queued", "queued", "awaiting_approval"),
            statuses(http, List.of(a, b, c, d, other)), "another key does not wait");
        JsonNode queued = http.get("/v1/runs/" + b).json();
        assertEquals("acme", queued.get("concurrency_key").asText());
        assertTrue(queued.get("finished_at").isNull());
        assertEquals("pending", queued.get("steps").get(0).get("status").asText());
        assertEquals(List.of("run.queued"), eventTypes(http, b));
        JsonNode listed = http.get("/v1/runs?status=queued&workflow=per-customer").json().get("data");
        assertEquals(3, listed.size(), listed::toString);
        assertEquals(d, listed.get(0).get("id").asText(), "newest first");
        assertEquals(1, active(api, "acme"));
        assertEquals(List.of(a + " awaiting_approval", b + " queued", c + " queued", d + " queued"), keyed(api, "acme"));

        // a succeeds: b (the oldest queued) starts.
        assertEquals(200, http.post("/v1/runs/" + a + "/approve", "{}").status());
        Runs.awaitStatus(http, a, "succeeded");
        Runs.awaitStatus(http, b, "awaiting_approval");
        assertEquals(List.of("queued", "queued"), statuses(http, List.of(c, d)));
        assertEquals(List.of("run.queued", "run.started", "run.awaiting_approval"), eventTypes(http, b));
        assertEquals(List.of(b + " awaiting_approval", c + " queued", d + " queued"), keyed(api, "acme"),
            "a ended: its row is gone in the commit that ended it");

        // b fails: c starts.
        tool.script("/work", Reply.json(500, "{\"error\": \"down\"}"));
        assertEquals(200, http.post("/v1/runs/" + b + "/approve", "{}").status());
        Runs.awaitStatus(http, b, "failed");
        Runs.awaitStatus(http, c, "awaiting_approval");
        assertEquals("queued", status(http, d));

        // c is canceled: d starts.
        assertEquals(200, http.post("/v1/runs/" + c + "/cancel", "{}").status());
        Runs.awaitStatus(http, d, "awaiting_approval");
        assertEquals(1, active(api, "acme"));

        // d is canceled: nothing waits, the place is given back.
        assertEquals(200, http.post("/v1/runs/" + d + "/cancel", "{}").status());
        assertEquals(0, active(api, "acme"));
        assertEquals(List.of(), keyed(api, "acme"));
        assertEquals(List.of(other + " awaiting_approval"), keyed(api, "globex"));
        assertEquals(1, active(api, "globex"));
        assertEquals(2, tool.calls("/work").size(), "a's and b's calls, one each");
      });
    }
  }

  @BothDatabases
  void with_limit_2_two_runs_of_a_key_are_active_and_the_others_start_oldest_first(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); var engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, tool, "{\"key\": \"{{inputs.customer}}\", \"limit\": 2, \"on_limit\": \"queue\"}");
        List<String> runs = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
          runs.add(start(http, "acme"));
        }
        assertEquals(List.of("awaiting_approval", "awaiting_approval", "queued", "queued", "queued"),
            statuses(http, runs));
        assertEquals(200, http.post("/v1/runs/" + runs.get(1) + "/approve", "{}").status());
        Runs.awaitStatus(http, runs.get(1), "succeeded");
        assertEquals(List.of("awaiting_approval", "succeeded", "awaiting_approval", "queued", "queued"),
            statuses(http, runs));
        assertEquals(200, http.post("/v1/runs/" + runs.get(0) + "/cancel", "{}").status());
        assertEquals(List.of("canceled", "succeeded", "awaiting_approval", "awaiting_approval", "queued"),
            statuses(http, runs));
        assertEquals(2, active(api, "acme"));
      });
    }
  }

  @BothDatabases
  void canceling_a_queued_run_frees_no_place_and_starts_nothing(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); var engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, tool, "{\"key\": \"{{inputs.customer}}\", \"limit\": 1}");
        String a = start(http, "acme");
        String b = start(http, "acme");
        String c = start(http, "acme");
        Http.Reply canceled = http.post("/v1/runs/" + b + "/cancel", "{}");
        assertEquals(200, canceled.status(), canceled::toString);
        assertEquals("canceled", canceled.json().get("status").asText());
        assertEquals("pending", canceled.json().get("steps").get(0).get("status").asText(), "it never started");
        assertEquals(List.of("awaiting_approval", "canceled", "queued"), statuses(http, List.of(a, b, c)));
        assertEquals(List.of("run.queued", "run.canceled"), eventTypes(http, b));
        assertEquals(1, active(api, "acme"));
        assertProblem(http.post("/v1/runs/" + b + "/cancel", "{}"), 409, "run_state_conflict");
        assertProblem(http.post("/v1/runs/" + c + "/approve", "{}"), 409, "run_state_conflict");

        assertEquals(200, http.post("/v1/runs/" + a + "/cancel", "{}").status());
        assertEquals(List.of("canceled", "canceled", "awaiting_approval"), statuses(http, List.of(a, b, c)));
        assertEquals(1, active(api, "acme"));
      });
    }
  }

  @BothDatabases
  void cancel_oldest_starts_the_new_run_and_cancels_the_oldest_active_one_in_its_commit(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); var engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, tool, "{\"key\": \"{{inputs.customer}}\", \"limit\": 2, \"on_limit\": \"cancel_oldest\"}");
        String a = start(http, "acme");
        String b = start(http, "acme");
        String c = start(http, "acme");
        assertEquals(List.of("canceled", "awaiting_approval", "awaiting_approval"), statuses(http, List.of(a, b, c)));
        JsonNode canceled = http.get("/v1/runs/" + a).json();
        assertTrue(canceled.get("error").isNull(), canceled::toString);
        assertEquals("canceled", canceled.get("approval").get("status").asText());
        String d = start(http, "acme");
        assertEquals(List.of("canceled", "awaiting_approval", "awaiting_approval"), statuses(http, List.of(b, c, d)));
        assertEquals(2, active(api, "acme"));
        assertEquals("awaiting_approval", status(http, start(http, "globex")), "another key cancels nothing");
      });
    }
  }

  @BothDatabases
  void skip_ends_the_new_run_at_once_canceled_while_the_start_answers_running(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); var engine = api.database().startEngine()) {
      api.test(http -> {
        workflow(http, tool, "{\"key\": \"{{inputs.customer}}\", \"on_limit\": \"skip\"}");
        String a = start(http, "acme");
        String b = start(http, "acme");
        JsonNode skipped = http.get("/v1/runs/" + b).json();
        assertEquals("canceled", skipped.get("status").asText());
        assertEquals("concurrency_skipped", skipped.get("error").get("code").asText());
        assertTrue(skipped.hasNonNull("finished_at"));
        assertEquals(List.of("run.started", "run.canceled"), eventTypes(http, b));
        assertEquals("awaiting_approval", status(http, a));
        assertEquals(1, active(api, "acme"));
        assertEquals(200, http.post("/v1/runs/" + a + "/cancel", "{}").status());
        assertEquals("awaiting_approval", status(http, start(http, "acme")), "a place is free again");
      });
    }
  }

  @BothDatabases
  void a_key_that_cannot_be_evaluated_fails_the_run_at_once(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start()) {
      api.test(http -> {
        workflow(http, tool, "{\"key\": \"{{inputs.customer}}\"}");
        Http.Reply started = http.post("/v1/workflows/per-customer/runs", "{\"project\": \"demo\"}");
        assertEquals(200, started.status(), started::toString);
        JsonNode run = Runs.awaitStatus(http, started.json().get("id").asText(), "failed");
        assertEquals("expression_failed", run.get("error").get("code").asText());
        assertTrue(run.get("error").get("message").asText().startsWith("concurrency.key: "), run::toString);
        assertTrue(run.get("concurrency_key").isNull());
        Http.Reply object = http.post("/v1/workflows/per-customer/runs", "{\"project\": \"demo\", \"inputs\": "
            + "{\"customer\": {\"id\": 1}}}");
        assertEquals("expression_failed", Runs.awaitStatus(http, object.json().get("id").asText(), "failed")
            .get("error").get("code").asText(), "an object is no key");
        String numbered = http.post("/v1/workflows/per-customer/runs", "{\"project\": \"demo\", \"inputs\": "
            + "{\"customer\": 42}}").json().get("id").asText();
        assertEquals("42", http.get("/v1/runs/" + numbered).json().get("concurrency_key").asText());
      });
    }
  }

  @BothDatabases
  void a_definition_with_a_bad_concurrency_field_is_400_naming_it(Api api) {
    api.test(http -> {
      String[][] cases = {
          {"\"one\"", "concurrency"},
          {"{}", "concurrency.key"},
          {"{\"key\": 5}", "concurrency.key"},
          {"{\"key\": \"\"}", "concurrency.key"},
          {"{\"key\": \"{{ inputs. }}\"}", "concurrency.key"},
          {"{\"key\": \"{{inputs.c}}\", \"limit\": 0}", "concurrency.limit"},
          {"{\"key\": \"{{inputs.c}}\", \"limit\": 1001}", "concurrency.limit"},
          {"{\"key\": \"{{inputs.c}}\", \"limit\": \"2\"}", "concurrency.limit"},
          {"{\"key\": \"{{inputs.c}}\", \"on_limit\": \"drop\"}", "concurrency.on_limit"},
      };
      for (String[] c : cases) {
        Http.Reply put = http.put("/v1/workflows/bad", "{\"concurrency\": " + c[0] + "}");
        assertProblem(put, 400, "validation_failed", c[1]);
      }
      assertProblem(http.put("/v1/workflows/bad", "{\"concurrency\": {\"key\": \"k\", \"group\": 1}}"), 400,
          "unknown_parameter", "concurrency.group");
      assertEquals(404, http.get("/v1/workflows/bad").status(), "nothing was stored");

      Http.Reply ok = http.put("/v1/workflows/good", "{\"concurrency\": {\"key\": \"{{inputs.c}}-{{run.project}}\"}}");
      assertEquals(201, ok.status(), ok::toString);
      assertEquals(Json.tree("{\"key\": \"{{inputs.c}}-{{run.project}}\", \"limit\": 1, \"on_limit\": \"queue\"}"),
          ok.json().get("concurrency"));
      assertTrue(http.put("/v1/workflows/plain", "{}").json().get("concurrency").isNull());
    });
  }
}
