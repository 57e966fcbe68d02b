package dev.runway.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.AgentDefinition;
import dev.runway.core.Json;
import dev.runway.outbound.OutboundHttp;
import dev.runway.secret.SecretSource;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runway as an MCP client over Streamable HTTP (protocol 2025-06-18, and servers that answer
 * 2025-03-26): each JSON-RPC message is a POST accepting {@code application/json} and
 * {@code text/event-stream}, and the answer's JSON-RPC response is read from either. A session is
 * opened with {@code initialize} then {@code notifications/initialized}; its {@code Mcp-Session-Id}
 * goes with every later request of the run to that server, kept in memory (a bounded cache; a
 * restart, or a 404 to a request carrying it, opens a new one). Every request goes through the
 * guarded {@link OutboundHttp} (checked addresses, no redirects, size-capped answers), and no thread
 * waits for an answer.
 */
final class McpClient {
  static final String PROTOCOL_VERSION = "2025-06-18";
  /** Pages of tools/list followed before the listing fails. */
  static final int MAX_PAGES = 20;
  /** The most tools of all the agent's MCP servers offered to the model (OpenAI's limit is 128 tools). */
  static final int MAX_TOOLS = 128;
  /** The most characters of an MCP tool's description kept; longer ones are cut. */
  static final int MAX_DESCRIPTION_CHARS = 1024;
  /** The most characters of an MCP tool's inputSchema; a tool with a larger one is left out. */
  static final int MAX_SCHEMA_CHARS = 16_384;
  /** Sessions kept in memory (run and server); the least recently used is forgotten first. */
  static final int MAX_SESSIONS = 1024;

  /** The tools of one server as listed (name as the server knows it, description, input_schema), or why not. */
  record Listed(List<ObjectNode> tools, List<String> skipped, String error) {}

  /** Why a request got no usable answer; {@code httpStatus} when the server answered with one. */
  static final class Failed extends Exception {
    final Integer httpStatus;

    Failed(Integer httpStatus, String message) {
      super(message, null, false, false);
      this.httpStatus = httpStatus;
    }
  }

  private record Session(String id, String protocolVersion) {}

  /** One operation's target and bound: where, with which headers, until when, and its session key. */
  private record Target(ResolvedCall call, Instant deadline, Duration timeout, String key) {}

  private final OutboundHttp http;
  private final SecretSource secrets;
  private final int maxResponseBytes;
  private final AtomicLong ids = new AtomicLong();
  private final Map<String, Session> sessions = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Session> eldest) {
      return size() > MAX_SESSIONS;
    }
  };

  McpClient(OutboundHttp http, SecretSource secrets, int maxResponseBytes) {
    this.http = http;
    this.secrets = secrets;
    this.maxResponseBytes = maxResponseBytes;
  }

  /**
   * Lists the server's tools (every page, up to {@link #MAX_PAGES}), those allowed_tools lets through;
   * a tool whose {@code <server>__<tool>} breaks the function-name rule, or whose schema is too large,
   * is left out (named in {@code skipped}). Completes normally, within {@code timeout} and a little.
   */
  CompletableFuture<Listed> list(String workspaceId, String runId, AgentDefinition.McpServer server, Duration timeout) {
    Target target;
    try {
      target = target(workspaceId, runId, server, timeout);
    } catch (ResolvedCall.Unresolvable e) {
      return CompletableFuture.completedFuture(new Listed(null, null, e.getMessage()));
    }
    return page(target, server, null, 1, new ArrayList<>(), new ArrayList<>())
        .exceptionally(failure -> new Listed(null, null, message(failure, timeout)));
  }

  private CompletableFuture<Listed> page(Target target, AgentDefinition.McpServer server, String cursor, int page,
      List<ObjectNode> tools, List<String> skipped) {
    ObjectNode params = Json.MAPPER.createObjectNode();
    if (cursor != null) {
      params.put("cursor", cursor);
    }
    return request(target, "tools/list", params).thenCompose(result -> {
      for (JsonNode t : result.path("tools")) {
        String name = t.path("name").asText("");
        if (name.isEmpty() || !server.allows(name)) {
          continue;
        }
        JsonNode schema = t.path("inputSchema");
        if (AgentDefinition.mcpToolName(server.name(), name) == null || !schema.isObject()
            || Json.string(schema).length() > MAX_SCHEMA_CHARS) {
          skipped.add(name.length() > 100 ? name.substring(0, 100) + "…" : name);
          continue;
        }
        String description = t.path("description").asText("");
        ObjectNode tool = Json.MAPPER.createObjectNode().put("name", name).put("description",
            description.length() > MAX_DESCRIPTION_CHARS ? description.substring(0, MAX_DESCRIPTION_CHARS) : description);
        tool.set("input_schema", schema);
        tools.add(tool);
        if (tools.size() > MAX_TOOLS) {
          return CompletableFuture.completedFuture(new Listed(null, null, "it offers more than " + MAX_TOOLS
              + " tools: name the ones the agent needs in allowed_tools"));
        }
      }
      String next = result.path("nextCursor").isTextual() ? result.get("nextCursor").asText() : null;
      if (next == null) {
        return CompletableFuture.completedFuture(new Listed(tools, skipped, null));
      }
      if (page >= MAX_PAGES) {
        return CompletableFuture.completedFuture(new Listed(null, null, "tools/list had more than " + MAX_PAGES
            + " pages"));
      }
      return page(target, server, next, page + 1, tools, skipped);
    });
  }

  /**
   * Calls the server's tool {@code tool} (tools/call) and makes of its answer the result for the
   * model: the text items of {@code content} joined (other items described), {@code structuredContent}
   * when it says more; {@code isError}, a JSON-RPC error, an HTTP error, no answer in time or a
   * refused address are failed results. Completes normally, within {@code timeout} and a little.
   */
  CompletableFuture<AgentToolCaller.Result> call(String workspaceId, String runId, AgentDefinition.McpServer server,
      String tool, JsonNode arguments, Duration timeout) {
    Target target;
    try {
      target = target(workspaceId, runId, server, timeout);
    } catch (ResolvedCall.Unresolvable e) {
      return CompletableFuture.completedFuture(new AgentToolCaller.Result(false, null, null,
          "the MCP server could not be called: " + e.getMessage()));
    }
    ObjectNode params = Json.MAPPER.createObjectNode().put("name", tool);
    params.set("arguments", arguments);
    return request(target, "tools/call", params).handle((result, failure) -> {
      if (failure != null) {
        Throwable cause = unwrap(failure);
        Integer status = cause instanceof Failed f ? f.httpStatus : null;
        return new AgentToolCaller.Result(false, status, null, message(failure, timeout));
      }
      String content = content(result);
      if (result.path("isError").asBoolean(false)) {
        return new AgentToolCaller.Result(false, null, null, "the MCP tool reported an error: " + content);
      }
      return new AgentToolCaller.Result(true, null, content, null);
    });
  }

  /** The result's content for the model. */
  static String content(JsonNode result) {
    List<String> parts = new ArrayList<>();
    for (JsonNode item : result.path("content")) {
      String type = item.path("type").asText("");
      switch (type) {
        case "text" -> parts.add(item.path("text").asText(""));
        case "image", "audio" -> parts.add("[" + type + " content, " + item.path("mimeType").asText("no type")
            + ", not shown]");
        case "resource" -> {
          JsonNode resource = item.path("resource");
          parts.add(resource.has("text") ? resource.get("text").asText()
              : "[resource " + resource.path("uri").asText("") + ", not shown]");
        }
        case "resource_link" -> parts.add("[resource link " + item.path("uri").asText("")
            + (item.has("name") ? " (" + item.get("name").asText() + ")" : "") + "]");
        default -> parts.add("[" + (type.isEmpty() ? "untyped" : type) + " content, not shown]");
      }
    }
    String text = String.join("\n", parts);
    JsonNode structured = result.get("structuredContent");
    if (structured != null && !structured.isNull()) {
      if (text.isBlank()) {
        return Json.string(structured);
      }
      if (!sameJson(text, structured)) {
        text += "\n" + Json.string(structured);
      }
    }
    return text.isEmpty() ? "(the MCP tool returned no content)" : text;
  }

  private static boolean sameJson(String text, JsonNode value) {
    try {
      return Json.parseUntrusted(text.getBytes(StandardCharsets.UTF_8)).equals(value);
    } catch (Json.InvalidJson e) {
      return false;
    }
  }

  private Target target(String workspaceId, String runId, AgentDefinition.McpServer server, Duration timeout)
      throws ResolvedCall.Unresolvable {
    ResolvedCall call = ResolvedCall.of(secrets, workspaceId, server.url(), server.headers(), server.secretNames());
    return new Target(call, Instant.now().plus(timeout), timeout, runId + "\n" + server.name());
  }

  /** A request in the run's session with the server (opened first if there is none); its JSON-RPC result. */
  private CompletableFuture<JsonNode> request(Target target, String method, JsonNode params) {
    Session known;
    synchronized (sessions) {
      known = sessions.get(target.key());
    }
    if (known == null) {
      return initialize(target).thenCompose(session -> send(target, session, method, params));
    }
    return send(target, known, method, params).handle((result, failure) -> {
      if (failure == null) {
        return CompletableFuture.completedFuture(result);
      }
      if (known.id() != null && unwrap(failure) instanceof Failed f && f.httpStatus != null && f.httpStatus == 404) {
        // The server no longer knows the session (it expired, or the server restarted): a new one, once.
        forget(target, known);
        return initialize(target).thenCompose(session -> send(target, session, method, params));
      }
      return CompletableFuture.<JsonNode>failedFuture(failure);
    }).thenCompose(f -> f);
  }

  private void forget(Target target, Session session) {
    synchronized (sessions) {
      sessions.remove(target.key(), session);
    }
  }

  /** initialize, then notifications/initialized; the session is kept for the run's later requests. */
  private CompletableFuture<Session> initialize(Target target) {
    ObjectNode params = Json.MAPPER.createObjectNode().put("protocolVersion", PROTOCOL_VERSION);
    params.putObject("capabilities");
    params.putObject("clientInfo").put("name", "runway").put("version", "1");
    long id = ids.incrementAndGet();
    ObjectNode message = rpc(id, "initialize", params);
    return post(target, null, message).thenCompose(answer -> {
      JsonNode result = result(answer, id);
      String version = result.path("protocolVersion").asText(PROTOCOL_VERSION);
      Session session = new Session(answer.sessionId(), version);
      ObjectNode initialized = Json.MAPPER.createObjectNode().put("jsonrpc", "2.0")
          .put("method", "notifications/initialized");
      return post(target, session, initialized).thenApply(ack -> {
        if (ack.status() < 200 || ack.status() > 299) {
          throw new java.util.concurrent.CompletionException(new Failed(ack.status(), "the MCP server answered HTTP "
              + ack.status() + " to notifications/initialized"));
        }
        synchronized (sessions) {
          sessions.put(target.key(), session);
        }
        return session;
      });
    });
  }

  private CompletableFuture<JsonNode> send(Target target, Session session, String method, JsonNode params) {
    long id = ids.incrementAndGet();
    return post(target, session, rpc(id, method, params)).thenApply(answer -> result(answer, id));
  }

  private static ObjectNode rpc(long id, String method, JsonNode params) {
    ObjectNode message = Json.MAPPER.createObjectNode().put("jsonrpc", "2.0").put("id", id).put("method", method);
    message.set("params", params);
    return message;
  }

  private CompletableFuture<OutboundHttp.Answer> post(Target target, Session session, ObjectNode message) {
    Duration left = Duration.between(Instant.now(), target.deadline());
    if (left.isNegative() || left.isZero()) {
      return CompletableFuture.failedFuture(new Failed(null, "the MCP server did not answer within "
          + target.timeout().toMillis() + " ms"));
    }
    Map<String, String> headers = new LinkedHashMap<>(target.call().headers());
    headers.put("Content-Type", "application/json");
    headers.put("Accept", "application/json, text/event-stream");
    if (session != null) {
      headers.put("MCP-Protocol-Version", session.protocolVersion());
      if (session.id() != null) {
        headers.put("Mcp-Session-Id", session.id());
      }
    }
    return http.send(new OutboundHttp.Call("POST", target.call().uri(), headers, Json.bytes(message), left,
        maxResponseBytes));
  }

  /** The JSON-RPC result of request {@code id} in the answer (JSON, or an SSE stream carrying it). */
  private JsonNode result(OutboundHttp.Answer answer, long id) {
    String text = new String(answer.body(), StandardCharsets.UTF_8);
    if (answer.status() < 200 || answer.status() > 299) {
      String snippet = text.replaceAll("\\s+", " ").trim();
      throw new java.util.concurrent.CompletionException(new Failed(answer.status(), "the MCP server answered HTTP "
          + answer.status() + (snippet.isEmpty() ? "" : ": " + abbreviate(snippet, 300))));
    }
    if (answer.cut()) {
      throw new java.util.concurrent.CompletionException(new Failed(null, "the MCP server's answer passed "
          + maxResponseBytes + " bytes"));
    }
    String type = answer.contentType() == null ? "" : answer.contentType().toLowerCase(java.util.Locale.ROOT);
    List<JsonNode> messages = new ArrayList<>();
    try {
      if (type.startsWith("text/event-stream")) {
        for (String data : sseData(text)) {
          messages.add(Json.parseUntrusted(data.getBytes(StandardCharsets.UTF_8)));
        }
      } else {
        messages.add(Json.parseUntrusted(answer.body()));
      }
    } catch (Json.InvalidJson e) {
      throw new java.util.concurrent.CompletionException(new Failed(null, "the MCP server's answer is not JSON-RPC: "
          + e.getMessage()));
    }
    for (JsonNode m : messages) {
      for (JsonNode one : m.isArray() ? (ArrayNode) m : List.of(m)) {
        if (!one.path("id").isIntegralNumber() || one.get("id").asLong() != id) {
          continue; // a request or notification of the server's, or another response
        }
        if (one.has("error")) {
          JsonNode error = one.get("error");
          throw new java.util.concurrent.CompletionException(new Failed(null, "the MCP server answered JSON-RPC error "
              + error.path("code").asText("?") + ": " + abbreviate(error.path("message").asText(""), 300)));
        }
        if (one.get("result") != null && one.get("result").isObject()) {
          return one.get("result");
        }
      }
    }
    throw new java.util.concurrent.CompletionException(new Failed(null, "the MCP server's answer (HTTP "
        + answer.status() + ") held no JSON-RPC response to the request"));
  }

  /** The data of each event of an SSE stream (lines "data:" joined with newlines; events end at a blank line). */
  static List<String> sseData(String stream) {
    List<String> events = new ArrayList<>();
    StringBuilder data = null;
    for (String line : stream.split("\r\n|\r|\n", -1)) {
      if (line.isEmpty()) {
        if (data != null) {
          events.add(data.toString());
        }
        data = null;
      } else if (line.startsWith("data")) {
        String value = line.length() > 4 && line.charAt(4) == ':' ? line.substring(5) : line.equals("data") ? "" : null;
        if (value == null) {
          continue;
        }
        if (value.startsWith(" ")) {
          value = value.substring(1);
        }
        data = data == null ? new StringBuilder(value) : data.append('\n').append(value);
      }
    }
    if (data != null) {
      events.add(data.toString());
    }
    events.removeIf(String::isBlank);
    return events;
  }

  private static Throwable unwrap(Throwable failure) {
    Throwable t = failure;
    while ((t instanceof java.util.concurrent.CompletionException || t instanceof java.util.concurrent.ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /** What the model (or the run's error) is told of a failure; it names no address and no secret. */
  private static String message(Throwable failure, Duration timeout) {
    Throwable cause = unwrap(failure);
    if (cause instanceof Failed f) {
      return f.getMessage();
    }
    if (cause instanceof OutboundHttp.NoAnswer none) {
      return none.failure() == OutboundHttp.Failure.TIMEOUT
          ? "the MCP server did not answer within " + timeout.toMillis() + " ms" : none.getMessage();
    }
    return "the MCP server could not be called: " + cause.getClass().getSimpleName();
  }

  private static String abbreviate(String text, int max) {
    return text.length() <= max ? text : text.substring(0, max) + "…";
  }
}
