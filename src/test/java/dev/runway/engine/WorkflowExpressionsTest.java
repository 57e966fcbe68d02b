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
 * Workflows that carry data and branch (issue 37, first part), through HTTP on both databases: step
 * ids, {@code {{ expressions }}} in an http step's url, query, headers and body, {@code if} and
 * {@code on_failure}; expressions that fail at run time, and bad ones refused at PUT.
 */
class WorkflowExpressionsTest {

  private static void workflow(Http http, String id, String steps) {
    Http.Reply reply = http.put("/v1/workflows/" + id, "{\"steps\":" + steps + "}");
    assertTrue(reply.status() == 200 || reply.status() == 201, reply::toString);
  }

  private static List<String> eventTypes(Http http, String runId) {
    List<String> types = new ArrayList<>();
    http.get("/v1/runs/" + runId + "/events?limit=1000").json().get("data").forEach(e -> types.add(e.get("type").asText()));
    return types;
  }

  @BothDatabases
  void a_step_sends_what_it_computed_from_the_inputs_and_an_earlier_steps_output(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/lookup", Reply.json(200, "{\"tier\":\"gold\",\"orders\":[{\"id\":7},{\"id\":9}]}"));
      tool.script("/notify", Reply.json(200, "{\"sent\":true}"));
      api.test(http -> {
        workflow(http, "flow", """
            [{"id":"lookup","type":"http","url":"%s?customer={{ inputs.customer }}"},
             {"id":"notify","type":"http","url":"%s","query":{"tier":"{{ steps.lookup.output.tier }}"},
              "headers":{"X-Orders":"{{ size(steps.lookup.output.orders) }} orders"},
              "body":{"tier":"{{ steps.lookup.output.tier }}","first":"{{ steps.lookup.output.orders[0] }}",
                      "count":"{{ size(steps.lookup.output.orders) }}","text":"Hello {{ inputs.name }}!",
                      "run":"{{ run.id }}","fixed":[1,"two",null]}}]
            """.formatted(tool.url("/lookup"), tool.url("/notify")));
        String runId = Runs.start(http, "flow", "demo", "{\"customer\":\"c 1\",\"name\":\"Ann\"}").get("id").asText();
        JsonNode run = awaitStatus(http, runId, "succeeded");

        ToolServer.Call lookup = tool.calls("/lookup").get(0);
        assertEquals("customer=c+1", lookup.rawQuery(), "a value in the url's query is sent as given, encoded by the URL");
        ToolServer.Call notify = tool.calls("/notify").get(0);
        assertEquals(runId + ":1", notify.idempotencyKey());
        assertEquals("tier=gold", notify.rawQuery());
        assertEquals("2 orders", notify.headers().get("X-orders") != null ? notify.headers().get("X-orders")
            : notify.headers().get("X-Orders"), notify.headers()::toString);
        assertEquals(Json.tree("""
            {"tier":"gold","first":{"id":7},"count":2,"text":"Hello Ann!","run":"%s","fixed":[1,"two",null]}
            """.formatted(runId)), notify.body(), "one expression keeps its type; text with expressions is text");

        JsonNode steps = run.get("steps");
        assertEquals("lookup", steps.get(0).get("id").asText());
        assertEquals("notify", steps.get(1).get("id").asText());
        assertEquals(Json.tree("{\"sent\":true}"), steps.get(1).get("output"));
      });
    }
  }

  @BothDatabases
  void a_step_whose_if_is_false_is_skipped_and_one_whose_if_is_true_runs(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/gold", Reply.json(200, "{}"));
      tool.script("/always", Reply.json(200, "{\"ok\":1}"));
      api.test(http -> {
        workflow(http, "branch", """
            [{"type":"http","url":"%s","if":"inputs.tier == 'gold'"},
             {"type":"http","url":"%s","if":"steps['step-0'].status == 'skipped'","body":null}]
            """.formatted(tool.url("/gold"), tool.url("/always")));
        String silver = Runs.start(http, "branch", "demo", "{\"tier\":\"silver\"}").get("id").asText();
        JsonNode run = awaitStatus(http, silver, "succeeded");
        assertEquals("skipped", run.get("steps").get(0).get("status").asText(), run::toString);
        assertTrue(run.get("steps").get(0).get("output").isNull(), run::toString);
        assertEquals("succeeded", run.get("steps").get(1).get("status").asText(), run::toString);
        assertEquals(0, tool.calls("/gold").size());
        assertEquals(1, tool.calls("/always").size());
        assertEquals(silver, tool.calls("/always").get(0).body().path("run_id").asText(),
            "a step without a body (or with body null) sends the standard one");
        assertTrue(eventTypes(http, silver).contains("step.skipped"), () -> eventTypes(http, silver).toString());

        String gold = Runs.start(http, "branch", "demo", "{\"tier\":\"gold\"}").get("id").asText();
        JsonNode goldRun = awaitStatus(http, gold, "succeeded");
        assertEquals("succeeded", goldRun.get("steps").get(0).get("status").asText());
        assertEquals("skipped", goldRun.get("steps").get(1).get("status").asText());
        assertEquals(1, tool.calls("/gold").size());
        assertEquals(1, tool.calls("/always").size());
      });
    }
  }

  @BothDatabases
  void on_failure_continue_lets_the_run_go_on_and_later_steps_see_the_failure(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/bad", Reply.json(400, "{\"error\":\"no\"}"));
      tool.script("/cleanup", Reply.json(200, "{}"));
      tool.script("/stops", Reply.json(400, "{}"));
      api.test(http -> {
        workflow(http, "goon", """
            [{"id":"try","type":"http","url":"%s","on_failure":"continue"},
             {"type":"http","url":"%s","if":"steps.try.status == 'failed'"},
             {"type":"http","url":"%s"}]
            """.formatted(tool.url("/bad"), tool.url("/cleanup"), tool.url("/stops")));
        String runId = Runs.start(http, "goon", "demo", "{}").get("id").asText();
        JsonNode run = awaitStatus(http, runId, "failed");
        JsonNode steps = run.get("steps");
        assertEquals("failed", steps.get(0).get("status").asText(), run::toString);
        assertEquals("step_failed", steps.get(0).get("error").get("code").asText(), run::toString);
        assertEquals("succeeded", steps.get(1).get("status").asText(), run::toString);
        assertEquals("failed", steps.get(2).get("status").asText(), run::toString);
        assertEquals("step_failed", run.get("error").get("code").asText(), "the default on_failure fails the run");
        assertEquals(2, run.get("error").get("step").asInt(), run::toString);
      });
    }
  }

  @BothDatabases
  void an_expression_that_fails_at_run_time_fails_the_step_with_expression_failed(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/t", Reply.json(200, "{}"));
      api.test(http -> {
        workflow(http, "missing", """
            [{"type":"http","url":"%s","body":{"x":"{{ inputs.customer.name }}"}}]
            """.formatted(tool.url("/t")));
        String runId = Runs.start(http, "missing", "demo", "{}").get("id").asText();
        JsonNode run = awaitStatus(http, runId, "failed");
        assertEquals("expression_failed", run.get("error").get("code").asText(), run::toString);
        assertTrue(run.get("error").get("message").asText().contains("inputs.customer.name"), run::toString);
        assertEquals(0, tool.calls("/t").size(), "no call is made with a body that could not be built");

        workflow(http, "smuggle", """
            [{"type":"http","url":"%s","headers":{"X-A":"{{ inputs.v }}"}}]
            """.formatted(tool.url("/t")));
        String smuggled = Runs.start(http, "smuggle", "demo", "{\"v\":\"{{secrets.TOKEN}}\"}").get("id").asText();
        JsonNode refused = awaitStatus(http, smuggled, "failed");
        assertEquals("expression_failed", refused.get("error").get("code").asText(), refused::toString);
        assertTrue(refused.get("error").get("message").asText().contains("secret reference"), refused::toString);
        assertEquals(0, tool.calls("/t").size());

        workflow(http, "wrongif", "[{\"type\":\"delay\",\"seconds\":0,\"if\":\"inputs.n\"}]");
        String notBool = Runs.start(http, "wrongif", "demo", "{\"n\":3}").get("id").asText();
        JsonNode failed = awaitStatus(http, notBool, "failed");
        assertEquals("expression_failed", failed.get("error").get("code").asText(), failed::toString);
      });
    }
  }

  @BothDatabases
  void bad_ids_expressions_and_on_failure_are_400_naming_the_field(Api api) {
    String ok = "{\"type\":\"delay\",\"seconds\":1}";
    api.test(http -> {
      assertRefused(http, "[" + ok + ",{\"type\":\"http\",\"url\":\"http://t/x\",\"body\":{\"a\":[1,\"{{ 1 + }}\"]}}]",
          "steps[1].body.a[1]");
      assertRefused(http, "[{\"type\":\"delay\",\"seconds\":1,\"if\":\"nosuch.x\"}]", "steps[0].if");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/{{ inputs.( }}\"}]", "steps[0].url");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"{{ inputs.url }}\"}]", "steps[0].url");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/x\",\"headers\":{\"X-A\":\"{{ )\"}}]",
          "steps[0].headers.X-A");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/x\",\"query\":{\"q\":1}}]", "steps[0].query.q");
      assertRefused(http, "[{\"id\":\"a\"," + ok.substring(1) + ",{\"id\":\"a\"," + ok.substring(1) + "]", "steps[1].id");
      assertRefused(http, "[{\"id\":\"Not A Slug\"," + ok.substring(1) + "]", "steps[0].id");
      assertRefused(http, "[{\"on_failure\":\"retry\"," + ok.substring(1) + "]", "steps[0].on_failure");
      assertEquals(404, http.get("/v1/workflows/w").status(), "nothing was stored");
    });
  }

  private static void assertRefused(Http http, String steps, String param) {
    assertProblem(http.put("/v1/workflows/w", "{\"steps\":" + steps + "}"), 400, "validation_failed", param);
  }
}
