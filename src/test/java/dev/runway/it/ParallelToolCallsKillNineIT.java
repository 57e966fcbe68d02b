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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;

/**
 * A SIGKILL of the packaged jar in the middle of a turn of parallel tool calls (one call answered
 * and committed, two still out): after the restart each run completes, the answered call is not
 * sent again and the two others are, with their Idempotency-Keys.
 */
class ParallelToolCallsKillNineIT {
  private static final int RUNS = 3;

  @BothDatabases
  void only_the_calls_without_an_outcome_are_sent_again_after_kill_9(TestDatabase db) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start()) {
      model.respondWith(request -> {
        JsonNode messages = request.get("messages");
        if (messages.get(messages.size() - 1).get("role").asText().equals("tool")) {
          return FakeModel.Reply.text("done");
        }
        return FakeModel.Reply.toolCalls(FakeModel.ToolCall.of("call_a", "a", Map.of("n", 1)),
            FakeModel.ToolCall.of("call_b", "b", Map.of("n", 2)), FakeModel.ToolCall.of("call_c", "c", Map.of("n", 3)));
      });
      CountDownLatch b = tools.hold("/b");
      CountDownLatch c = tools.hold("/c");
      RunwayProcess server = RunwayProcess.onFreshDatabase(db, RunwayProcess.agentEnv(model.baseUrl()),
          "runway-parallel-kill-");
      String key = server.command("keys", "create", "--workspace", "ops", "--name", "parallel").trim();
      Http api = server.http(key);
      try {
        server.start();
        StringBuilder tools3 = new StringBuilder();
        for (String name : List.of("a", "b", "c")) {
          tools3.append(tools3.length() == 0 ? "" : ",").append("{\"name\":\"").append(name).append("\",\"url\":\"")
              .append(tools.url("/" + name)).append("\",\"timeout_ms\":60000}");
        }
        Http.Reply put = api.put("/v1/agents/fanout", "{\"model\":\"m\",\"tools\":[" + tools3 + "]}");
        assertEquals(201, put.status(), put.body());
        List<String> runs = new ArrayList<>();
        for (int i = 0; i < RUNS; i++) {
          Http.Reply r = api.post("/v1/agents/fanout/runs", "{\"project\":\"p\",\"input\":\"run " + i + "\"}");
          assertEquals(200, r.status(), r.body());
          runs.add(Json.tree(r.body()).get("id").asText());
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!(tools.calls().size() == 3 * RUNS && runs.stream().allMatch(id -> finished(api, id) == 1))) {
          assertTrue(System.nanoTime() < deadline, "every run's three calls out and call_a committed: "
              + tools.calls().size() + " calls\n" + server.log());
          Thread.sleep(20);
        }

        server.kill9();
        b.countDown();
        c.countDown();
        server.start();

        Map<String, Integer> expected = new TreeMap<>();
        for (String id : runs) {
          JsonNode run = server.awaitEnded(api, id);
          assertEquals("succeeded", run.get("status").asText(), run::toString);
          assertEquals(3, run.get("usage").get("tool_calls").asInt(), run::toString);
          JsonNode messages = Json.tree(api.get("/v1/runs/" + id + "/messages").body());
          List<String> order = new ArrayList<>();
          messages.get("data").forEach(m -> order.add(m.get("role").asText() + ":" + m.path("tool_call_id").asText("")));
          assertEquals(List.of("user:", "assistant:", "tool:call_a", "tool:call_b", "tool:call_c", "assistant:"), order);
          expected.put(id + ":call_a", 1);
          expected.put(id + ":call_b", 2);
          expected.put(id + ":call_c", 2);
        }
        Map<String, Integer> calls = new TreeMap<>();
        tools.calls().forEach(call -> calls.merge(call.idempotencyKey(), 1, Integer::sum));
        assertEquals(expected, calls, "call_a (committed before the kill) once; call_b and call_c sent again");
      } finally {
        server.stop();
      }
    }
  }

  private static int finished(Http api, String runId) {
    JsonNode events = Json.tree(api.get("/v1/runs/" + runId + "/events?limit=1000").body()).get("data");
    int n = 0;
    for (JsonNode e : events) {
      n += e.get("type").asText().equals("tool_call.finished") ? 1 : 0;
    }
    return n;
  }
}
