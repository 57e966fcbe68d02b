package dev.runway.agent;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.IntPredicate;

/**
 * A streamed Chat Completions answer ({@code "stream": true}), read as its bytes arrive: the
 * Server-Sent Events of {@code chat.completion.chunk} objects up to {@code data: [DONE]}. Each
 * piece of the assistant's text goes to {@code onDelta} as it comes; the pieces (text, tool calls
 * by their index, finish_reason, the usage of the last chunk) are put together into the same
 * {@link ModelOutcome.Answer} a whole answer gives. A stream that ends before its answer did (no
 * finish_reason and no [DONE]) or that reports an error is a retryable failure, as a model that did
 * not answer. Not thread-safe: one HTTP answer feeds it, in order.
 */
public final class ChatStream {
  private final Consumer<String> onDelta;
  private final int maxChars;
  private final IntPredicate mayKeep;
  private final ByteArrayOutputStream line = new ByteArrayOutputStream();
  private final StringBuilder data = new StringBuilder();
  private StringBuilder content;
  private final Map<Integer, Call> calls = new TreeMap<>();
  private String finishReason;
  private JsonNode usage;
  private boolean done;
  private boolean read;
  private ModelOutcome.Failure failure;
  private int chars;
  /** The longest event the stream may send: the whole answer's size allowed, and room for its JSON. */
  private final int maxEventBytes;

  private static final class Call {
    String id;
    String name;
    final StringBuilder arguments = new StringBuilder();
  }

  /**
   * {@code maxChars}: the most characters of text and tool arguments the answer may have (past it,
   * it fails as a whole answer past agents.model.max_response_bytes does); {@code mayKeep} is asked
   * before the answer kept grows to a size (see OutboundHttp.Call), null: always.
   */
  public ChatStream(Consumer<String> onDelta, int maxChars, IntPredicate mayKeep) {
    this.onDelta = onDelta;
    this.maxChars = maxChars;
    this.mayKeep = mayKeep;
    this.maxEventBytes = (int) Math.min(Integer.MAX_VALUE, 4L * maxChars + 65_536);
  }

  /** Reads the next bytes of the stream; false once it failed and should not be read any further. */
  public boolean take(ByteBuffer bytes) {
    read = true;
    while (bytes.hasRemaining() && failure == null && !done) {
      byte b = bytes.get();
      if (b == '\n') {
        line(new String(line.toByteArray(), StandardCharsets.UTF_8));
        line.reset();
      } else if (line.size() + data.length() > maxEventBytes) {
        // One chunk holds a few tokens: an event this long is not a chunk of an answer of the allowed size.
        failure = new ModelOutcome.Failure(200, "the model's stream has an event longer than "
            + maxEventBytes + " bytes", false, null);
      } else {
        line.write(b);
      }
    }
    return failure == null;
  }

  /** Whether any of the answer was read as a stream (a server may answer a whole JSON answer instead). */
  public boolean read() {
    return read;
  }

  /** What came of the stream once it ended. */
  public ModelOutcome outcome() {
    if (failure != null) {
      return failure;
    }
    if (!done && finishReason == null) {
      return new ModelOutcome.Failure(null, "the model's stream broke off before its answer ended", true, null);
    }
    List<ModelOutcome.ToolCall> toolCalls = new ArrayList<>();
    calls.forEach((index, c) -> toolCalls.add(new ModelOutcome.ToolCall(c.id == null || c.id.isEmpty()
        ? "call_" + index : c.id, c.name == null ? "" : c.name, c.arguments.toString())));
    long prompt = usage == null ? 0 : usage.path("prompt_tokens").asLong(0);
    long completion = usage == null ? 0 : usage.path("completion_tokens").asLong(0);
    long total = usage == null ? 0 : usage.path("total_tokens").asLong(prompt + completion);
    return new ModelOutcome.Answer(content == null ? null : content.toString(), toolCalls, finishReason, prompt,
        completion, total);
  }

  /** One line of the event stream: "data: …" lines gather, an empty line ends the event. */
  private void line(String text) {
    if (text.endsWith("\r")) {
      text = text.substring(0, text.length() - 1);
    }
    if (text.isEmpty()) {
      if (data.length() > 0) {
        event(data.toString());
        data.setLength(0);
      }
    } else if (text.startsWith("data:")) {
      if (data.length() > 0) {
        data.append('\n');
      }
      data.append(text, text.startsWith("data: ") ? 6 : 5, text.length());
    }
    // comments (": keep-alive"), "event:", "id:" and "retry:" lines carry nothing of the answer
  }

  private void event(String payload) {
    if (payload.trim().equals("[DONE]")) {
      done = true;
      return;
    }
    JsonNode chunk;
    try {
      chunk = Json.parseUntrusted(payload.getBytes(StandardCharsets.UTF_8));
    } catch (Json.InvalidJson e) {
      failure = new ModelOutcome.Failure(200, "the model's stream has a chunk that is not JSON: it " + e.getMessage(),
          false, null);
      return;
    }
    JsonNode error = chunk.path("error");
    if (!error.isMissingNode() && !error.isNull()) {
      String message = error.isTextual() ? error.asText() : error.path("message").asText("no message");
      failure = new ModelOutcome.Failure(200, "the model's stream reported an error: "
          + (message.length() > 300 ? message.substring(0, 300) + "…" : message), true, null);
      return;
    }
    if (chunk.path("usage").isObject()) {
      usage = chunk.get("usage");
    }
    JsonNode choice = chunk.path("choices").path(0);
    if (!choice.isObject()) {
      return;
    }
    JsonNode delta = choice.path("delta");
    JsonNode text = delta.path("content");
    if (text.isTextual() && !text.asText().isEmpty()) {
      if (content == null) {
        content = new StringBuilder();
      }
      if (grow(text.asText().length())) {
        content.append(text.asText());
        onDelta.accept(text.asText());
      }
    } else if (text.isTextual() && content == null) {
      content = new StringBuilder();
    }
    for (JsonNode c : delta.path("tool_calls")) {
      Call call = calls.computeIfAbsent(c.path("index").asInt(calls.size()), i -> new Call());
      if (c.path("id").isTextual()) {
        call.id = c.get("id").asText();
      }
      JsonNode function = c.path("function");
      if (function.path("name").isTextual()) {
        // Sent once, in the call's first chunk; a server that repeats it sends the same name.
        call.name = call.name == null || call.name.isEmpty() ? function.get("name").asText() : call.name;
      }
      JsonNode arguments = function.path("arguments");
      String piece = arguments.isTextual() ? arguments.asText() : arguments.isMissingNode() || arguments.isNull()
          ? "" : Json.string(arguments);
      if (grow(piece.length())) {
        call.arguments.append(piece);
      }
    }
    if (choice.path("finish_reason").isTextual()) {
      finishReason = choice.get("finish_reason").asText();
    }
  }

  /** Makes room for {@code more} characters of the answer; false (and the stream failed) when there is none. */
  private boolean grow(int more) {
    if (failure != null) {
      return false;
    }
    chars += more;
    if (chars > maxChars) {
      failure = new ModelOutcome.Failure(200, "the model's answer is larger than agents.model.max_response_bytes",
          false, null);
      return false;
    }
    if (mayKeep != null && !mayKeep.test(chars * 2)) {
      failure = new ModelOutcome.Failure(null, "the model's answer could not be read: no memory for the answer now "
          + "(engine.max_call_bytes_in_flight); it was not read", true, null);
      return false;
    }
    return true;
  }
}
