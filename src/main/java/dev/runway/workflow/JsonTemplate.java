package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A JSON value of a definition (an http step's body, a child run's inputs) with expressions in its
 * strings, compiled: every string value is a {@link Template}, object keys stay as written. Its
 * expressions share one {@link Evaluation}, so the whole value has one cost budget and one bound
 * on what the expressions give. Immutable and thread-safe.
 */
public final class JsonTemplate {
  private final Part root;

  private JsonTemplate(Part root) {
    this.root = root;
  }

  /**
   * Compiles the value; a fault is a {@code validation_failed} naming the string's place under
   * {@code field}, e.g. {@code steps[0].body.customer.name} or {@code steps[0].body.items[2]}.
   */
  public static JsonTemplate compile(JsonNode value, String field) {
    return new JsonTemplate(part(value, field));
  }

  /** Whether the value holds no expression: it evaluates to (a copy of) itself. */
  public boolean constant() {
    return root instanceof Constant;
  }

  public JsonNode evaluate(Map<String, JsonNode> vars) {
    return root.evaluate(new Evaluation(vars));
  }

  private static Part part(JsonNode node, String at) {
    if (node.isTextual()) {
      Template template = Template.compile(node.textValue(), at);
      return template.constant() ? new Constant(node) : new Text(template);
    }
    if (node.isObject()) {
      Map<String, Part> fields = new LinkedHashMap<>();
      node.properties().forEach(f -> fields.put(f.getKey(), part(f.getValue(), at + "." + f.getKey())));
      return fields.values().stream().allMatch(Constant.class::isInstance) ? new Constant(node.deepCopy()) : new Fields(fields);
    }
    if (node.isArray()) {
      List<Part> items = new ArrayList<>();
      for (int i = 0; i < node.size(); i++) {
        items.add(part(node.get(i), at + "[" + i + "]"));
      }
      return items.stream().allMatch(Constant.class::isInstance) ? new Constant(node.deepCopy()) : new Items(items);
    }
    return new Constant(node.deepCopy());
  }

  private sealed interface Part permits Constant, Text, Fields, Items {
    JsonNode evaluate(Evaluation evaluation);
  }

  private record Constant(JsonNode value) implements Part {
    public JsonNode evaluate(Evaluation evaluation) {
      return value.deepCopy();
    }
  }

  private record Text(Template template) implements Part {
    public JsonNode evaluate(Evaluation evaluation) {
      return template.evaluate(evaluation);
    }
  }

  private record Fields(Map<String, Part> fields) implements Part {
    public JsonNode evaluate(Evaluation evaluation) {
      ObjectNode object = JsonNodeFactory.instance.objectNode();
      fields.forEach((name, part) -> object.set(name, part.evaluate(evaluation)));
      return object;
    }
  }

  private record Items(List<Part> items) implements Part {
    public JsonNode evaluate(Evaluation evaluation) {
      ArrayNode array = JsonNodeFactory.instance.arrayNode(items.size());
      items.forEach(item -> array.add(item.evaluate(evaluation)));
      return array;
    }
  }
}
