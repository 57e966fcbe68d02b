package dev.runway.webhook;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The event types an endpoint asks for: exact types ({@code run.succeeded}), prefixes
 * ({@code run.*}: every type that starts with {@code run.}) or {@code *} (every type). Types that
 * do not exist yet are allowed, so an endpoint may ask for what a later version adds.
 */
public final class EventTypes {
  static final int MAX = 50;
  private static final Pattern TYPE = Pattern.compile("[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*(\\.\\*)?|\\*");

  private EventTypes() {}

  /** The list at {@code param}: 1 to 50 patterns, duplicates dropped; else a 400 naming the entry. */
  static List<String> parse(JsonNode node, String param) {
    if (node == null || node.isNull()) {
      throw DomainException.invalid(param, param + " is required: a list of event types, e.g. [\"run.succeeded\", "
          + "\"run.*\"] or [\"*\"]");
    }
    if (!node.isArray()) {
      throw DomainException.invalid(param, param + " must be an array, not " + Json.kindOf(node));
    }
    if (node.isEmpty() || node.size() > MAX) {
      throw DomainException.invalid(param, param + " must list 1 to " + MAX + " event types");
    }
    LinkedHashSet<String> types = new LinkedHashSet<>();
    for (int i = 0; i < node.size(); i++) {
      JsonNode t = node.get(i);
      String at = param + "[" + i + "]";
      if (!t.isTextual() || t.textValue().length() > 64 || !TYPE.matcher(t.textValue()).matches()) {
        throw DomainException.invalid(at, at + " must be an event type (run.succeeded), a prefix ending in .* "
            + "(run.*), or *");
      }
      types.add(t.textValue());
    }
    return new ArrayList<>(types);
  }

  /** Whether any of {@code patterns} asks for {@code type}. */
  static boolean matches(List<String> patterns, String type) {
    for (String p : patterns) {
      if (p.equals("*") || p.equals(type)
          || (p.endsWith(".*") && type.startsWith(p.substring(0, p.length() - 1)))) {
        return true;
      }
    }
    return false;
  }
}
