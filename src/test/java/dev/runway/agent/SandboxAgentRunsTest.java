package dev.runway.agent;

import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.engine.Engine;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The sample agent (config/agents/clock.json) on the built-in sandbox model, as a newcomer runs it
 * right after ./run.sh: a complete run with a tool call, its transcript and its events.
 */
class SandboxAgentRunsTest {

  @BothDatabases
  void the_sample_agent_runs_to_the_end_on_the_sandbox_model(Api api) throws Exception {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        String sample = Files.readString(Path.of("config/agents/clock.json"));
        assertEquals(201, http.put("/v1/agents/clock", sample).status());
        Http.Reply started = http.post("/v1/agents/clock/runs", "{\"project\":\"demo\",\"input\":\"Europe/Paris\"}");
        assertEquals(200, started.status(), started::toString);
        JsonNode run = started.json();
        assertEquals(List.of("id", "kind", "agent", "workflow", "status", "requires_approval", "created_at", "parent_run_id",
            "thread_id", "project", "input", "output", "usage", "model", "model_endpoint", "stream", "updated_at",
            "finished_at", "approval", "error"),
            fieldNames(run));
        assertEquals("agent", run.get("kind").asText());
        assertEquals("clock", run.get("agent").asText());
        assertTrue(run.get("workflow").isNull());
        assertEquals("running", run.get("status").asText());
        assertEquals("Europe/Paris", run.get("input").asText());
        assertTrue(run.get("output").isNull());
        assertEquals("gpt-4o-mini", run.get("model").asText());
        String id = run.get("id").asText();

        JsonNode done = awaitStatus(http, id, "succeeded");
        assertEquals("sandbox", done.get("model_endpoint").asText());
        assertEquals("sandbox", done.get("model").asText(), "what answered, not the agent's gpt-4o-mini");
        assertTrue(done.get("output").asText().contains("\"timezone\":\"Europe/Paris\""), done::toString);
        JsonNode usage = done.get("usage");
        assertEquals(2, usage.get("model_calls").asInt());
        assertEquals(1, usage.get("tool_calls").asInt());
        assertTrue(usage.get("total_tokens").asInt() > 0);
        assertEquals(usage.get("prompt_tokens").asInt() + usage.get("completion_tokens").asInt(),
            usage.get("total_tokens").asInt());

        JsonNode messages = http.get("/v1/runs/" + id + "/messages").json();
        assertEquals(List.of("system", "user", "assistant", "tool", "assistant"), roles(messages));
        JsonNode call = messages.get("data").get(2).get("tool_calls").get(0);
        assertEquals("current_time", call.get("function").get("name").asText());
        assertEquals("{\"timezone\":\"Europe/Paris\"}", call.get("function").get("arguments").asText());
        JsonNode result = messages.get("data").get(3);
        assertEquals(call.get("id").asText(), result.get("tool_call_id").asText());
        assertTrue(result.get("content").asText().contains("local_time"), result::toString);
        assertEquals(done.get("output").asText(), messages.get("data").get(4).get("content").asText());

        JsonNode page = http.get("/v1/runs/" + id + "/messages?limit=2&starting_after=1").json();
        assertEquals(List.of("assistant", "tool"), roles(page));
        assertTrue(page.get("has_more").asBoolean());
        assertEquals("3", page.get("next_cursor").asText());

        List<String> types = new ArrayList<>();
        http.get("/v1/runs/" + id + "/events").json().get("data").forEach(e -> types.add(e.get("type").asText()));
        assertEquals(List.of("run.started", "model_call.started", "model_call.finished", "tool_call.started",
            "tool_call.finished", "model_call.started", "model_call.finished", "run.succeeded"), types);

        JsonNode listed = http.get("/v1/runs?kind=agent&agent=clock").json().get("data");
        assertEquals(1, listed.size());
        assertEquals(id, listed.get(0).get("id").asText());
        assertEquals(0, http.get("/v1/runs?kind=workflow").json().get("data").size());
        assertEquals(5, countMessages(api, id), "the transcript is stored");
      });
    }
  }

  private static int countMessages(Api api, String runId) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM run_message WHERE run_id = :id")
        .bind("id", runId).mapTo(Integer.class).one());
  }

  static List<String> roles(JsonNode page) {
    List<String> roles = new ArrayList<>();
    page.get("data").forEach(m -> roles.add(m.get("role").asText()));
    return roles;
  }

  static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }
}
