package dev.runway.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.auth.Scope;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.Sha256;
import dev.runway.core.Slugs;
import dev.runway.http.ErrorMapper;
import dev.runway.run.Run;
import dev.runway.run.RunStarts;
import dev.runway.run.RunView;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The MCP server's methods over JSON-RPC 2.0 (initialize, ping, tools/list, tools/call), one
 * message at a time, without HTTP: a tools/call starts a workflow or agent run through RunStarts,
 * idempotent on the session and request id per API key, and answers once the run has ended or the
 * call's wait is over.
 */
public final class McpServer {
  /** The protocol versions this server speaks, newest last; an unknown one is answered with the newest. */
  public static final List<String> PROTOCOL_VERSIONS = List.of("2025-03-26", "2025-06-18", "2025-11-25");
  /** _meta keys of a tools/call (and of its result). */
  static final String META_PROJECT = "runway/project";
  static final String META_WAIT = "runway/wait_s";
  static final String META_RUN_ID = "runway/run_id";
  static final String META_STATUS = "runway/status";

  private final RunStarts starts;
  private final RunWaits waits;
  private final McpTools tools;
  private final McpSettings settings;
  private final String version;

  public McpServer(RunStarts starts, RunWaits waits, dev.runway.workflow.WorkflowService workflows,
      dev.runway.agent.AgentService agents, McpSettings settings, long maxPageBytes, String version) {
    this.starts = starts;
    this.waits = waits;
    this.settings = settings;
    this.version = version;
    this.tools = new McpTools(workflows, agents, settings.toolsPageSize(), maxPageBytes);
  }

  /**
   * Who calls and how: the key, the session (null without one), the project and wait from the
   * endpoint's URL (null: none), and what to do before a call starts to wait (leave the requests
   * in flight).
   */
  public record Call(Principal caller, String sessionId, String project, Integer waitSeconds, Runnable beforeWaiting) {}

  /**
   * The answer to one JSON-RPC message: a response object, or null for a notification (or a
   * response the client sent). A malformed message is answered with an error whose id is null.
   */
  public CompletableFuture<JsonNode> handle(Call call, JsonNode message) {
    JsonNode id = null;
    try {
      if (!message.isObject()) {
        throw JsonRpcError.invalidRequest("a JSON-RPC message must be an object, not " + Json.kindOf(message));
      }
      JsonNode rawId = message.get("id");
      if (rawId != null && (rawId.isTextual() || rawId.isIntegralNumber())) {
        id = rawId;
      }
      if (!"2.0".equals(message.path("jsonrpc").textValue())) {
        throw JsonRpcError.invalidRequest("jsonrpc must be \"2.0\"");
      }
      JsonNode method = message.get("method");
      if (method == null) {
        if (message.has("result") || message.has("error")) {
          return CompletableFuture.completedFuture(null); // a client's answer: this server asks nothing
        }
        throw JsonRpcError.invalidRequest("a JSON-RPC request needs a method");
      }
      if (!method.isTextual()) {
        throw JsonRpcError.invalidRequest("method must be a string");
      }
      if (rawId == null) {
        return CompletableFuture.completedFuture(null); // notifications (initialized, cancelled, ...): nothing to answer
      }
      if (id == null) {
        throw JsonRpcError.invalidRequest("id must be a string or an integer");
      }
      JsonNode params = message.get("params");
      if (params != null && !params.isNull() && !params.isObject()) {
        throw JsonRpcError.invalidParams("params must be an object");
      }
      ObjectNode p = params != null && params.isObject() ? (ObjectNode) params : Json.MAPPER.createObjectNode();
      JsonNode answerId = id;
      return result(call, method.textValue(), answerId, p)
          .<JsonNode>thenApply(result -> success(answerId, result))
          .exceptionally(e -> {
            Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            if (cause instanceof JsonRpcError error) {
              return failure(answerId, error);
            }
            if (cause instanceof DomainException refused && !(cause instanceof dev.runway.http.ApiException)) {
              return failure(answerId, refusal(refused));
            }
            throw cause instanceof RuntimeException r ? r : new CompletionException(cause);
          });
    } catch (JsonRpcError e) {
      return CompletableFuture.completedFuture(failure(id, e));
    }
  }

  private CompletableFuture<JsonNode> result(Call call, String method, JsonNode id, ObjectNode params) {
    try {
      return switch (method) {
        case "initialize" -> CompletableFuture.completedFuture(initialize(params));
        case "ping" -> CompletableFuture.completedFuture(Json.MAPPER.createObjectNode());
        case "tools/list" -> CompletableFuture.completedFuture(tools.list(call.caller().workspaceId(),
            optionalString(params, "cursor")));
        case "tools/call" -> callTool(call, id, params);
        default -> throw new JsonRpcError(JsonRpcError.METHOD_NOT_FOUND, "method not found: " + method
            + " (this server has tools: initialize, ping, tools/list, tools/call)", null);
      };
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private JsonNode initialize(ObjectNode params) {
    String asked = optionalString(params, "protocolVersion");
    if (asked == null) {
      throw JsonRpcError.invalidParams("params.protocolVersion is required: the MCP version the client speaks");
    }
    ObjectNode result = Json.MAPPER.createObjectNode();
    result.put("protocolVersion", PROTOCOL_VERSIONS.contains(asked) ? asked
        : PROTOCOL_VERSIONS.get(PROTOCOL_VERSIONS.size() - 1));
    result.putObject("capabilities").putObject("tools").put("listChanged", false);
    result.putObject("serverInfo").put("name", "runway").put("title", "Runway").put("version", version);
    result.put("instructions", "Each tool starts a run in Runway: workflow_<id> a workflow's (the arguments are its"
        + " inputs), agent_<id> an agent's (argument input). A call answers the run's output once the run ends"
        + " within its wait (_meta runway/wait_s, default " + settings.defaultWait().toSeconds()
        + " s); a run still going is answered with its record (GET /v1/runs/{id} shows it later).");
    return result;
  }

  private CompletableFuture<JsonNode> callTool(Call call, JsonNode id, ObjectNode params) {
    Principal caller = call.caller();
    String name = optionalString(params, "name");
    if (name == null) {
      throw JsonRpcError.invalidParams("params.name is required: the tool to call");
    }
    McpTools.Target target = McpTools.target(name);
    if (target == null) {
      throw JsonRpcError.invalidParams("unknown tool: " + name);
    }
    JsonNode arguments = params.get("arguments");
    if (arguments != null && !arguments.isNull() && !arguments.isObject()) {
      throw JsonRpcError.invalidParams("params.arguments must be an object");
    }
    ObjectNode args = arguments != null && arguments.isObject() ? (ObjectNode) arguments
        : Json.MAPPER.createObjectNode();
    JsonNode meta = params.path("_meta");
    if (!meta.isMissingNode() && !meta.isNull() && !meta.isObject()) {
      throw JsonRpcError.invalidParams("params._meta must be an object");
    }
    String project = project(call, meta);
    Duration wait = waitOf(call, meta);
    if (!caller.scopes().contains(Scope.RUNS_WRITE)) {
      throw refusal(new DomainException(DomainException.Kind.FORBIDDEN, "insufficient_scope",
          "this API key lacks the scope runs:write that tools/call needs (it may list tools with runs:read)"));
    }
    String idempotencyKey = idempotencyKey(call.sessionId(), id);
    CompletableFuture<RunStarts.Started> started;
    try {
      if (target.agent()) {
        started = starts.startAgent(caller, new RunStarts.AgentStartRequest(target.id(), project,
            agentInput(args), null, false, idempotencyKey));
      } else {
        started = starts.start(caller, new RunStarts.StartRequest(target.id(), project, args, idempotencyKey));
      }
    } catch (DomainException e) {
      return CompletableFuture.completedFuture(startRefused(name, e));
    }
    return started.thenCompose(s -> waits.until(caller, Json.tree(s.body()).path("id").asText(), wait,
        call.beforeWaiting())).thenApply(McpServer::callResult);
  }

  /** A refused start: a tool error the model can act on (bad arguments), or a JSON-RPC error. */
  private static JsonNode startRefused(String name, DomainException e) {
    if (e instanceof dev.runway.http.ApiException) {
      throw e;
    }
    if (e.kind() == DomainException.Kind.INVALID && !"project".equals(e.param())) {
      ObjectNode result = Json.MAPPER.createObjectNode();
      result.putArray("content").addObject().put("type", "text").put("text", "The arguments were refused"
          + (e.param() == null ? "" : " at " + e.param()) + ": " + e.getMessage());
      result.put("isError", true);
      result.putObject("structuredContent").putObject("error").put("code", e.code()).put("param", e.param())
          .put("message", e.getMessage());
      return result;
    }
    if (e.kind() == DomainException.Kind.NOT_FOUND) {
      throw JsonRpcError.invalidParams("unknown tool: " + name + " (" + e.getMessage() + ")");
    }
    throw refusal(e);
  }

  /** The result of a call whose run has ended, or not yet. */
  static JsonNode callResult(Run run) {
    JsonNode record = Json.tree(Json.string(RunView.of(run)));
    ObjectNode result = Json.MAPPER.createObjectNode();
    ArrayNode content = result.putArray("content");
    if ("succeeded".equals(run.status())) {
      JsonNode output = record.path("output");
      content.addObject().put("type", "text").put("text", output.isTextual() ? output.textValue() : output.toString());
      if (output.isObject()) {
        result.set("structuredContent", output);
      } else {
        result.putObject("structuredContent").set("output", output);
      }
      result.put("isError", false);
    } else if (run.isEnded()) {
      JsonNode error = record.path("error");
      content.addObject().put("type", "text").put("text", "Run " + run.id() + " " + run.status()
          + (error.isObject() ? ": " + error.path("message").asText() + " (" + error.path("code").asText() + ")" : ""));
      content.addObject().put("type", "text").put("text", record.toString());
      result.set("structuredContent", record);
      result.put("isError", true);
    } else {
      content.addObject().put("type", "text").put("text", "Run " + run.id() + " is " + run.status()
          + " and has not ended yet; read it with GET /v1/runs/" + run.id()
          + ", or call again with the same request id to wait for it again.");
      content.addObject().put("type", "text").put("text", record.toString());
      result.set("structuredContent", record);
      result.put("isError", false);
    }
    result.putObject("_meta").put(META_RUN_ID, run.id()).put(META_STATUS, run.status());
    return result;
  }

  private static JsonNode agentInput(ObjectNode args) {
    for (Iterator<String> it = args.fieldNames(); it.hasNext(); ) {
      String field = it.next();
      if (!field.equals("input")) {
        throw DomainException.invalid(field, "unknown argument " + field + ": an agent's tool takes input alone");
      }
    }
    JsonNode input = args.get("input");
    if (input == null || !(input.isTextual() || input.isObject())) {
      throw DomainException.invalid("input", "input is required: the text or JSON object the agent works on");
    }
    return input;
  }

  /** The call's project: _meta runway/project, else the URL's, else the key's only project, else "mcp". */
  private static String project(Call call, JsonNode meta) {
    JsonNode named = meta.path(META_PROJECT);
    String project;
    if (!named.isMissingNode() && !named.isNull()) {
      if (!named.isTextual() || !Slugs.isSlug(named.textValue())) {
        throw JsonRpcError.invalidParams("_meta." + META_PROJECT + " must be a project slug: " + Slugs.RULE);
      }
      project = named.textValue();
    } else if (call.project() != null) {
      project = call.project();
    } else if (call.caller().projects() != null && call.caller().projects().size() == 1) {
      project = call.caller().projects().get(0);
    } else {
      project = "mcp";
    }
    if (!call.caller().mayUseProject(project)) {
      throw refusal(new DomainException(DomainException.Kind.FORBIDDEN, "project_forbidden",
          "this API key may not use project '" + project + "'; name one it may use in _meta." + META_PROJECT
              + " (or ?project= on the endpoint's URL)", "project"));
    }
    return project;
  }

  private Duration waitOf(Call call, JsonNode meta) {
    JsonNode named = meta.path(META_WAIT);
    long seconds;
    if (!named.isMissingNode() && !named.isNull()) {
      if (!named.isNumber() || named.asDouble() < 0) {
        throw JsonRpcError.invalidParams("_meta." + META_WAIT + " must be a number of seconds, 0 to "
            + settings.maxWait().toSeconds());
      }
      return Duration.ofMillis(Math.min((long) (named.asDouble() * 1000), settings.maxWait().toMillis()));
    }
    seconds = call.waitSeconds() != null ? call.waitSeconds() : settings.defaultWait().toSeconds();
    return Duration.ofSeconds(Math.min(seconds, settings.maxWait().toSeconds()));
  }

  /**
   * The Idempotency-Key of a call: its request id within its session (clients number their
   * requests from 0 in each session), kept per API key as the API's are.
   */
  static String idempotencyKey(String sessionId, JsonNode id) {
    String key = "mcp:" + (sessionId == null ? "-" : sessionId) + ":" + id.toString();
    boolean printable = key.chars().allMatch(c -> c >= 0x20 && c <= 0x7e);
    return key.length() <= 255 && printable ? key : "mcp:sha256:" + Sha256.hex(key);
  }

  private static JsonRpcError refusal(DomainException e) {
    ObjectNode data = Json.MAPPER.createObjectNode().put("code", e.code()).put("status", ErrorMapper.status(e.kind()));
    if (e.param() != null) {
      data.put("param", e.param());
    }
    if (e.retryAfterSeconds() > 0) {
      data.put("retry_after", e.retryAfterSeconds());
    }
    return new JsonRpcError(JsonRpcError.REFUSED, e.getMessage(), data);
  }

  private static String optionalString(ObjectNode params, String field) {
    JsonNode value = params.get(field);
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isTextual()) {
      throw JsonRpcError.invalidParams("params." + field + " must be a string");
    }
    return value.textValue();
  }

  static ObjectNode success(JsonNode id, JsonNode result) {
    ObjectNode answer = Json.MAPPER.createObjectNode().put("jsonrpc", "2.0");
    answer.set("id", id);
    answer.set("result", result);
    return answer;
  }

  static ObjectNode failure(JsonNode id, JsonRpcError error) {
    ObjectNode answer = Json.MAPPER.createObjectNode().put("jsonrpc", "2.0");
    answer.set("id", id == null ? Json.MAPPER.nullNode() : id);
    ObjectNode e = answer.putObject("error").put("code", error.code).put("message", error.getMessage());
    if (error.data != null) {
      e.set("data", error.data);
    }
    return answer;
  }

  /** A parse error's answer (the body is not JSON). */
  public static ObjectNode parseError(String detail) {
    return failure(null, new JsonRpcError(JsonRpcError.PARSE_ERROR, "parse error: " + detail, null));
  }

  /** An invalid request's answer (an empty batch, a bad header). */
  public static ObjectNode invalidRequest(String detail) {
    return failure(null, JsonRpcError.invalidRequest(detail));
  }

  /** Whether an answer is an error that means the input could not be taken at all (-32700, -32600): HTTP 400. */
  public static boolean unacceptable(JsonNode answer) {
    int code = answer.path("error").path("code").asInt(0);
    return code == JsonRpcError.PARSE_ERROR || code == JsonRpcError.INVALID_REQUEST;
  }
}
