package dev.runway.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.AgentDefinition;
import dev.runway.agent.BuiltinTools;
import dev.runway.core.Json;
import dev.runway.outbound.OutboundHttp;
import dev.runway.secret.SecretSource;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Makes an agent's tool call: a POST of {run_id, agent, tool_call_id, name, arguments} to the tool's
 * URL, with {@code Idempotency-Key: <run_id>:<tool_call_id>} (the same when a call cut off by a stop
 * is sent again), through the same guarded client as workflow http steps; or a built-in tool's answer.
 */
final class AgentToolCaller {
  /** The result for the model ({@code content}), or why the call failed ({@code message}). */
  record Result(boolean ok, Integer httpStatus, String content, String message) {}

  private final OutboundHttp http;
  private final SecretSource secrets;
  private final int maxResponseBytes;

  AgentToolCaller(OutboundHttp http, SecretSource secrets, int maxResponseBytes) {
    this.http = http;
    this.secrets = secrets;
    this.maxResponseBytes = maxResponseBytes;
  }

  /** Calls the tool; the future always completes normally, within {@code timeout} and a little. */
  CompletableFuture<Result> call(String workspaceId, String runId, String agentId, AgentDefinition.Tool tool,
      String toolCallId, JsonNode arguments, Duration timeout) {
    if (BuiltinTools.isBuiltin(tool.url())) {
      BuiltinTools.Answer answer = BuiltinTools.call(tool.url(), arguments);
      return CompletableFuture.completedFuture(answer.status() == 200 ? new Result(true, 200, answer.body(), null)
          : new Result(false, answer.status(), null, "the tool answered HTTP " + answer.status() + ": "
              + Json.tree(answer.body()).path("error").asText()));
    }
    ResolvedCall target;
    try {
      target = ResolvedCall.of(secrets, workspaceId, tool.url(), tool.headers(), tool.secretNames());
    } catch (ResolvedCall.Unresolvable e) {
      return CompletableFuture.completedFuture(new Result(false, null, null, "the tool could not be called: "
          + e.getMessage()));
    }
    Map<String, String> headers = target.headers();
    headers.put("Content-Type", "application/json");
    headers.put("Idempotency-Key", runId + ":" + toolCallId);
    ObjectNode body = Json.MAPPER.createObjectNode().put("run_id", runId).put("agent", agentId)
        .put("tool_call_id", toolCallId).put("name", tool.name());
    body.set("arguments", arguments);
    OutboundHttp.Call call = new OutboundHttp.Call("POST", target.uri(), headers, Json.bytes(body), timeout, maxResponseBytes);
    return http.send(call).handle((answer, failure) -> failure == null ? result(answer) : noAnswer(failure, timeout));
  }

  private Result result(OutboundHttp.Answer answer) {
    String text = new String(answer.body(), StandardCharsets.UTF_8);
    if (answer.status() < 200 || answer.status() > 299) {
      String snippet = text.replaceAll("\\s+", " ").trim();
      return new Result(false, answer.status(), null, "the tool answered HTTP " + answer.status()
          + (snippet.isEmpty() ? "" : ": " + (snippet.length() > 300 ? snippet.substring(0, 300) + "…" : snippet)));
    }
    if (answer.cut()) {
      text += "\n[the tool's answer was cut at " + maxResponseBytes + " bytes]";
    }
    return new Result(true, answer.status(), text.isEmpty() ? "(the tool answered HTTP " + answer.status()
        + " with no content)" : text, null);
  }

  private static Result noAnswer(Throwable failure, Duration timeout) {
    Throwable cause = failure instanceof OutboundHttp.NoAnswer ? failure
        : failure.getCause() != null ? failure.getCause() : failure;
    if (cause instanceof OutboundHttp.NoAnswer none) {
      return new Result(false, null, null, none.failure() == OutboundHttp.Failure.TIMEOUT
          ? "the tool did not answer within " + timeout.toMillis() + " ms" : none.getMessage());
    }
    return new Result(false, null, null, "the tool could not be called: " + cause.getClass().getSimpleName());
  }
}
