package dev.runway.engine;

import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.Iterator;
import java.util.Map;

/**
 * The sandbox model's answer to a request with a response_format json_schema: a JSON value built
 * from the schema, the same for the same request. Objects get all their properties (and required
 * names the properties do not list); a property whose name is a field of the sources (the input
 * object, the tools' answers) takes that field's value when it fits; {@code const} and {@code enum}
 * give their first value; other strings are the input text (once, for a text input) or a short
 * text; numbers 0 or their minimum; booleans false; arrays their minItems. Local $refs, anyOf and
 * oneOf (the first) and allOf (objects merged) are followed. Work is bounded: nesting, items per
 * array and values in all; a schema past those (or one using keywords left out: pattern,
 * uniqueItems, not, if/then/else) may get a value that does not match.
 */
final class SandboxOutput {
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
  private static final int MAX_DEPTH = 16;
  private static final int MAX_ITEMS = 16;
  private static final int MAX_VALUES = 2000;
  static final String TEXT = "sandbox";

  private final JsonNode root;
  private final Map<String, JsonNode> fields;
  private String text;
  private int values;

  private SandboxOutput(JsonNode root, Map<String, JsonNode> fields, String text) {
    this.root = root;
    this.fields = fields;
    this.text = text;
  }

  /**
   * A value of {@code schema}; {@code fields} by name fill properties of the same name, {@code text}
   * (null for none) the first string no field fills.
   */
  static JsonNode of(JsonNode schema, Map<String, JsonNode> fields, String text) {
    return new SandboxOutput(schema, fields, text).value(schema, 0, null);
  }

  private JsonNode value(JsonNode schema, int depth, String name) {
    if (++values > MAX_VALUES || depth > MAX_DEPTH || !schema.isObject()) {
      return schema.isObject() || schema.asBoolean(true) ? NODES.textNode(TEXT) : NODES.nullNode();
    }
    if (schema.path("$ref").isTextual()) {
      return value(resolve(schema.get("$ref").asText()), depth + 1, name);
    }
    JsonNode given = name == null ? null : fields.get(name);
    if (schema.has("const")) {
      return schema.get("const");
    }
    if (schema.path("enum").isArray() && !schema.get("enum").isEmpty()) {
      for (JsonNode option : schema.get("enum")) {
        if (option.equals(given)) {
          return given;
        }
      }
      return schema.get("enum").get(0);
    }
    for (String first : new String[] {"anyOf", "oneOf"}) {
      if (schema.path(first).isArray() && !schema.get(first).isEmpty()) {
        return value(schema.get(first).get(0), depth + 1, name);
      }
    }
    if (schema.path("allOf").isArray()) {
      return value(merged(schema, depth), depth + 1, name);
    }
    String type = type(schema);
    if (given != null && fits(type, schema, given)) {
      return given;
    }
    return switch (type) {
      case "object" -> object(schema, depth);
      case "array" -> array(schema, depth);
      case "integer" -> NODES.numberNode(number(schema, true).toBigIntegerExact());
      case "number" -> NODES.numberNode(number(schema, false));
      case "boolean" -> NODES.booleanNode(false);
      case "null" -> NODES.nullNode();
      default -> NODES.textNode(string(schema));
    };
  }

  private ObjectNode object(JsonNode schema, int depth) {
    ObjectNode out = NODES.objectNode();
    for (Iterator<Map.Entry<String, JsonNode>> it = schema.path("properties").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> p = it.next();
      out.set(p.getKey(), value(p.getValue(), depth + 1, p.getKey()));
    }
    JsonNode others = schema.path("additionalProperties").isObject() ? schema.get("additionalProperties")
        : NODES.objectNode();
    for (JsonNode required : schema.path("required")) {
      if (required.isTextual() && !out.has(required.asText())) {
        out.set(required.asText(), value(others, depth + 1, required.asText()));
      }
    }
    return out;
  }

  private ArrayNode array(JsonNode schema, int depth) {
    ArrayNode out = NODES.arrayNode();
    int count = Math.min(Math.max(schema.path("minItems").asInt(0), schema.path("prefixItems").size()), MAX_ITEMS);
    JsonNode items = schema.path("items").isObject() ? schema.get("items") : NODES.objectNode();
    for (int i = 0; i < count && values < MAX_VALUES; i++) {
      JsonNode item = i < schema.path("prefixItems").size() ? schema.get("prefixItems").get(i) : items;
      out.add(value(item, depth + 1, null));
    }
    return out;
  }

  private BigDecimal number(JsonNode schema, boolean integer) {
    BigDecimal step = BigDecimal.ONE;
    BigDecimal low = null;
    if (schema.path("minimum").isNumber()) {
      low = schema.get("minimum").decimalValue();
    }
    if (schema.path("exclusiveMinimum").isNumber()) {
      BigDecimal above = schema.get("exclusiveMinimum").decimalValue().add(step);
      low = low == null || above.compareTo(low) > 0 ? above : low;
    }
    BigDecimal high = null;
    if (schema.path("maximum").isNumber()) {
      high = schema.get("maximum").decimalValue();
    }
    if (schema.path("exclusiveMaximum").isNumber()) {
      BigDecimal below = schema.get("exclusiveMaximum").decimalValue().subtract(step);
      high = high == null || below.compareTo(high) < 0 ? below : high;
    }
    BigDecimal n = low != null ? low : high != null && high.signum() < 0 ? high : BigDecimal.ZERO;
    if (integer) {
      n = low != null ? n.setScale(0, RoundingMode.CEILING) : n.setScale(0, RoundingMode.FLOOR);
    }
    return n.stripTrailingZeros().scale() < 0 ? n.setScale(0, RoundingMode.UNNECESSARY) : n.stripTrailingZeros();
  }

  private String string(JsonNode schema) {
    String s = TEXT;
    if (text != null) {
      s = text;
      text = null;
    }
    int min = schema.path("minLength").asInt(0);
    int max = schema.path("maxLength").asInt(Integer.MAX_VALUE);
    StringBuilder padded = new StringBuilder(s);
    while (padded.length() < Math.min(min, 10_000)) {
      padded.append('x');
    }
    return padded.length() > max ? padded.substring(0, Math.max(0, max)) : padded.toString();
  }

  /** The schema's type: the first of a list that is not "null", or what its keywords say. */
  private static String type(JsonNode schema) {
    JsonNode type = schema.get("type");
    if (type != null && type.isTextual()) {
      return type.asText();
    }
    if (type != null && type.isArray() && !type.isEmpty()) {
      for (JsonNode t : type) {
        if (!t.asText().equals("null")) {
          return t.asText();
        }
      }
      return "null";
    }
    if (schema.has("properties") || schema.has("required") || schema.has("additionalProperties")) {
      return "object";
    }
    if (schema.has("items") || schema.has("prefixItems") || schema.has("minItems")) {
      return "array";
    }
    if (schema.has("minimum") || schema.has("maximum") || schema.has("exclusiveMinimum")) {
      return "number";
    }
    return "string";
  }

  /** Whether a source's value may stand for a value of {@code type}: the same JSON type, within its bounds and lengths. */
  private static boolean fits(String type, JsonNode schema, JsonNode value) {
    return switch (type) {
      case "object" -> value.isObject();
      case "array" -> value.isArray();
      case "integer" -> value.isIntegralNumber() && within(schema, value.decimalValue());
      case "number" -> value.isNumber() && within(schema, value.decimalValue());
      case "boolean" -> value.isBoolean();
      case "null" -> value.isNull();
      default -> value.isTextual() && value.asText().length() >= schema.path("minLength").asInt(0)
          && value.asText().length() <= schema.path("maxLength").asInt(Integer.MAX_VALUE);
    };
  }

  /** Whether {@code n} is within the schema's minimum, maximum and their exclusive forms. */
  private static boolean within(JsonNode schema, BigDecimal n) {
    return (!schema.path("minimum").isNumber() || n.compareTo(schema.get("minimum").decimalValue()) >= 0)
        && (!schema.path("maximum").isNumber() || n.compareTo(schema.get("maximum").decimalValue()) <= 0)
        && (!schema.path("exclusiveMinimum").isNumber() || n.compareTo(schema.get("exclusiveMinimum").decimalValue()) > 0)
        && (!schema.path("exclusiveMaximum").isNumber() || n.compareTo(schema.get("exclusiveMaximum").decimalValue()) < 0);
  }

  /** An allOf schema as one: its own keywords, then its parts' properties and required names added. */
  private JsonNode merged(JsonNode schema, int depth) {
    ObjectNode out = ((ObjectNode) schema).deepCopy();
    out.remove("allOf");
    for (JsonNode part : schema.get("allOf")) {
      if (part.path("$ref").isTextual() && depth < MAX_DEPTH) {
        part = resolve(part.get("$ref").asText());
      }
      if (!part.isObject()) {
        continue;
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = part.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> k = it.next();
        if (k.getKey().equals("properties") && k.getValue().isObject()) {
          out.with("properties").setAll((ObjectNode) k.getValue());
        } else if (k.getKey().equals("required") && k.getValue().isArray()) {
          out.withArray("required").addAll((ArrayNode) k.getValue());
        } else if (!out.has(k.getKey()) && !k.getKey().equals("allOf")) {
          out.set(k.getKey(), k.getValue());
        }
      }
    }
    return out;
  }

  /** A $ref within the schema ("#", "#/$defs/x"); anything else (never fetched) as an empty schema. */
  private JsonNode resolve(String ref) {
    if (!ref.startsWith("#")) {
      return NODES.objectNode();
    }
    try {
      JsonNode target = ref.length() == 1 ? root : root.at(JsonPointer.compile(ref.substring(1)));
      return target.isMissingNode() ? NODES.objectNode() : target;
    } catch (IllegalArgumentException e) {
      return NODES.objectNode();
    }
  }
}
