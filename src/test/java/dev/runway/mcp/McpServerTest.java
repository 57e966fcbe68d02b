package dev.runway.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.Scope;
import dev.runway.engine.Engine;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.json.schema.JsonSchemaValidator;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** POST /mcp through the official MCP Java SDK's client (and raw JSON-RPC where the SDK would hide it). */
class McpServerTest {

  private static McpSyncClient client(Http http, String key) {
    HttpClientStreamableHttpTransport transport = HttpClientStreamableHttpTransport.builder(http.origin())
        .endpoint("/mcp")
        .requestBuilder(HttpRequest.newBuilder().header("Authorization", "Bearer " + key))
        .build();
    // The tools declare no outputSchema, so nothing is validated; the SDK's own validator needs a
    // json-schema-validator 2 beside the server's 1.5.
    McpSyncClient client = McpClient.sync(transport).requestTimeout(Duration.ofSeconds(20))
        .jsonSchemaValidator((schema, content) -> JsonSchemaValidator.ValidationResponse.asValid(null)).build();
    client.initialize();
    return client;
  }

  private static McpSchema.CallToolResult call(McpSyncClient client, String tool, Map<String, Object> arguments,
      Map<String, Object> meta) {
    return client.callTool(McpSchema.CallToolRequest.builder(tool).arguments(arguments).meta(meta).build());
  }

  private static String text(McpSchema.CallToolResult result) {
    return ((McpSchema.TextContent) result.content().get(0)).text();
  }

  private static Http.Reply rpc(Http http, String key, String body, String... headers) {
    return http.post("/mcp", key, body, headers);
  }

  @BothDatabases
  void a_client_initializes_lists_the_workspaces_tools_and_calls_a_workflow_without_steps(Api api) {
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/greet", "{\"name\":\"Greet\",\"description\":\"Says hello.\","
          + "\"inputs_schema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},\"required\":[\"name\"]},"
          + "\"output\":{\"greeting\":\"{{ 'Hello, ' + inputs.name }}\"}}").status());
      assertEquals(201, http.put("/v1/workflows/plain", "{}").status());
      assertEquals(201, http.put("/v1/workflows/gone", "{}").status());
      assertEquals(200, http.delete("/v1/workflows/gone").status());
      assertEquals(201, http.put("/v1/agents/clock", Files.readString(Path.of("config/agents/clock.json"))).status());
      try (McpSyncClient client = client(http, api.key)) {
        McpSchema.InitializeResult init = client.getCurrentInitializationResult();
        assertEquals("runway", init.serverInfo().name());
        assertFalse(init.serverInfo().version().isEmpty());
        assertEquals("2025-11-25", init.protocolVersion());
        assertNotNull(init.capabilities().tools());
        client.ping();

        McpSchema.ListToolsResult tools = client.listTools();
        List<String> names = tools.tools().stream().map(McpSchema.Tool::name).toList();
        assertEquals(List.of("workflow_greet", "workflow_plain", "agent_clock"), names, "archived ones are left out");
        McpSchema.Tool greet = tools.tools().get(0);
        assertEquals("Greet", greet.title());
        assertTrue(greet.description().startsWith("Greet: Says hello."), greet.description());
        assertEquals(List.of("name"), greet.inputSchema().get("required"), "the workflow's inputs_schema");
        assertEquals(Map.of("type", "object"), tools.tools().get(1).inputSchema(), "no inputs_schema: any object");
        assertEquals(List.of("input"), tools.tools().get(2).inputSchema().get("required"));

        McpSchema.CallToolResult result = call(client, "workflow_greet", Map.of("name", "Ada"), Map.of());
        assertFalse(result.isError());
        assertEquals("{\"greeting\":\"Hello, Ada\"}", text(result));
        assertEquals(Map.of("greeting", "Hello, Ada"), result.structuredContent());
        String runId = (String) result.meta().get("runway/run_id");
        assertEquals("succeeded", result.meta().get("runway/status"));
        JsonNode run = http.get("/v1/runs/" + runId).json();
        assertEquals("succeeded", run.get("status").asText());
        assertEquals("mcp", run.get("project").asText(), "the default project");
        assertEquals("Ada", run.get("inputs").get("name").asText());

        McpSchema.CallToolResult plain = call(client, "workflow_plain", Map.of(), Map.of("runway/project", "demo"));
        assertEquals(java.util.Collections.singletonMap("output", null), plain.structuredContent());
        assertEquals("demo", http.get("/v1/runs/" + plain.meta().get("runway/run_id")).json().get("project").asText());

        McpSchema.CallToolResult broken = call(client, "workflow_greet", Map.of("name", 7), Map.of());
        assertTrue(broken.isError(), "inputs that break the schema are a tool error the model can mend");
        assertTrue(text(broken).contains("name"), text(broken));

        McpError unknown = assertThrows(McpError.class, () -> call(client, "workflow_gone", Map.of(), Map.of()));
        assertEquals(-32602, unknown.getJsonRpcError().code());
        assertEquals(-32602, assertThrows(McpError.class, () -> call(client, "nothing", Map.of(), Map.of()))
            .getJsonRpcError().code());
      }
      assertEquals(2, countRuns(api), "the refused call started none");
    });
  }

  @BothDatabases
  void a_run_that_fails_is_a_tool_error_and_one_past_the_wait_answers_its_record(Api api) throws Exception {
    try (Engine engine = api.database().startEngine()) {
      test_failed_and_waiting(api);
    }
  }

  private static void test_failed_and_waiting(Api api) {
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/broken", "{\"output\":{\"x\":\"{{ inputs.nothing.here }}\"}}").status());
      assertEquals(201, http.put("/v1/workflows/gated", "{\"requires_approval\":true,\"output\":\"{{ 'ok' }}\"}").status());
      try (McpSyncClient client = client(http, api.key)) {
        McpSchema.CallToolResult failed = call(client, "workflow_broken", Map.of(), Map.of());
        assertTrue(failed.isError());
        assertEquals("failed", failed.meta().get("runway/status"));
        assertTrue(text(failed).contains("expression_failed"), text(failed));

        long before = System.nanoTime();
        McpSchema.CallToolResult waiting = call(client, "workflow_gated", Map.of(), Map.of("runway/wait_s", 0.3));
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before);
        assertTrue(tookMs >= 250, "it waited: " + tookMs + " ms");
        assertFalse(waiting.isError());
        assertEquals("awaiting_approval", waiting.meta().get("runway/status"));
        @SuppressWarnings("unchecked")
        Map<String, Object> record = (Map<String, Object>) waiting.structuredContent();
        assertEquals(waiting.meta().get("runway/run_id"), record.get("id"));
        assertEquals("awaiting_approval", record.get("status"));
        assertTrue(text(waiting).contains("GET /v1/runs/"), text(waiting));

        // A call whose run ends while it waits is answered at once, woken by the commit that ended it.
        CompletableFuture<McpSchema.CallToolResult> later = CompletableFuture.supplyAsync(
            () -> call(client, "workflow_gated", Map.of(), Map.of("runway/wait_s", 15)));
        String second = awaitWaitingRun(http, "gated", (String) waiting.meta().get("runway/run_id"));
        long approved = System.nanoTime();
        assertEquals(200, http.post("/v1/runs/" + second + "/approve", "{}").status());
        McpSchema.CallToolResult done = later.get(10, TimeUnit.SECONDS);
        assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - approved) < 5000);
        assertEquals(second, done.meta().get("runway/run_id"));
        assertEquals("succeeded", done.meta().get("runway/status"));
        assertEquals("ok", text(done));
      }
    });
  }

  /** The id of the newest run of {@code workflow} other than {@code other}, once it waits for approval. */
  private static String awaitWaitingRun(Http http, String workflow, String other) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      for (JsonNode run : http.get("/v1/runs?workflow=" + workflow + "&status=awaiting_approval").json().get("data")) {
        if (!run.get("id").asText().equals(other)) {
          return run.get("id").asText();
        }
      }
      Thread.sleep(20);
    }
    throw new AssertionError("no second run of " + workflow + " waits for approval");
  }

  @BothDatabases
  void an_agent_is_a_tool_whose_call_answers_the_agents_output(Api api) throws Exception {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        assertEquals(201, http.put("/v1/agents/clock", Files.readString(Path.of("config/agents/clock.json"))).status());
        try (McpSyncClient client = client(http, api.key)) {
          McpSchema.CallToolResult result = call(client, "agent_clock", Map.of("input", "Europe/Paris"), Map.of());
          assertFalse(result.isError(), () -> result.toString());
          assertEquals("succeeded", result.meta().get("runway/status"));
          assertTrue(text(result).contains("\"timezone\":\"Europe/Paris\""), text(result));
          JsonNode run = http.get("/v1/runs/" + result.meta().get("runway/run_id")).json();
          assertEquals("agent", run.get("kind").asText());
          assertEquals(run.get("output").asText(), text(result));

          McpSchema.CallToolResult bad = call(client, "agent_clock", Map.of("prompt", "x"), Map.of());
          assertTrue(bad.isError(), "an agent takes input alone");
        }
      });
    }
  }

  @BothDatabases
  void tools_list_pages_when_there_are_more_tools_than_a_page(Api api) {
    api.testWith(s -> s.with("mcp.tools_page_size", "3"), http -> {
      List<String> expected = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        api.workflow("wf-" + i, false);
        expected.add("workflow_wf-" + i);
      }
      for (String agent : List.of("a1", "a2")) {
        assertEquals(201, http.put("/v1/agents/" + agent, Files.readString(Path.of("config/agents/clock.json"))).status());
        expected.add("agent_" + agent);
      }
      try (McpSyncClient client = client(http, api.key)) {
        McpSchema.ListToolsResult first = client.listTools(null);
        assertEquals(3, first.tools().size());
        assertNotNull(first.nextCursor());
        McpSchema.ListToolsResult second = client.listTools(first.nextCursor());
        assertEquals(List.of("workflow_wf-3", "workflow_wf-4", "agent_a1"),
            second.tools().stream().map(McpSchema.Tool::name).toList());
        McpSchema.ListToolsResult third = client.listTools(second.nextCursor());
        assertEquals(List.of("agent_a2"), third.tools().stream().map(McpSchema.Tool::name).toList());
        assertNull(third.nextCursor());
        assertEquals(expected, client.listTools().tools().stream().map(McpSchema.Tool::name).toList(),
            "the SDK's listTools() follows the cursors");
        assertEquals(-32602, assertThrows(McpError.class, () -> client.listTools("bm90LWEtY3Vyc29y"))
            .getJsonRpcError().code());
      }
    });
  }

  @BothDatabases
  void a_runs_read_key_lists_but_cannot_call_and_a_project_key_calls_in_its_projects(Api api) {
    api.test(http -> {
      api.workflow("hello", false);
      try (McpSyncClient reader = client(http, api.key(Scope.RUNS_READ))) {
        assertEquals(1, reader.listTools().tools().size());
        McpError refused = assertThrows(McpError.class, () -> call(reader, "workflow_hello", Map.of(), Map.of()));
        assertEquals(-32000, refused.getJsonRpcError().code());
        assertTrue(refused.getMessage().contains("runs:write"), refused.getMessage());
        assertEquals("insufficient_scope", ((Map<?, ?>) refused.getJsonRpcError().data()).get("code"));
      }
      String limited = api.keyForProjects("alpha", "beta");
      try (McpSyncClient client = client(http, limited)) {
        McpError refused = assertThrows(McpError.class, () -> call(client, "workflow_hello", Map.of(), Map.of()));
        assertEquals("project_forbidden", ((Map<?, ?>) refused.getJsonRpcError().data()).get("code"));
        assertTrue(refused.getMessage().contains("'mcp'"), refused.getMessage());
        assertEquals("project_forbidden", ((Map<?, ?>) assertThrows(McpError.class,
            () -> call(client, "workflow_hello", Map.of(), Map.of("runway/project", "gamma"))).getJsonRpcError().data())
            .get("code"));
        McpSchema.CallToolResult ok = call(client, "workflow_hello", Map.of(), Map.of("runway/project", "beta"));
        assertEquals("beta", http.get("/v1/runs/" + ok.meta().get("runway/run_id")).json().get("project").asText());
      }
      String single = api.keyForProjects("solo");
      try (McpSyncClient client = client(http, single)) {
        McpSchema.CallToolResult ok = call(client, "workflow_hello", Map.of(), Map.of());
        assertEquals("solo", http.get("/v1/runs/" + ok.meta().get("runway/run_id")).json().get("project").asText(),
            "a key of one project calls in it");
      }
      assertEquals(2, countRuns(api));
    });
  }

  @BothDatabases
  void a_key_of_another_workspace_sees_only_its_own_tools(Api api) {
    api.test(http -> {
      api.workflow("ours", false);
      String other = Api.newWorkspaceId();
      String theirKey = api.keyIn(other, null, Scope.values());
      api.workflowIn(other, "theirs", false);
      try (McpSyncClient client = client(http, theirKey)) {
        assertEquals(List.of("workflow_theirs"),
            client.listTools().tools().stream().map(McpSchema.Tool::name).toList());
        assertEquals(-32602, assertThrows(McpError.class, () -> call(client, "workflow_ours", Map.of(), Map.of()))
            .getJsonRpcError().code());
      }
    });
  }

  @BothDatabases
  void the_same_request_id_twice_starts_one_run(Api api) {
    api.test(http -> {
      api.workflow("hello", false);
      String call = "{\"jsonrpc\":\"2.0\",\"id\":\"call-1\",\"method\":\"tools/call\",\"params\":"
          + "{\"name\":\"workflow_hello\",\"arguments\":{}}}";
      Http.Reply first = rpc(http, api.key, call);
      assertEquals(200, first.status(), first::toString);
      assertTrue(first.header("Content-Type").startsWith("application/json"));
      JsonNode answer = first.json();
      assertEquals("call-1", answer.get("id").asText());
      String runId = answer.get("result").get("_meta").get("runway/run_id").asText();
      Http.Reply again = rpc(http, api.key, call);
      assertEquals(runId, again.json().get("result").get("_meta").get("runway/run_id").asText());
      assertEquals(1, countRuns(api));

      // Another request id, or the same id in another session: another run.
      Http.Reply other = rpc(http, api.key, call.replace("call-1", "call-2"));
      Http.Reply session = rpc(http, api.key, call, "Mcp-Session-Id", "mcps_other");
      assertFalse(runId.equals(other.json().get("result").get("_meta").get("runway/run_id").asText()));
      assertFalse(runId.equals(session.json().get("result").get("_meta").get("runway/run_id").asText()));
      assertEquals(3, countRuns(api));

      // The same id with other arguments: refused as the API refuses a reused Idempotency-Key.
      JsonNode mismatch = rpc(http, api.key, call.replace("{}}}", "{\"x\":1}}}")).json();
      assertEquals(-32000, mismatch.get("error").get("code").asInt(), mismatch::toString);
      assertEquals("idempotency_key_mismatch", mismatch.get("error").get("data").get("code").asText());
      assertEquals(3, countRuns(api));
    });
  }

  @BothDatabases
  void broken_json_rpc_gets_json_rpc_errors_and_no_key_gets_401(Api api) {
    api.test(http -> {
      Http.Reply parse = rpc(http, api.key, "{\"jsonrpc\":");
      assertEquals(400, parse.status());
      assertEquals(-32700, parse.json().get("error").get("code").asInt());
      assertTrue(parse.json().get("id").isNull());

      JsonNode unknown = rpc(http, api.key, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}").json();
      assertEquals(-32601, unknown.get("error").get("code").asInt());
      assertEquals(1, unknown.get("id").asInt());

      JsonNode params = rpc(http, api.key, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
          + "{\"name\":7}}").json();
      assertEquals(-32602, params.get("error").get("code").asInt());
      JsonNode args = rpc(http, api.key, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
          + "{\"name\":\"workflow_x\",\"arguments\":[1]}}").json();
      assertEquals(-32602, args.get("error").get("code").asInt());
      JsonNode noVersion = rpc(http, api.key, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{}}").json();
      assertEquals(-32602, noVersion.get("error").get("code").asInt());

      Http.Reply invalid = rpc(http, api.key, "{\"id\":5,\"method\":\"ping\"}");
      assertEquals(400, invalid.status());
      assertEquals(-32600, invalid.json().get("error").get("code").asInt());

      Http.Reply notification = rpc(http, api.key, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
      assertEquals(202, notification.status());
      assertTrue(notification.body().isEmpty());

      Http.Reply batch = rpc(http, api.key, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
          + "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}]");
      assertEquals(200, batch.status());
      assertEquals(2, batch.json().size());
      assertTrue(batch.json().get(0).get("result").isObject());
      assertEquals(-32601, batch.json().get(1).get("error").get("code").asInt());

      Http.Reply init = rpc(http, api.key, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
          + "{\"protocolVersion\":\"2024-01-01\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
      assertEquals("2025-11-25", init.json().get("result").get("protocolVersion").asText(), "an unknown version: the newest");
      assertTrue(init.header("Mcp-Session-Id").startsWith("mcps_"), init::toString);
      Http.Reply badVersion = rpc(http, api.key, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
          "MCP-Protocol-Version", "1999-01-01");
      assertEquals(400, badVersion.status());

      Http.Reply noKey = http.send("POST", "/mcp", null, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
          "application/json");
      assertEquals(401, noKey.status());
      assertEquals("Bearer", noKey.header("WWW-Authenticate"));
      assertEquals(405, http.get("/mcp").status(), "no server-to-client stream");
    });
  }

  /**
   * A call waiting on one instance answers the run's output when another instance ends the run: the
   * signal the run waits for goes to the second instance, whose commit the first sees at its next
   * poll (mcp.poll_interval_ms), well within the call's wait.
   */
  @Test
  void a_call_waiting_on_one_instance_answers_when_another_instance_ends_its_run() throws Exception {
    Assumptions.assumeTrue(TestDatabase.postgresReachable() || TestDatabase.PG_REQUIRED, "PostgreSQL is not reachable");
    Api api = Api.on(TestDatabase.POSTGRESQL);
    api.testTwoInstances((first, second) -> {
      assertEquals(201, first.put("/v1/workflows/gate", "{\"steps\":[{\"id\":\"approval\",\"type\":\"wait\","
          + "\"signal\":\"go\",\"timeout_s\":600}],\"output\":{\"decided\":\"{{ signal.by }}\"}}").status());
      try (McpSyncClient client = client(first, api.key)) {
        CompletableFuture<McpSchema.CallToolResult> waiting = CompletableFuture.supplyAsync(() ->
            call(client, "workflow_gate", Map.of(), Map.of("runway/wait_s", 30)));
        String run = null;
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (run == null) {
          JsonNode runs = second.get("/v1/runs?workflow=gate").json().get("data");
          if (runs.size() == 1 && runs.get(0).get("steps").get(0).get("status").asText().equals("waiting")) {
            run = runs.get(0).get("id").asText();
          } else {
            assertTrue(System.nanoTime() < until, "the call's run never waited for its signal: " + runs);
            Thread.sleep(50);
          }
        }
        assertFalse(waiting.isDone(), "the call waits for the run");
        Http.Reply signaled = second.post("/v1/runs/" + run + "/signals/go", "{\"by\":\"second\"}");
        assertEquals(202, signaled.status(), signaled::toString);
        McpSchema.CallToolResult result = waiting.get(25, TimeUnit.SECONDS);
        assertFalse(result.isError());
        assertEquals("succeeded", result.meta().get("runway/status"), result::toString);
        assertEquals(run, result.meta().get("runway/run_id"));
        assertEquals(Map.of("decided", "second"), result.structuredContent());
      }
    });
  }

  private static int countRuns(Api api) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM run WHERE workspace_id = :ws")
        .bind("ws", api.workspace).mapTo(Integer.class).one());
  }
}
