package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.FakeMcpServer;
import dev.runway.support.FakeModel;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A SIGKILL of the packaged jar after an agent run listed its MCP server's tools and while its
 * first model call is out; the server's tools change meanwhile. After the restart the run goes on
 * with the list it kept (not listed again, the new tool not offered), and its MCP call opens a new
 * session (the one in the killed process's memory is gone).
 */
class McpToolsKillNineIT {

  @BothDatabases
  void a_resumed_run_uses_the_tools_it_listed_before_kill_9(TestDatabase db) throws Exception {
    CountDownLatch firstCall = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger requests = new AtomicInteger();
    try (FakeModel model = FakeModel.start(); FakeMcpServer mcp = FakeMcpServer.start()) {
      model.respondWith(request -> {
        JsonNode messages = request.get("messages");
        if (messages.get(messages.size() - 1).get("role").asText().equals("tool")) {
          return FakeModel.Reply.text("done");
        }
        if (requests.incrementAndGet() == 1) {
          firstCall.countDown();
          try {
            release.await(60, TimeUnit.SECONDS); // the process is killed while this call is out
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        return FakeModel.Reply.toolCalls(FakeModel.ToolCall.of("call_1", "files__write_file", Map.of("text", "x")));
      });
      RunwayProcess server = RunwayProcess.onFreshDatabase(db, RunwayProcess.agentEnv(model.baseUrl()),
          "runway-mcp-kill-");
      String key = server.command("keys", "create", "--workspace", "ops", "--name", "mcp").trim();
      Http api = server.http(key);
      try {
        server.start();
        Http.Reply put = api.put("/v1/agents/files", "{\"model\":\"m\",\"mcp_servers\":[{\"name\":\"files\",\"url\":\""
            + mcp.url() + "\"}]}");
        assertEquals(201, put.status(), put.body());
        Http.Reply started = api.post("/v1/agents/files/runs", "{\"project\":\"p\",\"input\":\"go\"}");
        assertEquals(200, started.status(), started.body());
        String id = Json.tree(started.body()).get("id").asText();
        assertTrue(firstCall.await(30, TimeUnit.SECONDS), "the first model call went out\n" + server.log());
        List<String> offeredBefore = offered(model.requests().get(0).body());
        assertTrue(offeredBefore.contains("files__echo"), offeredBefore::toString);

        mcp.removeTool("echo");
        mcp.tool("newtool", "New", args -> FakeMcpServer.text("new"));
        server.kill9();
        release.countDown();
        int initializesBefore = initializes(mcp);
        server.start();

        JsonNode run = server.awaitEnded(api, id);
        assertEquals("succeeded", run.get("status").asText(), run::toString);
        JsonNode events = Json.tree(api.get("/v1/runs/" + id + "/events?limit=1000").body()).get("data");
        int listed = 0;
        for (JsonNode e : events) {
          listed += e.get("type").asText().equals("mcp.tools_listed") ? 1 : 0;
        }
        assertEquals(1, listed, "the tools were not listed again after the restart");
        FakeModel.Request resumed = model.requests().get(model.requests().size() - 2);
        assertEquals(offeredBefore, offered(resumed.body()), "the resumed run offers the list it kept");
        assertFalse(offered(resumed.body()).contains("files__newtool"));
        assertEquals(List.of("write_file"), mcp.calls().stream().map(FakeMcpServer.ToolCall::name).toList());
        assertEquals(initializesBefore + 1, initializes(mcp), "the call after the restart opened a new session");
      } finally {
        server.stop();
      }
    }
  }

  private static List<String> offered(JsonNode request) {
    List<String> names = new ArrayList<>();
    request.path("tools").forEach(t -> names.add(t.get("function").get("name").asText()));
    return names;
  }

  /** The MCP server's requests without a session: each an initialize. */
  private static int initializes(FakeMcpServer mcp) {
    return (int) mcp.requests().stream().filter(r -> !r.containsKey("mcp-session-id")).count();
  }
}
