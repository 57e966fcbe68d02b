package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.FakeModel;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import dev.runway.support.ToolServer;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Agent runs survive a SIGKILL of the packaged jar while their model calls are in flight: after the
 * restart every run goes on from its last committed turn and finishes, each tool call made once.
 */
class AgentRestartIT {
  private static final int RUNS = 10;

  @BothDatabases
  void agent_runs_finish_after_kill_9_during_model_calls(TestDatabase db) throws Exception {
    AtomicInteger firstTurns = new AtomicInteger();
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start()) {
      model.respondWith(request -> {
        JsonNode messages = request.get("messages");
        if (messages.get(messages.size() - 1).get("role").asText().equals("tool")) {
          return FakeModel.Reply.text("done");
        }
        FakeModel.Reply call = FakeModel.Reply.toolCalls(FakeModel.ToolCall.of("call_1", "lookup", Map.of("n", 1)));
        // The first turn of each run hangs until the server that asked is killed.
        return firstTurns.incrementAndGet() <= RUNS ? call.after(Duration.ofSeconds(30)) : call;
      });
      RunwayProcess server = RunwayProcess.onFreshDatabase(db, RunwayProcess.agentEnv(model.baseUrl(), "RUNWAY_AGENTS_MODEL_TIMEOUT_MS", "5000"),
          "runway-agent-restart-");
      String key = server.command("keys", "create", "--workspace", "ops", "--name", "restart").trim();
      Http api = server.http(key);
      try {
        server.start();
        Http.Reply put = api.put("/v1/agents/restart", "{\"model\":\"m\",\"tools\":[{"
            + "\"name\":\"lookup\",\"url\":\"" + tools.url("/lookup") + "\"}]}");
        assertEquals(201, put.status(), put.body());
        List<String> runs = new ArrayList<>();
        for (int i = 0; i < RUNS; i++) {
          Http.Reply r = api.post("/v1/agents/restart/runs", "{\"project\":\"p\",\"input\":\"run " + i + "\"}");
          assertEquals(200, r.status(), r.body());
          runs.add(Json.tree(r.body()).get("id").asText());
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (model.requestCount() < RUNS && System.nanoTime() < deadline) {
          Thread.sleep(20);
        }
        assertEquals(RUNS, model.requestCount(), "every run's first model call is in flight");

        server.kill9();
        server.start();

        for (String id : runs) {
          JsonNode run = server.awaitEnded(api, id);
          assertEquals("succeeded", run.get("status").asText(), run::toString);
          assertEquals("done", run.get("output").asText());
          JsonNode messages = Json.tree(api.get("/v1/runs/" + id + "/messages").body());
          List<String> roles = new ArrayList<>();
          messages.get("data").forEach(m -> roles.add(m.get("role").asText()));
          assertEquals(List.of("user", "assistant", "tool", "assistant"), roles, "nothing lost, nothing twice");
          String events = api.get("/v1/runs/" + id + "/events").body();
          assertTrue(events.contains("cut off before its answer was recorded"), events);
        }
        Map<String, Integer> calls = new HashMap<>();
        tools.calls("/lookup").forEach(c -> calls.merge(c.idempotencyKey(), 1, Integer::sum));
        Map<String, Integer> once = new HashMap<>();
        runs.forEach(id -> once.put(id + ":call_1", 1));
        assertEquals(once, calls, "each tool call made once, with its Idempotency-Key");
      } finally {
        server.stop();
      }
    }
  }
}
