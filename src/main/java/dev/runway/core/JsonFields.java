package dev.runway.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Iterator;
import java.util.Set;

/** Typed access to the fields of a request object, each failure a 400 naming the field. */
public final class JsonFields {
  private final ObjectNode body;
  private final String prefix;

  private JsonFields(ObjectNode body, String prefix) {
    this.body = body;
    this.prefix = prefix;
  }

  /** Refuses any field outside {@code allowed} with 400 unknown_parameter. */
  public static JsonFields of(ObjectNode body, Set<String> allowed) {
    return of(body, allowed, "");
  }

  public static JsonFields of(ObjectNode body, Set<String> allowed, String prefix) {
    Iterator<String> names = body.fieldNames();
    while (names.hasNext()) {
      String name = names.next();
      if (!allowed.contains(name)) {
        throw new DomainException(DomainException.Kind.INVALID, "unknown_parameter",
            "unknown field '" + prefix + name + "'; allowed: " + String.join(", ", allowed.stream().sorted().toList()),
            prefix + name);
      }
    }
    return new JsonFields(body, prefix);
  }

  private JsonNode present(String name) {
    JsonNode node = body.get(name);
    return node == null || node.isNull() ? null : node;
  }

  public String requiredSlug(String name) {
    JsonNode node = present(name);
    if (node == null) {
      throw DomainException.invalid(prefix + name, prefix + name + " is required");
    }
    if (!node.isTextual()) {
      throw DomainException.invalid(prefix + name, prefix + name + " must be a string, not " + Json.kindOf(node));
    }
    if (!Slugs.isSlug(node.textValue())) {
      throw DomainException.invalid(prefix + name, prefix + name + " must be a slug: " + Slugs.RULE);
    }
    return node.textValue();
  }

  public String optionalString(String name, String fallback, int maxLength) {
    JsonNode node = present(name);
    if (node == null) {
      return fallback;
    }
    if (!node.isTextual()) {
      throw DomainException.invalid(prefix + name, prefix + name + " must be a string, not " + Json.kindOf(node));
    }
    if (node.textValue().length() > maxLength) {
      throw DomainException.invalid(prefix + name, prefix + name + " must be at most " + maxLength + " characters");
    }
    if (node.textValue().indexOf('\0') >= 0) {
      // PostgreSQL cannot store it in a text column; refused on H2 too, so both behave alike.
      throw DomainException.invalid(prefix + name, prefix + name + " must not contain the NUL character (\\u0000)");
    }
    return node.textValue();
  }

  public boolean optionalBoolean(String name, boolean fallback) {
    JsonNode node = present(name);
    if (node == null) {
      return fallback;
    }
    if (!node.isBoolean()) {
      throw DomainException.invalid(prefix + name, prefix + name + " must be true or false, not " + Json.kindOf(node));
    }
    return node.booleanValue();
  }

  public long optionalLong(String name, long fallback, long min, long max) {
    JsonNode node = present(name);
    if (node == null) {
      return fallback;
    }
    if (!node.isIntegralNumber() || !node.canConvertToLong() || node.longValue() < min || node.longValue() > max) {
      throw DomainException.invalid(prefix + name, prefix + name + " must be a whole number from " + min + " to "
          + max);
    }
    return node.longValue();
  }

  public ObjectNode optionalObject(String name) {
    JsonNode node = present(name);
    if (node == null) {
      return body.objectNode();
    }
    if (!node.isObject()) {
      throw DomainException.invalid(prefix + name, prefix + name + " must be a JSON object, not " + Json.kindOf(node));
    }
    return (ObjectNode) node;
  }

  public JsonNode optionalArray(String name) {
    JsonNode node = present(name);
    if (node == null) {
      return body.arrayNode();
    }
    if (!node.isArray()) {
      throw DomainException.invalid(prefix + name, prefix + name + " must be an array, not " + Json.kindOf(node));
    }
    return node;
  }
}
