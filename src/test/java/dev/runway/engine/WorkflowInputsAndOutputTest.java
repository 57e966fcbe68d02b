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

/**
 * A workflow's {@code inputs_schema} (a start whose inputs break it is a 400 naming the field) and
 * {@code output} (JSON with expressions, made when the run succeeds), through HTTP on both
 * databases, with what is stored.
 */
class WorkflowInputsAndOutputTest {
  private static final String SCHEMA = """
      {"type":"object","required":["email"],
       "properties":{"email":{"type":"string","minLength":3},
                     "customer":{"type":"object","properties":{"age":{"type":"integer"}}}}}""";

  private static Http.Reply put(Http http, String id, String body) {
    return http.put("/v1/workflows/" + id, body);
  }

  @BothDatabases
  void inputs_that_break_the_schema_are_400_naming_the_field_and_start_nothing(Api api) {
    api.test(http -> {
      Http.Reply created = put(http, "signup", "{\"inputs_schema\":" + SCHEMA + "}");
      assertEquals(201, created.status(), created::toString);
      assertEquals(Json.tree(SCHEMA), created.json().get("inputs_schema"));
      assertTrue(created.json().get("output").isNull(), created::toString);
      assertEquals(Json.tree(SCHEMA), http.get("/v1/workflows/signup").json().get("inputs_schema"));

      assertProblem(Runs.startReply(http, "signup", "demo", "{}"), 400, "validation_failed", "inputs.email");
      assertProblem(Runs.startReply(http, "signup", "demo", "{\"email\":7}"), 400, "validation_failed", "inputs.email");
      assertProblem(Runs.startReply(http, "signup", "demo", "{\"email\":\"a@b\",\"customer\":{\"age\":\"old\"}}"),
          400, "validation_failed", "inputs.customer.age");
      Http.Reply noInputs = http.post("/v1/workflows/signup/runs", "{\"project\":\"demo\"}");
      assertProblem(noInputs, 400, "validation_failed", "inputs.email");
      assertTrue(noInputs.json().get("detail").asText().contains("inputs.email"), noInputs::toString);
      assertEquals(0, api.countRuns(""), "a refused start stores nothing");

      JsonNode run = Runs.start(http, "signup", "demo", "{\"email\":\"ann@example.com\",\"customer\":{\"age\":40}}");
      assertEquals("succeeded", awaitStatus(http, run.get("id").asText(), "succeeded").get("status").asText());
      assertEquals(1, api.countRuns(""));
    });
  }

  @BothDatabases
  void the_output_is_made_from_the_steps_and_inputs_when_the_run_succeeds(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/lookup", Reply.json(200, "{\"tier\":\"gold\",\"orders\":[{\"id\":7},{\"id\":9}]}"));
      api.test(http -> {
        Http.Reply put = put(http, "tiers", """
            {"steps":[{"id":"lookup","type":"http","url":"%s"}],
             "output":{"tier":"{{ steps.lookup.output.tier }}","orders":"{{ size(steps.lookup.output.orders) }}",
                       "for":"{{ inputs.name }}","fixed":[1,null]}}
            """.formatted(tool.url("/lookup")));
        assertEquals(201, put.status(), put::toString);
        assertEquals("{{ steps.lookup.output.tier }}", put.json().get("output").get("tier").asText());

        JsonNode started = Runs.start(http, "tiers", "demo", "{\"name\":\"Ann\"}");
        assertTrue(started.get("output").isNull(), "a running run has no output yet: " + started);
        String id = started.get("id").asText();
        JsonNode run = awaitStatus(http, id, "succeeded");
        JsonNode expected = Json.tree("{\"tier\":\"gold\",\"orders\":2,\"for\":\"Ann\",\"fixed\":[1,null]}");
        assertEquals(expected, run.get("output"), run::toString);
        assertEquals(expected, Json.tree((String) api.storedRun(id).orElseThrow().get("output")));
        assertEquals(expected, http.get("/v1/runs?workflow=tiers").json().get("data").get(0).get("output"));
      });
    }
  }

  @BothDatabases
  void a_run_without_steps_has_its_output_at_once_and_a_workflow_without_output_none(Api api) {
    api.test(http -> {
      assertEquals(201, put(http, "sum", "{\"output\":\"{{ inputs.a + 1 }}\"}").status());
      String id = Runs.start(http, "sum", "demo", "{\"a\":41}").get("id").asText();
      assertEquals(42, awaitStatus(http, id, "succeeded").get("output").asInt());

      assertEquals(201, put(http, "plain", "{}").status());
      String plain = Runs.start(http, "plain", "demo", "{}").get("id").asText();
      assertTrue(awaitStatus(http, plain, "succeeded").get("output").isNull());
      assertEquals(null, api.storedRun(plain).orElseThrow().get("output"));
    });
  }

  @BothDatabases
  void an_output_that_fails_to_evaluate_fails_the_run_with_expression_failed(Api api) {
    api.test(http -> {
      assertEquals(201, put(http, "missing", "{\"output\":{\"x\":\"{{ inputs.nothing.here }}\"}}").status());
      String id = Runs.start(http, "missing", "demo", "{}").get("id").asText();
      JsonNode run = awaitStatus(http, id, "failed");
      assertEquals("expression_failed", run.get("error").get("code").asText(), run::toString);
      assertTrue(run.get("error").get("message").asText().startsWith("output"), run::toString);
      assertTrue(run.get("output").isNull(), run::toString);
    });
  }

  @BothDatabases
  void an_output_that_would_take_the_run_past_512_kb_fails_it_with_output_too_large(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/pad", Reply.json(200, "{\"pad\":\"" + "p".repeat(60_000) + "\"}"));
      api.test(http -> {
        String step = "{\"type\":\"http\",\"url\":\"" + tool.url("/pad") + "\"}";
        // Six outputs of 60 KB are 360 KB of steps; the output repeats four (240 KB, within an expression's
        // bound): 600 KB in all.
        assertEquals(201, put(http, "huge", "{\"steps\":[" + String.join(",", java.util.Collections.nCopies(6, step))
            + "],\"output\":\"{{ [steps['step-0'].output, steps['step-1'].output, steps['step-2'].output, "
            + "steps['step-3'].output] }}\"}").status());
        String id = Runs.start(http, "huge", "demo", "{}").get("id").asText();
        JsonNode run = awaitStatus(http, id, "failed");
        assertEquals("output_too_large", run.get("error").get("code").asText(), () -> run.get("error").toString());
        assertTrue(run.get("output").isNull());
        assertEquals(6, tool.calls("/pad").size());
      });
    }
  }

  @BothDatabases
  void a_child_output_that_would_take_the_parent_past_512_kb_fails_the_step_with_output_too_large(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/pad", Reply.json(200, "{\"pad\":\"" + "p".repeat(60_000) + "\"}"));
      api.test(http -> {
        String step = "{\"type\":\"http\",\"url\":\"" + tool.url("/pad") + "\"}";
        // The child: 240 KB of steps and an output of 240 KB. The parent: 360 KB of steps, then the child.
        assertEquals(201, put(http, "big", "{\"steps\":[" + String.join(",", java.util.Collections.nCopies(4, step))
            + "],\"output\":\"{{ [steps['step-0'].output, steps['step-1'].output, steps['step-2'].output, "
            + "steps['step-3'].output] }}\"}").status());
        assertEquals(201, put(http, "holds-big", "{\"steps\":[" + String.join(",", java.util.Collections.nCopies(6, step))
            + ",{\"id\":\"child\",\"type\":\"workflow\",\"workflow\":\"big\"}]}").status());
        String id = Runs.start(http, "holds-big", "demo", "{}").get("id").asText();
        JsonNode run = awaitStatus(http, id, "failed");
        JsonNode child = run.get("steps").get(6);
        assertEquals("output_too_large", child.get("error").get("code").asText(), () -> child.toString().substring(0, 300));
        assertEquals("output_too_large", run.get("error").get("code").asText());
        assertEquals("succeeded", http.get("/v1/runs/" + child.get("child_run_id").asText()).json().get("status").asText());
      });
    }
  }

  @BothDatabases
  void bad_inputs_schema_and_output_are_400_naming_the_field(Api api) {
    api.test(http -> {
      assertProblem(put(http, "bad", "{\"inputs_schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"nope\"}}}}"),
          400, "validation_failed", "inputs_schema");
      assertProblem(put(http, "bad", "{\"inputs_schema\":{\"type\":\"string\"}}"), 400, "validation_failed",
          "inputs_schema");
      assertProblem(put(http, "bad", "{\"inputs_schema\":[1]}"), 400, "validation_failed", "inputs_schema");
      assertProblem(put(http, "bad", "{\"inputs_schema\":{\"type\":\"object\",\"properties\":{\"a\":"
          + "{\"type\":\"string\",\"pattern\":\"(a+)+\\\\1\"}}}}"), 400, "validation_failed",
          "inputs_schema.properties.a.pattern");
      assertProblem(put(http, "bad", "{\"output\":\"{{ 1 + }}\"}"), 400, "validation_failed", "output");
      assertProblem(put(http, "bad", "{\"output\":{\"a\":[1,\"{{ nope.x }}\"]}}"), 400, "validation_failed",
          "output.a[1]");
      assertEquals(404, http.get("/v1/workflows/bad").status(), "nothing was stored");
    });
  }

  @BothDatabases
  void a_put_that_changes_only_the_output_or_schema_is_a_new_version_and_runs_use_it(Api api) {
    api.test(http -> {
      assertEquals(201, put(http, "v", "{\"output\":\"{{ 1 }}\"}").status());
      Http.Reply same = put(http, "v", "{\"output\":\"{{ 1 }}\"}");
      assertEquals(200, same.status());
      String first = Runs.start(http, "v", "demo", "{}").get("id").asText();
      assertEquals(1, awaitStatus(http, first, "succeeded").get("output").asInt());

      Http.Reply changed = put(http, "v", "{\"output\":\"{{ 2 }}\",\"inputs_schema\":" + SCHEMA + "}");
      assertEquals(200, changed.status());
      assertEquals(Json.tree(SCHEMA), changed.json().get("inputs_schema"));
      assertProblem(Runs.startReply(http, "v", "demo", "{}"), 400, "validation_failed", "inputs.email");
      String second = Runs.start(http, "v", "demo", "{\"email\":\"ann@example.com\"}").get("id").asText();
      assertEquals(2, awaitStatus(http, second, "succeeded").get("output").asInt());
      assertEquals(1, awaitStatus(http, first, "succeeded").get("output").asInt(), "an ended run keeps its output");
    });
  }
}
