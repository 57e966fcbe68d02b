package dev.runway.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.http.AuthHandler;
import dev.runway.http.InFlightLimit;
import dev.runway.http.QueryParams;
import dev.runway.http.RequestBodies;
import dev.runway.http.Responses;
import io.javalin.http.Context;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * POST /mcp, MCP's Streamable HTTP transport without a server-to-client stream: each POST carries
 * a JSON-RPC message (or a batch) and is answered with JSON. Stateless: initialize issues an
 * Mcp-Session-Id, which only names the client's session in its calls' idempotency keys.
 */
public final class McpRoutes {
  private static final String SESSION = "Mcp-Session-Id";
  private static final String PROTOCOL_VERSION = "MCP-Protocol-Version";
  private static final Set<String> QUERY = Set.of("project", "wait_s");

  private final McpServer server;
  private final RequestBodies bodies;
  private final InFlightLimit inFlight;
  private final Executor requestThreads;

  /** {@code requestThreads} write the answers of calls that waited (never the thread that found their runs' ends). */
  public McpRoutes(McpServer server, RequestBodies bodies, InFlightLimit inFlight, Executor requestThreads) {
    this.server = server;
    this.bodies = bodies;
    this.inFlight = inFlight;
    this.requestThreads = requestThreads;
  }

  public void post(Context ctx) {
    QueryParams q = QueryParams.of(ctx, QUERY);
    String project = q.slug("project");
    Integer wait = ctx.queryParam("wait_s") == null ? null : q.integer("wait_s", 0, 0, 3600);
    String session = ctx.header(SESSION);
    if (session != null && (session.isEmpty() || session.length() > 200
        || !session.chars().allMatch(c -> c >= 0x21 && c <= 0x7e))) {
      Responses.json(ctx, 400, McpServer.invalidRequest(SESSION + " must be 1-200 visible ASCII characters"));
      return;
    }
    String version = ctx.header(PROTOCOL_VERSION);
    if (version != null && !McpServer.PROTOCOL_VERSIONS.contains(version)) {
      Responses.json(ctx, 400, McpServer.invalidRequest("unsupported " + PROTOCOL_VERSION + " " + version
          + "; this server speaks " + String.join(", ", McpServer.PROTOCOL_VERSIONS)));
      return;
    }
    byte[] body = bodies.requiredBytes(ctx);
    JsonNode message;
    try {
      message = Json.parseUntrusted(body);
    } catch (Json.InvalidJson e) {
      Responses.json(ctx, 400, McpServer.parseError("the body " + e.getMessage()));
      return;
    }
    if (message == null) {
      Responses.json(ctx, 400, McpServer.parseError("the body is empty; send a JSON-RPC message"));
      return;
    }
    McpServer.Call call = new McpServer.Call(AuthHandler.principal(ctx), session, project, wait,
        () -> inFlight.leave(ctx)); // a waiting call holds no place among the requests in flight
    if (message.isArray()) {
      batch(ctx, call, (ArrayNode) message);
      return;
    }
    if (session == null && "initialize".equals(message.path("method").textValue())) {
      ctx.header(SESSION, Ids.newId("mcps"));
    }
    CompletableFuture<JsonNode> answer = server.handle(call, message);
    ctx.future(() -> answer.thenAcceptAsync(a -> {
      if (a == null) {
        ctx.status(202); // a notification, or a client's answer: accepted, nothing to say
      } else {
        Responses.json(ctx, McpServer.unacceptable(a) ? 400 : 200, a);
      }
    }, requestThreads));
  }

  /** A batch (MCP 2025-03-26): the answers to its requests, in its order; 202 when it holds none. */
  private void batch(Context ctx, McpServer.Call call, ArrayNode messages) {
    if (messages.isEmpty()) {
      Responses.json(ctx, 400, McpServer.invalidRequest("an empty batch"));
      return;
    }
    List<CompletableFuture<JsonNode>> answers = new ArrayList<>();
    messages.forEach(m -> answers.add(server.handle(call, m)));
    CompletableFuture<Void> all = CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new));
    ctx.future(() -> all.thenAcceptAsync(done -> {
      ArrayNode out = Json.MAPPER.createArrayNode();
      answers.forEach(a -> {
        JsonNode answer = a.join();
        if (answer != null) {
          out.add(answer);
        }
      });
      if (out.isEmpty()) {
        ctx.status(202);
      } else {
        Responses.json(ctx, 200, out);
      }
    }, requestThreads));
  }
}
