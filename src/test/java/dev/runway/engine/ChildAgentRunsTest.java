package dev.runway.engine;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.FakeModel;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import java.util.Map;

/**
 * The {@code agent} step, through HTTP on both databases with the built-in sandbox model: a child
 * agent run started in the step's commit, its output passed on, its approval shown in the parent,
 * cancel cascading, a missing agent, the step's model checked against agents.model.allowed at PUT and
 * again when the child starts.
 */
class ChildAgentRunsTest {
  private static final String ECHO = "{\"model\":\"gpt-4o-mini\",\"instructions\":\"Repeat the input.\"}";

  private static final String ALLOWED = "gpt-4o-mini, llama3.1";

  private static void put(Http http, String path, String body) {
    Http.Reply reply = http.put(path, body);
    assertTrue(reply.status() == 200 || reply.status() == 201, reply::toString);
  }

  @BothDatabases
  void an_agent_step_runs_the_agent_as_a_child_and_passes_its_output_on(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        put(http, "/v1/agents/echo", ECHO);
        put(http, "/v1/workflows/ask", """
            {"steps":[{"id":"ask","type":"agent","agent":"echo","input":"tier for {{ inputs.customer }}"},
                      {"id":"num","type":"agent","agent":"echo","input":"{{ inputs.n }}"}],
             "output":{"answer":"{{ steps.ask.output }}"}}""");
        String parent = Runs.start(http, "ask", "sales", "{\"customer\":\"Ann\",\"n\":7}").get("id").asText();
        JsonNode run = awaitStatus(http, parent, "succeeded");
        JsonNode step = run.get("steps").get(0);
        assertEquals("agent", step.get("type").asText());
        assertEquals("You said: tier for Ann", step.get("output").asText(), run::toString);
        assertEquals("You said: tier for Ann", run.get("output").get("answer").asText());
        assertEquals("You said: 7", run.get("steps").get(1).get("output").asText(), "a number is sent as its text");
        String child = step.get("child_run_id").asText();
        JsonNode agentRun = http.get("/v1/runs/" + child).json();
        assertEquals("agent", agentRun.get("kind").asText());
        assertEquals("echo", agentRun.get("agent").asText());
        assertEquals(parent, agentRun.get("parent_run_id").asText());
        assertEquals("sales", agentRun.get("project").asText());
        assertEquals("tier for Ann", agentRun.get("input").asText());
        assertEquals("succeeded", agentRun.get("status").asText());
        assertEquals(2, http.get("/v1/runs?parent_run_id=" + parent + "&kind=agent").json().get("data").size());
        assertEquals(parent, api.storedRun(child).orElseThrow().get("parent_run_id"));
      });
    }
  }

  @BothDatabases
  void an_agents_structured_output_is_a_json_value_later_steps_branch_on(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        put(http, "/v1/agents/tiers", """
            {"model":"gpt-4o-mini","instructions":"Decide the tier.",
             "output_schema":{"type":"object","required":["tier"],
                              "properties":{"tier":{"type":"string","enum":["gold","silver"]}}}}""");
        put(http, "/v1/workflows/tiering", """
            {"steps":[{"id":"decide","type":"agent","agent":"tiers","input":{"customer":"{{ inputs.customer }}"}},
                      {"id":"gold","type":"workflow","workflow":"noop","if":"steps.decide.output.tier == 'gold'"},
                      {"id":"silver","type":"workflow","workflow":"noop","if":"steps.decide.output.tier == 'silver'"}],
             "output":"{{ steps.decide.output.tier }}"}""");
        put(http, "/v1/workflows/noop", "{}");
        String parent = Runs.start(http, "tiering", "demo", "{\"customer\":\"Ann\"}").get("id").asText();
        JsonNode run = awaitStatus(http, parent, "succeeded");
        JsonNode steps = run.get("steps");
        assertTrue(steps.get(0).get("output").isObject(), run::toString);
        assertEquals("gold", steps.get(0).get("output").get("tier").asText());
        assertEquals("succeeded", steps.get(1).get("status").asText());
        assertEquals("skipped", steps.get(2).get("status").asText());
        assertEquals("gold", run.get("output").asText());
      });
    }
  }

  @BothDatabases
  void an_agent_waiting_for_approval_shows_in_the_parent_and_cancel_reaches_it(Api api) {
    api.test(http -> {
      put(http, "/v1/agents/careful", "{\"model\":\"gpt-4o-mini\",\"instructions\":\"x\",\"requires_approval\":true}");
      put(http, "/v1/workflows/careful-flow", "{\"steps\":[{\"type\":\"agent\",\"agent\":\"careful\",\"input\":{\"a\":1}}]}");
      String parent = Runs.start(http, "careful-flow", "demo", "{}").get("id").asText();
      JsonNode run = http.get("/v1/runs/" + parent).json();
      assertEquals("waiting", run.get("steps").get(0).get("status").asText(), run::toString);
      String child = run.get("steps").get(0).get("child_run_id").asText();
      JsonNode agentRun = http.get("/v1/runs/" + child).json();
      assertEquals("awaiting_approval", agentRun.get("status").asText());
      assertEquals("{\"a\":1}", agentRun.get("input").toString());
      assertEquals(200, http.post("/v1/runs/" + parent + "/cancel", "{}").status());
      assertEquals("canceled", http.get("/v1/runs/" + child).json().get("status").asText());
    });
  }

  @BothDatabases
  void approving_the_agent_lets_both_finish(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        put(http, "/v1/agents/careful", "{\"model\":\"gpt-4o-mini\",\"instructions\":\"x\",\"requires_approval\":true}");
        put(http, "/v1/workflows/careful-flow", "{\"steps\":[{\"type\":\"agent\",\"agent\":\"careful\",\"input\":\"hi\"}]}");
        String parent = Runs.start(http, "careful-flow", "demo", "{}").get("id").asText();
        String child = http.get("/v1/runs/" + parent).json().get("steps").get(0).get("child_run_id").asText();
        assertEquals(200, http.post("/v1/runs/" + child + "/approve", "{}").status());
        JsonNode done = awaitStatus(http, parent, "succeeded");
        assertEquals("You said: hi", done.get("steps").get(0).get("output").asText());
      });
    }
  }

  @BothDatabases
  void a_missing_agent_fails_the_step_and_bad_agent_steps_are_400(Api api) {
    api.test(http -> {
      put(http, "/v1/workflows/lost", "{\"steps\":[{\"type\":\"agent\",\"agent\":\"nobody\",\"input\":\"x\"}]}");
      JsonNode run = awaitStatus(http, Runs.start(http, "lost", "demo", "{}").get("id").asText(), "failed");
      assertEquals("agent_not_found", run.get("error").get("code").asText(), run::toString);
      assertEquals(0, http.get("/v1/runs?parent_run_id=" + run.get("id").asText()).json().get("data").size());

      put(http, "/v1/workflows/null-input", "{\"steps\":[{\"type\":\"agent\",\"agent\":\"x\",\"input\":\"{{ null }}\"}]}");
      JsonNode nullInput = awaitStatus(http, Runs.start(http, "null-input", "demo", "{}").get("id").asText(), "failed");
      assertEquals("expression_failed", nullInput.get("error").get("code").asText(), nullInput::toString);

      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"agent\",\"input\":\"x\"}]}"), 400,
          "validation_failed", "steps[0].agent");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"agent\",\"agent\":\"a\"}]}"), 400,
          "validation_failed", "steps[0].input");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"agent\",\"agent\":\"a\",\"input\":[1]}]}"),
          400, "validation_failed", "steps[0].input");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"agent\",\"agent\":\"a\",\"input\":"
          + "{\"q\":\"{{ nope }}\"}}]}"), 400, "validation_failed", "steps[0].input.q");
    });
  }

  @BothDatabases
  void an_agent_step_asks_for_its_model_and_the_child_run_shows_it(Api api) throws Exception {
    try (FakeModel model = FakeModel.start().script(FakeModel.Reply.text("gold"));
        Engine engine = api.database().startEngine(s -> s.with("agents.model.base_url", model.baseUrl())
            .with("agents.model.allowed", ALLOWED))) {
      api.testWithServices(s -> s.with("agents.model.allowed", ALLOWED), http -> {
        put(http, "/v1/agents/echo", ECHO);
        put(http, "/v1/workflows/ask-llama", """
            {"steps":[{"id":"ask","type":"agent","agent":"echo","input":"hi","model":"llama3.1"}]}""");
        assertEquals("llama3.1", http.get("/v1/workflows/ask-llama").json().get("steps").get(0).get("model").asText());
        String parent = Runs.start(http, "ask-llama", "demo", "{}").get("id").asText();
        JsonNode run = awaitStatus(http, parent, "succeeded");
        assertEquals("gold", run.get("steps").get(0).get("output").asText(), run::toString);
        String child = run.get("steps").get(0).get("child_run_id").asText();
        JsonNode agentRun = http.get("/v1/runs/" + child).json();
        assertEquals("llama3.1", agentRun.get("model").asText(), agentRun::toString);
        assertEquals("llama3.1", model.lastRequest().body().get("model").asText(), "the model called is the step's");
        Map<String, Object> stored = api.storedRun(child).orElseThrow();
        assertEquals("llama3.1", Api.json((String) stored.get("definition")).get("model").asText());
      });
    }
  }

  @BothDatabases
  void an_agent_step_without_a_model_runs_the_agents_own(Api api) {
    api.test(http -> {
      put(http, "/v1/agents/careful", "{\"model\":\"gpt-4o-mini\",\"instructions\":\"x\",\"requires_approval\":true}");
      put(http, "/v1/workflows/own-model", "{\"steps\":[{\"type\":\"agent\",\"agent\":\"careful\",\"input\":\"x\"}]}");
      assertTrue(http.get("/v1/workflows/own-model").json().get("steps").get(0).path("model").isMissingNode());
      String parent = Runs.start(http, "own-model", "demo", "{}").get("id").asText();
      String child = http.get("/v1/runs/" + parent).json().get("steps").get(0).get("child_run_id").asText();
      assertEquals("gpt-4o-mini", http.get("/v1/runs/" + child).json().get("model").asText());
      assertEquals(200, http.post("/v1/runs/" + parent + "/cancel", "{}").status());
    });
  }

  @BothDatabases
  void an_agent_step_naming_a_model_not_allowed_is_400_naming_the_step_and_stores_nothing(Api api) {
    api.testWithServices(s -> s.with("agents.model.allowed", ALLOWED), http -> {
      JsonNode problem = assertProblem(http.put("/v1/workflows/pricey", """
          {"steps":[{"type":"agent","agent":"a","input":"x","model":"gpt-4.5-preview"}]}"""), 400,
          "validation_failed", "steps[0].model");
      String detail = problem.get("detail").asText();
      assertTrue(detail.startsWith("steps[0].model 'gpt-4.5-preview' is not allowed"), detail);
      assertTrue(detail.contains("gpt-4o-mini, llama3.1"), detail);
      assertProblem(http.put("/v1/workflows/pricey", """
          {"steps":[{"type":"foreach","items":"[1]","steps":[
             {"type":"agent","agent":"a","input":"x","model":"llama3.1"},
             {"type":"parallel","branches":[[{"type":"agent","agent":"a","input":"x"}],
                                            [{"type":"agent","agent":"a","input":"x","model":"o1-pro"}]]}]}]}"""),
          400, "validation_failed", "steps[0].steps[1].branches[1][0].model");
      assertProblem(http.put("/v1/workflows/pricey", """
          {"steps":[{"type":"agent","agent":"a","input":"x","model":" "}]}"""), 400, "validation_failed",
          "steps[0].model");
      assertProblem(http.put("/v1/workflows/pricey", """
          {"steps":[{"type":"agent","agent":"a","input":"x","model":7}]}"""), 400, "validation_failed",
          "steps[0].model");
      assertEquals(404, http.get("/v1/workflows/pricey").status());
      put(http, "/v1/workflows/pricey", """
          {"steps":[{"type":"agent","agent":"a","input":"x","model":"llama3.1"}]}""");
    });
  }

  @BothDatabases
  void a_model_the_list_no_longer_names_fails_the_step_and_starts_no_child(Api api) {
    api.test(http -> {
      put(http, "/v1/agents/old", "{\"model\":\"gpt-4.5-preview\",\"instructions\":\"x\"}");
      put(http, "/v1/workflows/step-model", """
          {"steps":[{"type":"agent","agent":"old","input":"x","model":"o1-pro"}]}""");
      put(http, "/v1/workflows/agent-model", """
          {"steps":[{"type":"agent","agent":"old","input":"x"}]}""");
    });
    // The operator sets the list after the workflows were saved; the server reads it at start.
    api.testWithServices(s -> s.with("agents.model.allowed", ALLOWED), http -> {
      JsonNode run = awaitStatus(http, Runs.start(http, "step-model", "demo", "{}").get("id").asText(), "failed");
      assertEquals("model_not_allowed", run.get("error").get("code").asText(), run::toString);
      JsonNode step = run.get("steps").get(0);
      assertEquals("failed", step.get("status").asText());
      assertEquals("model_not_allowed", step.get("error").get("code").asText(), step::toString);
      assertTrue(step.get("error").get("message").asText().contains("the step's model 'o1-pro' is not allowed"),
          step::toString);
      assertEquals(0, http.get("/v1/runs?parent_run_id=" + run.get("id").asText()).json().get("data").size());
      assertEquals(0, api.countRuns("kind = 'agent'"), "no agent run was stored");

      JsonNode own = awaitStatus(http, Runs.start(http, "agent-model", "demo", "{}").get("id").asText(), "failed");
      assertEquals("model_not_allowed", own.get("error").get("code").asText(), own::toString);
      assertTrue(own.get("error").get("message").asText().contains("the agent's model 'gpt-4.5-preview'"),
          own::toString);
      assertEquals(0, api.countRuns("kind = 'agent'"));
    });
    // Reached by the engine (after a delay), the step is checked against the engine's list.
    String[] late = new String[1];
    api.test(http -> {
      put(http, "/v1/workflows/later", """
          {"steps":[{"type":"delay","seconds":1},{"type":"agent","agent":"old","input":"x","model":"o1-pro"}]}""");
      late[0] = Runs.start(http, "later", "demo", "{}").get("id").asText();
    });
    try (Engine engine = api.database().startEngine(s -> s.with("agents.model.allowed", ALLOWED))) {
      api.test(http -> {
        JsonNode run = awaitStatus(http, late[0], "failed");
        assertEquals("model_not_allowed", run.get("steps").get(1).get("error").get("code").asText(), run::toString);
        assertEquals(0, api.countRuns("kind = 'agent'"));
      });
    }
  }
}
