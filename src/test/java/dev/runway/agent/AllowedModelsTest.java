package dev.runway.agent;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.ServerSettings;
import dev.runway.Services;
import dev.runway.config.Settings;
import dev.runway.config.SettingsException;
import dev.runway.engine.Engine;
import dev.runway.engine.ModelSettings;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.FakeModel;
import dev.runway.support.Http;
import dev.runway.support.TempFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * agents.model.allowed: the model names a definition or a run may name. Outside the list, saving a
 * definition or starting a run is a 400 naming model that stores nothing, and a run started before
 * the list changed fails at its next model call; an empty list allows any name.
 */
class AllowedModelsTest {
  private static final String ALLOWED = "gpt-4o-mini, llama3.1";
  /** The endpoint and its key: a refusal must show neither. */
  private static final UnaryOperator<Settings> PAID_ENDPOINT = s -> s
      .with("agents.model.allowed", ALLOWED)
      .with("agents.model.base_url", "https://models.internal.example.com/v1")
      .with("agents.model.api_key", "sk-live-do-not-show");

  private static int agents(Api api, String id) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM agent WHERE workspace_id = :ws AND id = :id")
        .bind("ws", api.workspace).bind("id", id).mapTo(Integer.class).one());
  }

  private static int runs(Api api) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM run WHERE workspace_id = :ws")
        .bind("ws", api.workspace).mapTo(Integer.class).one());
  }

  /** Cancels the runs a test without an engine left running, so that no later test's engine takes them up. */
  private static void cancelRunning(Http http) {
    for (JsonNode run : http.get("/v1/runs?status=running,awaiting_approval&limit=100").json().get("data")) {
      http.post("/v1/runs/" + run.get("id").asText() + "/cancel", "{}");
    }
  }

  private static void assertShowsNothingSecret(Http.Reply reply) {
    assertFalse(reply.body().contains("sk-live-do-not-show"), reply::toString);
    assertFalse(reply.body().contains("models.internal.example.com"), reply::toString);
  }

  @BothDatabases
  void saving_an_agent_naming_another_model_is_400_naming_model_and_stores_nothing(Api api) {
    api.testWithServices(PAID_ENDPOINT, http -> {
      Http.Reply refused = http.put("/v1/agents/pricey", "{\"model\":\"gpt-4.5-preview\",\"instructions\":\"Hi\"}");
      JsonNode problem = assertProblem(refused, 400, "validation_failed", "model");
      String detail = problem.get("detail").asText();
      assertTrue(detail.contains("'gpt-4.5-preview' is not allowed"), detail);
      assertTrue(detail.contains("gpt-4o-mini, llama3.1"), "the refusal lists the names the caller may use: " + detail);
      assertShowsNothingSecret(refused);
      assertEquals(0, agents(api, "pricey"));

      assertEquals(201, http.put("/v1/agents/pricey", "{\"model\":\"llama3.1\"}").status());
      Http.Reply replaced = http.put("/v1/agents/pricey", "{\"model\":\"GPT-4o-mini\"}");
      assertProblem(replaced, 400, "validation_failed", "model"); // names are compared exactly
      assertEquals("llama3.1", http.get("/v1/agents/pricey").json().get("model").asText(), "the agent is unchanged");
    });
  }

  @BothDatabases
  void starting_a_run_naming_another_model_is_400_naming_model_and_starts_nothing(Api api) {
    api.testWithServices(PAID_ENDPOINT, http -> {
      assertEquals(201, http.put("/v1/agents/triage", "{\"model\":\"gpt-4o-mini\"}").status());
      Http.Reply refused = http.post("/v1/agents/triage/runs",
          "{\"project\":\"demo\",\"input\":\"hi\",\"model\":\"o1-pro\"}");
      JsonNode problem = assertProblem(refused, 400, "validation_failed", "model");
      assertTrue(problem.get("detail").asText().contains("'o1-pro' is not allowed"), problem::toString);
      assertShowsNothingSecret(refused);
      assertEquals(0, runs(api));

      Http.Reply started = http.post("/v1/agents/triage/runs",
          "{\"project\":\"demo\",\"input\":\"hi\",\"model\":\"llama3.1\"}");
      assertEquals(200, started.status(), started::toString);
      assertEquals("llama3.1", started.json().get("model").asText());
      assertEquals(1, runs(api));
      cancelRunning(http);
    });
  }

  @BothDatabases
  void an_agent_saved_before_the_list_named_its_model_starts_only_with_an_allowed_model(Api api) {
    api.test(http -> assertEquals(201, http.put("/v1/agents/old", "{\"model\":\"gpt-4.5-preview\"}").status()));
    api.testWithServices(PAID_ENDPOINT, http -> {
      Http.Reply refused = http.post("/v1/agents/old/runs", "{\"project\":\"demo\",\"input\":\"hi\"}");
      JsonNode problem = assertProblem(refused, 400, "validation_failed", "model");
      assertTrue(problem.get("detail").asText().startsWith("the agent's model 'gpt-4.5-preview' is not allowed"),
          problem::toString);
      assertEquals(0, runs(api));
      Http.Reply overridden = http.post("/v1/agents/old/runs",
          "{\"project\":\"demo\",\"input\":\"hi\",\"model\":\"gpt-4o-mini\"}");
      assertEquals(200, overridden.status(), overridden::toString);
      cancelRunning(http);
    });
  }

  @BothDatabases
  void an_empty_list_allows_any_model_name(Api api) {
    api.testWithServices(s -> s.with("agents.model.allowed", " , "), http -> {
      assertEquals(201, http.put("/v1/agents/local", "{\"model\":\"qwen2.5-coder:32b\"}").status());
      Http.Reply started = http.post("/v1/agents/local/runs",
          "{\"project\":\"demo\",\"input\":\"hi\",\"model\":\"anything-at-all\"}");
      assertEquals(200, started.status(), started::toString);
      cancelRunning(http);
    });
  }

  @BothDatabases
  void a_run_whose_model_the_list_no_longer_names_fails_before_its_next_model_call(Api api) throws Exception {
    try (FakeModel model = FakeModel.start()) {
      String[] started = new String[1];
      api.test(http -> {
        assertEquals(201, http.put("/v1/agents/gated", "{\"model\":\"gpt-4.5-preview\",\"requires_approval\":true}")
            .status());
        Http.Reply start = http.post("/v1/agents/gated/runs", "{\"project\":\"demo\",\"input\":\"hi\"}");
        assertEquals(200, start.status(), start::toString);
        started[0] = start.json().get("id").asText();
      });
      String runId = started[0];
      // The operator sets the list while the run waits for its approval.
      try (Engine engine = api.database().startEngine(s -> s.with("agents.model.base_url", model.baseUrl())
          .with("agents.model.allowed", ALLOWED))) {
        api.test(http -> {
          awaitStatus(http, runId, "awaiting_approval");
          assertEquals(200, http.post("/v1/runs/" + runId + "/approve", "{}").status());
          JsonNode run = awaitStatus(http, runId, "failed");
          assertEquals("model_not_allowed", run.get("error").get("code").asText(), run::toString);
          assertTrue(run.get("error").get("message").asText().contains("'gpt-4.5-preview'"), run::toString);
          assertEquals(0, model.requests().stream().filter(r -> r.body().path("model").asText()
              .equals("gpt-4.5-preview")).count(), "the model was never called");
        });
      }
    }
  }

  @BothDatabases
  void an_agent_file_naming_another_model_stops_the_start_naming_the_file_and_the_field(Api api) throws Exception {
    Path dir = TempFiles.dir("runway-agents-");
    Files.writeString(dir.resolve("pricey.json"), "{\"model\":\"gpt-4.5-preview\"}");
    Settings settings = PAID_ENDPOINT.apply(api.database().open().settings());
    Services services = Services.over(api.services().database(), ServerSettings.from(settings), () -> { });
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> services.agents().files(api.workspace).load(dir));
    assertTrue(e.getMessage().contains("pricey.json") && e.getMessage().contains("(model)"), e.getMessage());
    assertEquals(0, agents(api, "pricey"));
    Files.writeString(dir.resolve("pricey.json"), "{\"model\":\"llama3.1\"}");
    assertEquals(List.of("pricey"), services.agents().files(api.workspace).load(dir));
  }

  @Test
  void the_setting_is_a_comma_separated_list_of_names_of_at_most_200_characters() {
    assertEquals(List.of("gpt-4o-mini", "llama3.1"),
        List.copyOf(ModelSettings.from(Settings.defaults().with("agents.model.allowed", ALLOWED)).allowed().names()));
    assertTrue(ModelSettings.from(Settings.defaults()).allowed().allowsAny(), "empty by default: any model");
    SettingsException e = assertThrows(SettingsException.class,
        () -> ModelSettings.from(Settings.defaults().with("agents.model.allowed", "ok," + "m".repeat(201))));
    assertTrue(e.getMessage().contains("agents.model.allowed"), e.getMessage());
  }
}
