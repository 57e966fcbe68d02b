package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.FakeModel;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A run that continues a thread, SIGKILLed while its model call is in flight, sends the model the
 * same conversation after the restart: what it was given from its thread was kept with it.
 */
class ThreadRestartIT {
  @BothDatabases
  void a_continued_run_resumed_after_kill_9_sends_the_same_thread_context(TestDatabase db) throws Exception {
    AtomicBoolean hung = new AtomicBoolean();
    try (FakeModel model = FakeModel.start()) {
      model.respondWith(request -> {
        JsonNode messages = request.get("messages");
        String last = messages.get(messages.size() - 1).get("content").asText();
        FakeModel.Reply answer = FakeModel.Reply.text("answer to " + last);
        // The second run's first call hangs until the server that asked is killed.
        return last.equals("second") && hung.compareAndSet(false, true) ? answer.after(Duration.ofSeconds(30)) : answer;
      });
      RunwayProcess server = RunwayProcess.onFreshDatabase(db, RunwayProcess.agentEnv(model.baseUrl(), "RUNWAY_AGENTS_MODEL_TIMEOUT_MS", "5000"),
          "runway-thread-restart-");
      String key = server.command("keys", "create", "--workspace", "ops", "--name", "restart").trim();
      Http api = server.http(key);
      try {
        server.start();
        assertEquals(201, api.put("/v1/agents/chat", "{\"model\":\"m\",\"instructions\":\"Be brief.\"}").status());
        Http.Reply first = api.post("/v1/agents/chat/runs", "{\"project\":\"p\",\"input\":\"first\"}");
        assertEquals(200, first.status(), first.body());
        String thread = Json.tree(first.body()).get("thread_id").asText();
        assertEquals("succeeded", server.awaitEnded(api, Json.tree(first.body()).get("id").asText()).get("status")
            .asText());
        Http.Reply second = api.post("/v1/agents/chat/runs", "{\"project\":\"p\",\"input\":\"second\",\"thread_id\":\""
            + thread + "\"}");
        assertEquals(200, second.status(), second.body());
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (model.requestCount() < 2 && System.nanoTime() < deadline) {
          Thread.sleep(20);
        }
        assertEquals(2, model.requestCount(), "the second run's model call is in flight");

        server.kill9();
        server.start();

        JsonNode run = server.awaitEnded(api, Json.tree(second.body()).get("id").asText());
        assertEquals("succeeded", run.get("status").asText(), run::toString);
        assertEquals("answer to second", run.get("output").asText());
        List<FakeModel.Request> requests = model.requests();
        assertEquals(3, requests.size());
        List<String> expected = List.of("system:Be brief.", "user:first", "assistant:answer to first", "user:second");
        assertEquals(expected, sent(requests.get(1)), "before the kill");
        assertEquals(expected, sent(requests.get(2)), "after the restart: the same conversation");
      } finally {
        server.stop();
      }
    }
  }

  private static List<String> sent(FakeModel.Request request) {
    List<String> out = new ArrayList<>();
    request.body().get("messages").forEach(m -> out.add(m.get("role").asText() + ":" + m.get("content").asText()));
    return out;
  }
}
