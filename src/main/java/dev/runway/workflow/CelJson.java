package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.google.common.primitives.UnsignedLong;
import dev.cel.common.types.CelType;
import dev.cel.common.values.CelByteString;
import dev.cel.common.values.NullValue;
import dev.cel.runtime.CelUnknownSet;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.util.AbstractList;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Base64;
import java.util.Collection;
import java.util.Iterator;
import java.util.Map;
import java.util.Objects;
import java.util.RandomAccess;
import java.util.Set;

/**
 * JSON as CEL sees it, and CEL's results as JSON. Objects and arrays reach CEL as read-only views of
 * the Jackson tree, not copies: an expression costs what it reads, not the size of every step's
 * output, and each value read is charged to the evaluation.
 */
final class CelJson {
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private CelJson() {}

  /**
   * The value CEL takes for a JSON value: a {@code Map<String, Object>} for an object, a
   * {@code List<Object>} for an array, a Long for an integral number that fits one, a Double for
   * any other number, a String, a Boolean, or CEL's null.
   */
  static Object toCel(JsonNode node, Evaluation evaluation) {
    return switch (node.getNodeType()) {
      case OBJECT -> new ObjectView((ObjectNode) node, evaluation);
      case ARRAY -> new ArrayView((ArrayNode) node, evaluation);
      case STRING -> node.textValue();
      case NUMBER -> node.isIntegralNumber() && node.canConvertToLong() ? (Object) node.longValue() : node.doubleValue();
      case BOOLEAN -> node.booleanValue();
      default -> NullValue.NULL_VALUE;
    };
  }

  /**
   * The JSON for a CEL result, its text charged to the evaluation. Unsigned integers are numbers,
   * bytes base64 text, timestamps RFC 3339 text, durations seconds as CEL writes them ("1.5s"), map
   * keys that are not strings their text; NaN, infinities and CEL's types have no JSON and fail, as
   * does reading a variable the evaluation was not given.
   */
  static JsonNode toJson(Object value, Evaluation evaluation) {
    if (value instanceof String s) {
      evaluation.chargeResult(s.length() + 2L);
      return TextNode.valueOf(s);
    }
    if (value instanceof Map<?, ?> map) {
      evaluation.chargeResult(2);
      ObjectNode object = NODES.objectNode();
      for (Map.Entry<?, ?> e : map.entrySet()) {
        String key = String.valueOf(e.getKey());
        evaluation.chargeResult(key.length() + 4L);
        object.set(key, toJson(e.getValue(), evaluation));
      }
      return object;
    }
    if (value instanceof Collection<?> list) {
      evaluation.chargeResult(2);
      ArrayNode array = NODES.arrayNode(list.size());
      for (Object item : list) {
        evaluation.chargeResult(1);
        array.add(toJson(item, evaluation));
      }
      return array;
    }
    evaluation.chargeResult(8);
    if (value instanceof Long l) {
      // As Jackson reads a number, so that results compare equal to parsed JSON.
      return l == l.intValue() ? NODES.numberNode(l.intValue()) : NODES.numberNode(l);
    }
    if (value instanceof Double d) {
      if (!Double.isFinite(d)) {
        throw new Evaluation.Failure("it gives " + d + ", which JSON cannot hold");
      }
      return NODES.numberNode(d);
    }
    if (value instanceof Boolean b) {
      return BooleanNode.valueOf(b);
    }
    if (value instanceof NullValue) {
      return NullNode.getInstance();
    }
    if (value instanceof UnsignedLong u) {
      return NODES.numberNode(u.bigIntegerValue());
    }
    if (value instanceof CelByteString bytes) {
      return toJson(Base64.getEncoder().encodeToString(bytes.toByteArray()), evaluation);
    }
    if (value instanceof Instant time) {
      return TextNode.valueOf(time.toString());
    }
    if (value instanceof Duration d) {
      return TextNode.valueOf(BigDecimal.valueOf(d.getSeconds()).add(BigDecimal.valueOf(d.getNano(), 9))
          .stripTrailingZeros().toPlainString() + "s");
    }
    if (value instanceof CelUnknownSet) {
      // What CEL gives for a declared variable that the evaluation was not given.
      throw new Evaluation.Failure("it reads a variable that has no value here");
    }
    throw new Evaluation.Failure("it gives " + (value instanceof CelType ? "a type" : value.getClass().getName())
        + ", which JSON cannot hold");
  }

  /** A value read out of the variables, charged: one entry, and a string's characters. */
  private static Object read(JsonNode node, Evaluation evaluation) {
    evaluation.charge(1 + (node.isTextual() ? node.textValue().length() : 0));
    return toCel(node, evaluation);
  }

  /** A JSON object as CEL's map, read-only. */
  private static final class ObjectView extends AbstractMap<String, Object> {
    private final ObjectNode node;
    private final Evaluation evaluation;

    ObjectView(ObjectNode node, Evaluation evaluation) {
      this.node = node;
      this.evaluation = evaluation;
    }

    @Override
    public Object get(Object key) {
      JsonNode value = key instanceof String name ? node.get(name) : null;
      return value == null ? null : read(value, evaluation);
    }

    @Override
    public boolean containsKey(Object key) {
      evaluation.charge(1);
      return key instanceof String name && node.has(name);
    }

    @Override
    public int size() {
      return node.size();
    }

    @Override
    public Set<Entry<String, Object>> entrySet() {
      return new AbstractSet<>() {
        @Override
        public Iterator<Entry<String, Object>> iterator() {
          Iterator<Entry<String, JsonNode>> fields = node.properties().iterator();
          return new Iterator<>() {
            @Override
            public boolean hasNext() {
              return fields.hasNext();
            }

            @Override
            public Entry<String, Object> next() {
              Entry<String, JsonNode> field = fields.next();
              evaluation.charge(field.getKey().length());
              return new SimpleImmutableEntry<>(field.getKey(), read(field.getValue(), evaluation));
            }
          };
        }

        @Override
        public int size() {
          return node.size();
        }
      };
    }
  }

  /** A JSON array as CEL's list, read-only. */
  private static final class ArrayView extends AbstractList<Object> implements RandomAccess {
    private final ArrayNode node;
    private final Evaluation evaluation;

    ArrayView(ArrayNode node, Evaluation evaluation) {
      this.node = node;
      this.evaluation = evaluation;
    }

    @Override
    public Object get(int index) {
      return read(node.get(Objects.checkIndex(index, node.size())), evaluation);
    }

    @Override
    public int size() {
      return node.size();
    }
  }
}
