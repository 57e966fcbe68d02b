package dev.runway.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.ModelOutcome;
import dev.runway.core.Json;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The built-in model of a fresh machine (agents.model.base_url=sandbox): deterministic, no network.
 * It answers as a Chat Completions server does, in its wire format, read by the same code as a real
 * model's answer: given tools and a new input, it calls the first tool with arguments taken from the
 * input (the input object's fields of the same names; for a text input, the text for the first
 * string parameter); given tool results, it answers with them; without tools, it echoes the input.
 * Asked for a response_format json_schema, once no tool work is left (tool results are in, it has
 * no tools, or it was called already), it answers with a JSON value of that schema built from the
 * input and the tools' answers ({@link SandboxOutput}). Usage counts a token per four characters.
 */
public final class SandboxModel implements ModelClient {
  @Override
  public CompletableFuture<ModelOutcome> complete(ObjectNode request, Duration timeout,
      java.util.function.IntPredicate mayKeep, java.util.function.Consumer<String> onDelta) {
    ObjectNode answer = answer(request);
    ModelOutcome outcome = ModelOutcome.read(200, Json.bytes(answer), false, null);
    if (onDelta != null && outcome instanceof ModelOutcome.Answer a && a.content() != null) {
      // Streamed word by word, as a model streams its tokens.
      for (String piece : a.content().split("(?<= )")) {
        onDelta.accept(piece);
      }
    }
    return CompletableFuture.completedFuture(outcome);
  }

  static ObjectNode answer(ObjectNode request) {
    ArrayNode messages = (ArrayNode) request.path("messages");
    JsonNode last = messages.get(messages.size() - 1);
    JsonNode tools = request.path("tools");
    JsonNode format = request.path("response_format");
    JsonNode schema = format.path("type").asText().equals("json_schema") ? format.path("json_schema").path("schema")
        : null;
    boolean structured = schema != null && schema.isObject();
    ObjectNode message = Json.MAPPER.createObjectNode().put("role", "assistant");
    String finish;
    if (structured && (last.path("role").asText().equals("tool") || !tools.isArray() || tools.isEmpty()
        || calledTools(messages))) {
      message.put("content", Json.string(output(schema, messages)));
      finish = "stop";
    } else if (last.path("role").asText().equals("tool")) {
      List<String> results = new ArrayList<>();
      for (int i = messages.size() - 1; i >= 0 && messages.get(i).path("role").asText().equals("tool"); i--) {
        results.add(0, messages.get(i).path("content").asText());
      }
      message.put("content", "Here is what the tools answered: " + String.join("; ", results));
      finish = "stop";
    } else if (tools.isArray() && !tools.isEmpty()) {
      JsonNode function = tools.get(0).path("function");
      message.putNull("content");
      message.putArray("tool_calls").addObject().put("id", "call_sandbox_" + messages.size()).put("type", "function")
          .putObject("function").put("name", function.path("name").asText())
          .put("arguments", Json.string(arguments(function.path("parameters"), last.path("content").asText())));
      finish = "tool_calls";
    } else {
      message.put("content", "You said: " + last.path("content").asText());
      finish = "stop";
    }
    int prompt = Math.max(1, Json.string(messages).length() / 4);
    int completion = Math.max(1, Json.string(message).length() / 4);
    ObjectNode answer = Json.MAPPER.createObjectNode().put("id", "chatcmpl-sandbox-" + messages.size())
        .put("object", "chat.completion").put("created", System.currentTimeMillis() / 1000)
        .put("model", request.path("model").asText());
    ObjectNode choice = answer.putArray("choices").addObject().put("index", 0);
    choice.set("message", message);
    choice.put("finish_reason", finish);
    answer.putObject("usage").put("prompt_tokens", prompt).put("completion_tokens", completion)
        .put("total_tokens", prompt + completion);
    return answer;
  }

  /** Whether an earlier answer of the conversation called tools. */
  private static boolean calledTools(ArrayNode messages) {
    for (JsonNode m : messages) {
      if (m.path("role").asText().equals("assistant") && m.path("tool_calls").isArray()
          && !m.path("tool_calls").isEmpty()) {
        return true;
      }
    }
    return false;
  }

  /**
   * A value of the output schema: properties filled from the fields of the input object, then of the
   * tools' answers that are objects; for a text input, the text as the first string.
   */
  private static JsonNode output(JsonNode schema, ArrayNode messages) {
    Map<String, JsonNode> fields = new LinkedHashMap<>();
    String text = null;
    boolean inputSeen = false;
    for (JsonNode m : messages) {
      String role = m.path("role").asText();
      if (!role.equals("tool") && !(role.equals("user") && !inputSeen)) {
        continue;
      }
      JsonNode object = objectOrNull(m.path("content").asText());
      if (object != null) {
        object.fields().forEachRemaining(f -> fields.putIfAbsent(f.getKey(), f.getValue()));
      } else if (role.equals("user")) {
        text = m.path("content").asText().trim();
      }
      inputSeen |= role.equals("user");
    }
    return SandboxOutput.of(schema, fields, text);
  }

  private static JsonNode objectOrNull(String text) {
    try {
      JsonNode node = Json.MAPPER.readTree(text);
      return node != null && node.isObject() ? node : null;
    } catch (Exception notJson) {
      return null;
    }
  }

  /** The tool's arguments from the input: fields of the input object by name, or the input text. */
  private static ObjectNode arguments(JsonNode parameters, String input) {
    ObjectNode args = Json.MAPPER.createObjectNode();
    JsonNode object = null;
    try {
      object = Json.MAPPER.readTree(input);
    } catch (Exception notJson) {
      // a text input
    }
    Iterator<Map.Entry<String, JsonNode>> properties = parameters.path("properties").fields();
    boolean textUsed = false;
    while (properties.hasNext()) {
      Map.Entry<String, JsonNode> p = properties.next();
      if (object != null && object.isObject() && object.has(p.getKey())) {
        args.set(p.getKey(), object.get(p.getKey()));
      } else if ((object == null || !object.isObject()) && !textUsed && "string".equals(p.getValue().path("type").asText())) {
        args.put(p.getKey(), input.trim());
        textUsed = true;
      }
    }
    return args;
  }

  @Override
  public void close() {}
}
