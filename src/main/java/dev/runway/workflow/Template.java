package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.secret.SecretReferences;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * One string of a definition with its {@code {{ expression }}}s, compiled. A string that is one
 * expression alone (white space around it allowed) takes the expression's JSON value with its type;
 * in a string that mixes text and expressions, a string value goes in as it is, null as nothing, and
 * any other value as compact JSON. {@code {{secrets.NAME}}} is no expression: it stays in the text,
 * for the call to resolve, as before expressions. Immutable and thread-safe.
 */
public final class Template {
  public static final int MAX_EXPRESSIONS = 64;

  /** The text around the expressions: one more than there are expressions. */
  private final List<String> literals;
  private final List<Expression> expressions;

  private Template(List<String> literals, List<Expression> expressions) {
    this.literals = literals;
    this.expressions = expressions;
  }

  /** Compiles the text; a fault is a {@code validation_failed} naming {@code field}. */
  public static Template compile(String text, String field) {
    List<String> literals = new ArrayList<>();
    List<Expression> expressions = new ArrayList<>();
    StringBuilder literal = new StringBuilder();
    int at = 0;
    for (int open = text.indexOf("{{"); open >= 0; open = text.indexOf("{{", at)) {
      int secret = SecretReferences.referenceEnd(text, open);
      if (secret >= 0) {
        literal.append(text, at, secret);
        at = secret;
        continue;
      }
      int close = closing(text, open + 2);
      if (close < 0) {
        throw DomainException.invalid(field, field + ": the '{{' at character " + (open + 1) + " has no closing '}}'");
      }
      if (expressions.size() == MAX_EXPRESSIONS) {
        throw DomainException.invalid(field, field + ": a string holds at most " + MAX_EXPRESSIONS + " expressions");
      }
      literals.add(literal.append(text, at, open).toString());
      literal.setLength(0);
      expressions.add(Expression.compile(text.substring(open + 2, close), field));
      at = close + 2;
    }
    literals.add(literal.append(text, at, text.length()).toString());
    return new Template(List.copyOf(literals), List.copyOf(expressions));
  }

  /** Whether the text holds no expression: it evaluates to itself. */
  public boolean constant() {
    return expressions.isEmpty();
  }

  public JsonNode evaluate(Map<String, JsonNode> vars) {
    return evaluate(new Evaluation(vars));
  }

  JsonNode evaluate(Evaluation evaluation) {
    if (expressions.size() == 1 && literals.stream().allMatch(String::isBlank)) {
      return expressions.get(0).evaluate(evaluation);
    }
    return TextNode.valueOf(text(evaluation, UnaryOperator.identity()));
  }

  /**
   * The text with each expression's value in its place as text, passed through {@code encode} (in a
   * URL: URL-encoded, so that a value cannot add a path or a parameter), whatever the value's type.
   */
  public String text(Map<String, JsonNode> vars, UnaryOperator<String> encode) {
    return constant() ? literals.get(0) : text(new Evaluation(vars), encode);
  }

  private String text(Evaluation evaluation, UnaryOperator<String> encode) {
    StringBuilder out = new StringBuilder(literals.get(0));
    for (int i = 0; i < expressions.size(); i++) {
      JsonNode value = expressions.get(i).evaluate(evaluation);
      out.append(encode.apply(value.isTextual() ? value.textValue() : value.isNull() ? "" : Json.string(value)))
          .append(literals.get(i + 1));
    }
    return out.toString();
  }

  /** The text with {@code x} standing in for each expression: its shape, to check before any value is known. */
  public String withStandIns() {
    return String.join("x", literals);
  }

  /**
   * Where the {@code }}} that closes an expression starting at {@code from} is, or -1: braces of
   * map literals nest, and braces inside string literals do not count.
   */
  private static int closing(String text, int from) {
    int depth = 0;
    char quote = 0;
    for (int i = from; i < text.length(); i++) {
      char c = text.charAt(i);
      if (quote != 0) {
        if (c == '\\') {
          i++;
        } else if (c == quote) {
          quote = 0;
        }
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '{') {
        depth++;
      } else if (c == '}') {
        if (depth == 0 && text.startsWith("}}", i)) {
          return i;
        }
        depth = Math.max(0, depth - 1);
      }
    }
    return -1;
  }
}
