package dev.runway.agent;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Backoff;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.outbound.RetryAfter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** What came of one call to the model: an answer read from the Chat Completions wire format, or a failure. */
public sealed interface ModelOutcome permits ModelOutcome.Answer, ModelOutcome.Failure {

  /** One tool call of an answer; {@code arguments} is the JSON text the model wrote, valid or not. */
  record ToolCall(String id, String name, String arguments) {}

  /** The assistant's message (its text, its tool calls), why it stopped, and the tokens it reports. */
  record Answer(String content, List<ToolCall> toolCalls, String finishReason, long promptTokens,
      long completionTokens, long totalTokens) implements ModelOutcome {}

  /**
   * A call that got no usable answer: {@code retryable} ones (429, 5xx, no answer in time, no
   * connection) are tried again, after at least {@code retryAfter} when the model said so.
   */
  record Failure(Integer httpStatus, String message, boolean retryable, Duration retryAfter) implements ModelOutcome {}

  /** Reads an answer of {@code POST …/chat/completions}. */
  static ModelOutcome read(int status, byte[] body, boolean cut, String retryAfter) {
    if (status < 200 || status > 299) {
      boolean retryable = status == 408 || status == 409 || status == 429 || status >= 500;
      return new Failure(status, "the model answered HTTP " + status + errorMessage(body), retryable,
          RetryAfter.parse(retryAfter, Time.now(), Backoff.MAX));
    }
    if (cut) {
      return new Failure(status, "the model's answer is larger than agents.model.max_response_bytes", false, null);
    }
    try {
      JsonNode answer = Json.parseUntrusted(body);
      JsonNode choice = answer.path("choices").path(0);
      JsonNode message = choice.path("message");
      if (!message.isObject()) {
        return new Failure(status, "the model's answer has no choices[0].message", false, null);
      }
      List<ToolCall> calls = new ArrayList<>();
      JsonNode toolCalls = message.path("tool_calls");
      for (int i = 0; i < toolCalls.size(); i++) {
        JsonNode c = toolCalls.get(i);
        JsonNode function = c.path("function");
        JsonNode arguments = function.path("arguments");
        // Some servers send the arguments as an object rather than a JSON string: kept as its JSON text.
        String args = arguments.isTextual() ? arguments.asText() : arguments.isMissingNode() ? "" : Json.string(arguments);
        String id = c.path("id").asText("");
        calls.add(new ToolCall(id.isEmpty() ? "call_" + i : id, function.path("name").asText(""), args));
      }
      JsonNode usage = answer.path("usage");
      long prompt = usage.path("prompt_tokens").asLong(0);
      long completion = usage.path("completion_tokens").asLong(0);
      long total = usage.path("total_tokens").asLong(prompt + completion);
      String content = message.path("content").isTextual() ? message.get("content").asText() : null;
      return new Answer(content, calls, choice.path("finish_reason").asText(null), prompt, completion, total);
    } catch (Json.InvalidJson e) {
      return new Failure(status, "the model's answer is not JSON: it " + e.getMessage(), false, null);
    }
  }

  /** The message of an OpenAI-style error body ({"error": {"message": …}}), or the start of the body. */
  private static String errorMessage(byte[] body) {
    if (body.length == 0) {
      return "";
    }
    String text;
    try {
      JsonNode error = Json.parseUntrusted(body).path("error");
      text = error.isTextual() ? error.asText() : error.path("message").asText(null);
    } catch (Json.InvalidJson e) {
      text = null;
    }
    if (text == null) {
      text = new String(body, 0, Math.min(body.length, 300), StandardCharsets.UTF_8);
    }
    text = text.replaceAll("\\s+", " ").trim();
    return ": " + (text.length() > 300 ? text.substring(0, 300) + "…" : text);
  }
}
