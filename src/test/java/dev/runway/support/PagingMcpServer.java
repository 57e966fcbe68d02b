package dev.runway.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.runway.core.Json;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * A hand-written MCP server (Streamable HTTP, plain application/json answers) whose tools/list
 * answers in pages of {@code pageSize} with nextCursor, which the SDK's server does not do. Tools
 * are named t0, t1, …; a call of one answers "called tN". {@link #expireSessions} makes it forget
 * its sessions (it then answers 404 to them, as the spec says).
 */
public final class PagingMcpServer implements AutoCloseable {
  private final LoopbackHttp http;
  private final int tools;
  private final int pageSize;
  private final Set<String> sessions = Collections.synchronizedSet(new HashSet<>());
  private final List<String> methods = Collections.synchronizedList(new ArrayList<>());

  public PagingMcpServer(int tools, int pageSize) {
    this.tools = tools;
    this.pageSize = pageSize;
    this.http = LoopbackHttp.serve("paging-mcp", this::handle);
  }

  public String url() {
    return "http://127.0.0.1:" + http.port() + "/mcp";
  }

  /** The JSON-RPC methods received, in order ("404 tools/call": refused for an unknown session). */
  public List<String> methods() {
    synchronized (methods) {
      return List.copyOf(methods);
    }
  }

  public void expireSessions() {
    sessions.clear();
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      JsonNode message = Json.tree(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
      String method = message.path("method").asText();
      String session = exchange.getRequestHeaders().getFirst("Mcp-Session-Id");
      if (method.equals("initialize")) {
        String id = UUID.randomUUID().toString();
        sessions.add(id);
        methods.add(method);
        exchange.getResponseHeaders().add("Mcp-Session-Id", id);
        ObjectNode result = Json.MAPPER.createObjectNode().put("protocolVersion", "2025-03-26");
        result.putObject("capabilities").putObject("tools");
        result.putObject("serverInfo").put("name", "paging").put("version", "1");
        answer(exchange, 200, response(message, result));
        return;
      }
      if (session == null || !sessions.contains(session)) {
        methods.add("404 " + method);
        answer(exchange, 404, "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32001,\"message\":\"Session not found\"}}");
        return;
      }
      methods.add(method);
      if (method.startsWith("notifications/")) {
        exchange.sendResponseHeaders(202, -1);
        return;
      }
      ObjectNode result = Json.MAPPER.createObjectNode();
      if (method.equals("tools/list")) {
        int from = message.path("params").path("cursor").asInt(0);
        ArrayNode list = result.putArray("tools");
        for (int i = from; i < Math.min(tools, from + pageSize); i++) {
          ObjectNode tool = list.addObject().put("name", "t" + i).put("description", "Tool " + i);
          tool.putObject("inputSchema").put("type", "object").putObject("properties");
        }
        if (from + pageSize < tools) {
          result.put("nextCursor", String.valueOf(from + pageSize));
        }
      } else if (method.equals("tools/call")) {
        result.putArray("content").addObject().put("type", "text")
            .put("text", "called " + message.path("params").path("name").asText());
      }
      answer(exchange, 200, response(message, result));
    }
  }

  private static String response(JsonNode request, JsonNode result) {
    ObjectNode response = Json.MAPPER.createObjectNode().put("jsonrpc", "2.0");
    response.set("id", request.get("id"));
    response.set("result", result);
    return Json.string(response);
  }

  private static void answer(HttpExchange exchange, int status, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().add("Content-Type", "application/json");
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public void close() {
    http.close();
  }
}
