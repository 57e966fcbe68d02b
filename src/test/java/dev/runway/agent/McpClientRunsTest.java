package dev.runway.agent;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.await;
import static dev.runway.support.Runs.awaitStatus;
import static dev.runway.support.Runs.events;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.config.Settings;
import dev.runway.engine.Engine;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.FakeMcpServer;
import dev.runway.support.FakeModel;
import dev.runway.support.FakeModel.Reply;
import dev.runway.support.FakeModel.ToolCall;
import dev.runway.support.Http;
import dev.runway.support.PagingMcpServer;
import dev.runway.support.ToolServer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

/**
 * Agents whose tools come from MCP servers (mcp_servers): listed at the run's start and kept in the
 * run, offered as {@code <server>__<tool>}, called with tools/call over Streamable HTTP, through the
 * API on both databases, against an MCP server made with the official SDK (SSE answers, sessions)
 * and a hand-written one (JSON answers, tools/list in pages, sessions that expire).
 */
class McpClientRunsTest {

  private static Engine engine(Api api, FakeModel model, UnaryOperator<Settings> more) {
    return api.database().startEngine(s -> more.apply(s.with("agents.model.base_url", model.baseUrl())
        .with("agents.model.api_key", "sk-test").with("agents.model.retry_base_ms", "20")));
  }

  private static void agent(Http http, String id, String body) {
    Http.Reply put = http.put("/v1/agents/" + id, body);
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
  }

  private static String start(Http http, String agent) {
    Http.Reply reply = http.post("/v1/agents/" + agent + "/runs", "{\"project\":\"demo\",\"input\":\"go\"}");
    assertEquals(200, reply.status(), reply::toString);
    return reply.json().get("id").asText();
  }

  private static List<String> toolNames(FakeModel.Request request) {
    List<String> names = new ArrayList<>();
    request.body().path("tools").forEach(t -> names.add(t.get("function").get("name").asText()));
    return names;
  }

  /** The tool messages of the model's request {@code n}: tool_call_id → content. */
  private static Map<String, String> results(FakeModel model, int n) {
    Map<String, String> out = new java.util.LinkedHashMap<>();
    model.requests().get(n).body().get("messages").forEach(m -> {
      if (m.get("role").asText().equals("tool")) {
        out.put(m.get("tool_call_id").asText(), m.get("content").asText());
      }
    });
    return out;
  }

  @BothDatabases
  void mcp_tools_are_listed_once_offered_filtered_and_called_among_parallel_calls(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); FakeMcpServer mcp = FakeMcpServer.start(); ToolServer plain = ToolServer.start();
        Engine engine = engine(api, model, s -> s)) {
      plain.script("/plain", ToolServer.Reply.json(200, "{\"plain\":true}"));
      model.script(Reply.toolCalls(ToolCall.of("c1", "files__echo", Map.of("text", "hi")),
              ToolCall.of("c2", "plain", Map.of()), ToolCall.of("c3", "files__fail", Map.of()),
              ToolCall.of("c4", "files__boom", Map.of("text", "a.txt"))),
          Reply.toolCalls(ToolCall.of("c5", "files__write_file", Map.of("text", "x"))),
          Reply.toolCalls(ToolCall.of("c6", "files__hang", Map.of())),
          Reply.text("done"));
      api.test(http -> {
        assertEquals(201, http.put("/v1/secrets/FILES_TOKEN", "{\"value\":\"s3cret-files\"}").status());
        agent(http, "mcp", "{\"model\":\"test-model\",\"tools\":[{\"name\":\"plain\",\"url\":\"" + plain.url("/plain")
            + "\"}],\"mcp_servers\":[{\"name\":\"files\",\"url\":\"" + mcp.url() + "\",\"headers\":{\"Authorization\":"
            + "\"Bearer {{secrets.FILES_TOKEN}}\",\"X-Literal\":\"hidden\"},\"allowed_tools\":[\"echo\",\"fail\",\"boom\","
            + "\"write_file\"]}]}");
        JsonNode shown = http.get("/v1/agents/mcp").json().get("mcp_servers").get(0);
        assertEquals("Bearer {{secrets.FILES_TOKEN}}", shown.get("headers").get("Authorization").asText());
        assertFalse(shown.get("headers").get("X-Literal").asText().equals("hidden"), "a literal header is masked");
        assertEquals(10_000, shown.get("timeout_ms").asInt());
        assertEquals(false, shown.get("requires_approval").asBoolean());

        String id = start(http, "mcp");
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals("done", run.get("output").asText());
        assertEquals(5, run.get("usage").get("tool_calls").asInt(), "the call of a tool not offered is not made");

        // Offered as <server>__<tool> with the server's inputSchema, allowed_tools applied (no hang).
        FakeModel.Request first = model.requests().get(0);
        assertEquals(List.of("files__boom", "files__echo", "files__fail", "files__write_file", "plain"),
            toolNames(first).stream().sorted().toList());
        assertEquals("plain", toolNames(first).get(0), "the agent's own tools first");
        JsonNode echo = first.body().get("tools").get(toolNames(first).indexOf("files__echo")).get("function");
        assertEquals("Echoes its text", echo.get("description").asText());
        assertEquals("string", echo.get("parameters").get("properties").get("text").get("type").asText());

        Map<String, String> turn1 = results(model, 1);
        assertEquals("echo: hi", turn1.get("c1"));
        assertEquals("{\"plain\":true}", turn1.get("c2"));
        assertEquals("the MCP tool reported an error: disk on fire", Api.json(turn1.get("c3")).get("error").asText());
        String boom = Api.json(turn1.get("c4")).get("error").asText();
        assertTrue(boom.contains("JSON-RPC error -32602") && boom.contains("no such file: a.txt"), boom);
        assertEquals("{\"written\":true}", results(model, 2).get("c5"), "structuredContent the same as the text: once");
        String hang = results(model, 3).get("c6");
        assertTrue(hang.contains("there is no tool named 'files__hang'"), hang);

        // The listing: one event naming the tools kept; every request carried the secret; one session.
        List<JsonNode> listed = events(http, id, "mcp.tools_listed");
        assertEquals(1, listed.size());
        assertEquals(Api.json("[{\"name\":\"files\",\"tools\":[\"echo\",\"fail\",\"boom\",\"write_file\"],"
            + "\"skipped\":[]}]"), sortedTools(listed.get(0).get("data").get("mcp_servers")));
        List<Map<String, String>> requests = mcp.requests();
        assertTrue(requests.stream().allMatch(r -> "Bearer s3cret-files".equals(r.get("authorization"))), requests::toString);
        assertEquals(1, requests.stream().filter(r -> !r.containsKey("mcp-session-id")).count(),
            "one initialize: the session is reused for the run's later requests");
        assertTrue(requests.stream().allMatch(r -> r.get("accept").contains("text/event-stream")));
        assertEquals(List.of("echo", "fail", "boom", "write_file"), mcp.calls().stream().map(FakeMcpServer.ToolCall::name)
            .sorted(java.util.Comparator.comparing(n -> List.of("echo", "fail", "boom", "write_file").indexOf(n))).toList());

        // The call events name the server and its tool; the HTTP tool's do not.
        JsonNode echoStarted = events(http, id, "tool_call.started").stream()
            .filter(e -> e.get("data").get("tool_call_id").asText().equals("c1")).findFirst().orElseThrow();
        assertEquals("files", echoStarted.get("data").get("mcp_server").asText());
        assertEquals("echo", echoStarted.get("data").get("mcp_tool").asText());
        JsonNode failed = events(http, id, "tool_call.finished").stream()
            .filter(e -> e.get("data").get("tool_call_id").asText().equals("c3")).findFirst().orElseThrow();
        assertEquals("failed", failed.get("data").get("outcome").asText());
        assertEquals("files", failed.get("data").get("mcp_server").asText());
        JsonNode plainStarted = events(http, id, "tool_call.started").stream()
            .filter(e -> e.get("data").get("tool_call_id").asText().equals("c2")).findFirst().orElseThrow();
        assertFalse(plainStarted.get("data").has("mcp_server"));

        // The transcript shows the MCP calls as any tool call.
        JsonNode messages = http.get("/v1/runs/" + id + "/messages?limit=100").json().get("data");
        assertTrue(messages.toString().contains("files__echo") && messages.toString().contains("echo: hi"));
      });
    }
  }

  /** The listed event's servers, each with its tool names in a fixed order (the server lists them in any order). */
  private static JsonNode sortedTools(JsonNode servers) {
    List<String> order = List.of("echo", "fail", "boom", "write_file", "hang");
    for (JsonNode s : servers) {
      List<String> names = new ArrayList<>();
      s.get("tools").forEach(t -> names.add(t.asText()));
      names.sort(java.util.Comparator.comparing(order::indexOf));
      com.fasterxml.jackson.databind.node.ArrayNode sorted = ((com.fasterxml.jackson.databind.node.ObjectNode) s)
          .putArray("tools");
      names.forEach(sorted::add);
    }
    return servers;
  }

  @BothDatabases
  void an_mcp_tool_that_requires_approval_pauses_the_run_and_a_hung_one_times_out(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); FakeMcpServer mcp = FakeMcpServer.start();
        Engine engine = engine(api, model, s -> s)) {
      model.script(Reply.toolCalls(ToolCall.of("c1", "files__write_file", Map.of("text", "x")),
              ToolCall.of("c2", "files__echo", Map.of("text", "free"))),
          Reply.toolCalls(ToolCall.of("c3", "files__hang", Map.of())),
          Reply.text("done"));
      api.test(http -> {
        agent(http, "careful", "{\"model\":\"test-model\",\"mcp_servers\":[{\"name\":\"files\",\"url\":\"" + mcp.url()
            + "\",\"requires_approval\":[\"write_file\"],\"timeout_ms\":1500}]}");
        String id = start(http, "careful");
        JsonNode waiting = awaitStatus(http, id, "awaiting_approval");
        assertEquals(Api.json("[{\"id\":\"c1\",\"name\":\"files__write_file\",\"arguments\":{\"text\":\"x\"}}]"),
            waiting.get("approval").get("tool_calls"));
        assertEquals(List.of("echo"), mcp.calls().stream().map(FakeMcpServer.ToolCall::name).toList(),
            "the call that needs no approval ran; write_file waits");
        assertEquals(200, http.post("/v1/runs/" + id + "/approve", "{}").status());
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals("done", run.get("output").asText());
        assertEquals("{\"written\":true}", results(model, 1).get("c1"));
        assertEquals("echo: free", results(model, 1).get("c2"));
        // hang never answered: the call failed at timeout_ms and the run went on.
        assertEquals("the MCP server did not answer within 1500 ms",
            Api.json(results(model, 2).get("c3")).get("error").asText());
      });
    }
  }

  @BothDatabases
  void tools_list_pages_are_followed_and_an_expired_session_is_opened_again(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); PagingMcpServer mcp = new PagingMcpServer(45, 10);
        Engine engine = engine(api, model, s -> s)) {
      AtomicInteger turn = new AtomicInteger();
      model.respondWith(request -> switch (turn.incrementAndGet()) {
        case 1 -> Reply.toolCalls(ToolCall.of("c1", "paged__t44", Map.of()));
        case 2 -> {
          mcp.expireSessions();
          yield Reply.toolCalls(ToolCall.of("c2", "paged__t3", Map.of()));
        }
        default -> Reply.text("done");
      });
      api.test(http -> {
        agent(http, "paged", "{\"model\":\"test-model\",\"mcp_servers\":[{\"name\":\"paged\",\"url\":\"" + mcp.url()
            + "\"}]}");
        String id = start(http, "paged");
        awaitStatus(http, id, "succeeded");
        List<String> offered = toolNames(model.requests().get(0));
        assertEquals(45, offered.size());
        assertEquals("paged__t0", offered.get(0));
        assertEquals("paged__t44", offered.get(44));
        assertEquals("called t44", results(model, 1).get("c1"));
        assertEquals("called t3", results(model, 2).get("c2"));
        assertEquals(List.of("initialize", "notifications/initialized", "tools/list", "tools/list", "tools/list",
            "tools/list", "tools/list", "tools/call", "404 tools/call", "initialize", "notifications/initialized",
            "tools/call"), mcp.methods());
      });
    }
  }

  @BothDatabases
  void a_running_run_keeps_the_tools_listed_at_its_start(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); FakeMcpServer mcp = FakeMcpServer.start();
        Engine engine = engine(api, model, s -> s)) {
      AtomicInteger turn = new AtomicInteger();
      model.respondWith(request -> switch (turn.incrementAndGet()) {
        case 1 -> {
          // The server's tools change while the first run is under way.
          mcp.removeTool("echo");
          mcp.tool("newtool", "New", args -> FakeMcpServer.text("new"));
          yield Reply.toolCalls(ToolCall.of("c1", "files__write_file", Map.of()));
        }
        default -> Reply.text("done");
      });
      api.test(http -> {
        agent(http, "kept", "{\"model\":\"test-model\",\"mcp_servers\":[{\"name\":\"files\",\"url\":\"" + mcp.url()
            + "\"}]}");
        String first = start(http, "kept");
        awaitStatus(http, first, "succeeded");
        assertEquals(toolNames(model.requests().get(0)), toolNames(model.requests().get(1)),
            "the second turn offers the tools listed at the start");
        assertTrue(toolNames(model.requests().get(1)).contains("files__echo"));
        assertFalse(toolNames(model.requests().get(1)).contains("files__newtool"));
        String second = start(http, "kept");
        awaitStatus(http, second, "succeeded");
        List<String> now = toolNames(model.requests().get(2));
        assertTrue(now.contains("files__newtool") && !now.contains("files__echo"), now::toString);
      });
    }
  }

  @BothDatabases
  void an_mcp_server_at_a_refused_address_fails_the_run_with_mcp_server_error(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); FakeMcpServer mcp = FakeMcpServer.start();
        Engine engine = engine(api, model, s -> s.with("engine.http.allow_private_networks", "false"))) {
      model.script(Reply.text("never"));
      api.test(http -> {
        agent(http, "guarded", "{\"model\":\"test-model\",\"mcp_servers\":[{\"name\":\"files\",\"url\":\"" + mcp.url()
            + "\"}]}");
        String id = start(http, "guarded");
        JsonNode run = awaitStatus(http, id, "failed");
        assertEquals("mcp_server_error", run.get("error").get("code").asText());
        assertEquals("files", run.get("error").get("mcp_server").asText());
        assertTrue(run.get("error").get("message").asText().contains("refused to call 127.0.0.1"), run::toString);
        assertEquals(0, model.requestCount(), "no model call: the run failed before its first");
        assertEquals(List.of(), mcp.requests());
      });
    }
  }

  @BothDatabases
  void bad_mcp_servers_are_refused_naming_the_field(Api api) {
    api.test(http -> {
      String ok = "\"name\":\"files\",\"url\":\"https://mcp.example.com/mcp\"";
      String[][] cases = {
          {"[{\"name\":\"files\"}]", "mcp_servers[0].url"},
          {"[{\"name\":\"files\",\"url\":\"ftp://x.example.com\"}]", "mcp_servers[0].url"},
          {"[{\"url\":\"https://mcp.example.com/mcp\"}]", "mcp_servers[0].name"},
          {"[{\"name\":\"a b\",\"url\":\"https://mcp.example.com/mcp\"}]", "mcp_servers[0].name"},
          {"[{\"name\":\"a__b\",\"url\":\"https://mcp.example.com/mcp\"}]", "mcp_servers[0].name"},
          {"[{" + ok + "},{" + ok + "}]", "mcp_servers[1].name"},
          {"[{" + ok + ",\"allowed_tools\":[\"" + "x".repeat(58) + "\"]}]", "mcp_servers[0].allowed_tools[0]"},
          {"[{" + ok + ",\"allowed_tools\":\"echo\"}]", "mcp_servers[0].allowed_tools"},
          {"[{" + ok + ",\"requires_approval\":\"yes\"}]", "mcp_servers[0].requires_approval"},
          {"[{" + ok + ",\"requires_approval\":[1]}]", "mcp_servers[0].requires_approval[0]"},
          {"[{" + ok + ",\"timeout_ms\":0}]", "mcp_servers[0].timeout_ms"},
          {"[{" + ok + ",\"headers\":{\"X\":1}}]", "mcp_servers[0].headers.X"},
          {"[1]", "mcp_servers[0]"},
          {"{}", "mcp_servers"},
      };
      for (String[] c : cases) {
        assertProblem(http.put("/v1/agents/bad", "{\"model\":\"m\",\"mcp_servers\":" + c[0] + "}"), 400,
            "validation_failed", c[1]);
      }
      assertProblem(http.put("/v1/agents/bad", "{\"model\":\"m\",\"mcp_servers\":[{" + ok + ",\"other\":1}]}"), 400,
          "unknown_parameter", "mcp_servers[0].other");
      assertProblem(http.put("/v1/agents/bad", "{\"model\":\"m\",\"tools\":[{\"name\":\"files__x\",\"url\":"
          + "\"https://t.example.com\"}],\"mcp_servers\":[{" + ok + "}]}"), 400, "validation_failed", "mcp_servers[0].name");
      assertEquals(404, http.get("/v1/agents/bad").status(), "nothing was saved");
      // requires_approval: true, and a list of allowed tools, are kept as given.
      Http.Reply put = http.put("/v1/agents/good", "{\"model\":\"m\",\"mcp_servers\":[{" + ok
          + ",\"allowed_tools\":[\"read\",\"read\"],\"requires_approval\":true,\"timeout_ms\":2000}]}");
      assertEquals(201, put.status(), put::toString);
      assertEquals(Api.json("[{\"name\":\"files\",\"url\":\"https://mcp.example.com/mcp\",\"headers\":{},"
          + "\"allowed_tools\":[\"read\"],\"requires_approval\":true,\"timeout_ms\":2000}]"), put.json().get("mcp_servers"));
      assertEquals(Api.json("[]"), http.put("/v1/agents/plain", "{\"model\":\"m\"}").json().get("mcp_servers"));
    });
  }
}
