package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.JsonFields;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A workflow's {@code concurrency}: at most {@code limit} of its runs with the same key (the
 * {@code key} template evaluated against the run's inputs and {@code run} at start) are active at
 * once; {@code onLimit} says what becomes of a run that finds every place taken.
 */
public record Concurrency(String keyText, Template key, int limit, OnLimit onLimit) {
  public static final int MAX_LIMIT = 1000;
  /** The longest key a run may carry, in characters. */
  public static final int MAX_KEY_CHARS = 200;
  private static final Set<String> FIELDS = Set.of("key", "limit", "on_limit");

  /** What a run that finds no free place does: waits its turn, starts and cancels the oldest, or ends at once. */
  public enum OnLimit {
    QUEUE, CANCEL_OLDEST, SKIP;

    public String wireName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** Reads the field as a caller gives it (null: none); a bad one is a 400 naming {@code concurrency.<field>}. */
  public static Concurrency parse(JsonNode node) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (!node.isObject()) {
      throw DomainException.invalid("concurrency", "concurrency must be an object, not " + Json.kindOf(node));
    }
    JsonFields fields = JsonFields.of((ObjectNode) node, FIELDS, "concurrency.");
    JsonNode key = node.get("key");
    if (key == null || key.isNull()) {
      throw DomainException.invalid("concurrency.key", "concurrency.key is required: a template such as "
          + "\"{{inputs.customer_id}}\"");
    }
    if (!key.isTextual() || key.textValue().isBlank() || key.textValue().length() > 1000) {
      throw DomainException.invalid("concurrency.key", "concurrency.key must be a non-empty string of at most 1000 "
          + "characters, not " + (key.isTextual() ? "one of " + key.textValue().length() : Json.kindOf(key)));
    }
    Template template = Template.compile(key.textValue(), "concurrency.key");
    if (key.textValue().contains("{{secrets.")) {
      throw DomainException.invalid("concurrency.key", "concurrency.key may not name secrets");
    }
    int limit = (int) fields.optionalLong("limit", 1, 1, MAX_LIMIT);
    String onLimit = fields.optionalString("on_limit", "queue", 20);
    OnLimit parsed = switch (onLimit) {
      case "queue" -> OnLimit.QUEUE;
      case "cancel_oldest" -> OnLimit.CANCEL_OLDEST;
      case "skip" -> OnLimit.SKIP;
      default -> throw DomainException.invalid("concurrency.on_limit",
          "concurrency.on_limit must be one of queue, cancel_oldest, skip, not '" + onLimit + "'");
    };
    return new Concurrency(key.textValue(), template, limit, parsed);
  }

  /** The setting as stored and shown, every field given. */
  public ObjectNode toJson() {
    return Json.MAPPER.createObjectNode().put("key", keyText).put("limit", limit).put("on_limit", onLimit.wireName());
  }

  /**
   * The key of a run whose expressions see {@code vars}: the template's value as text (a string as
   * it is, a number or a boolean as JSON). Throws ExpressionFailed when it cannot be evaluated, or
   * gives null, an object or an array, an empty key or one over {@value #MAX_KEY_CHARS} characters.
   */
  public String keyOf(Map<String, JsonNode> vars) {
    JsonNode value = key.evaluate(vars);
    if (!value.isTextual() && !value.isNumber() && !value.isBoolean()) {
      throw new ExpressionFailed(keyText, "it gave " + Json.kindOf(value) + "; a key is a string, a number or a boolean");
    }
    String text = value.isTextual() ? value.textValue() : Json.string(value);
    if (text.isEmpty() || text.length() > MAX_KEY_CHARS) {
      throw new ExpressionFailed(keyText, "it gave a key of " + text.length() + " characters; a key has 1 to "
          + MAX_KEY_CHARS);
    }
    return text;
  }
}
