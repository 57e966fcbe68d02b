package dev.runway.secret;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * References to workspace secrets in definitions: {@code {{secrets.NAME}}}, as step header values
 * and in URLs' query strings hold them. They are resolved only when a call is made, so a secret's
 * value is never part of a definition, a run or an event.
 */
public final class SecretReferences {
  /** A secret's name: 1-64 letters, digits and '_', not starting with a digit. */
  public static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,63}");
  public static final String NAME_RULE = "1-64 letters, digits and '_', not starting with a digit";
  private static final Pattern REFERENCE = Pattern.compile("\\{\\{\\s*secrets\\.([^}\\s]*)\\s*}}");
  private static final Pattern OPENING = Pattern.compile("\\{\\{\\s*secrets\\.");

  private SecretReferences() {}

  /** The names the text refers to, in order. */
  public static Set<String> names(String text) {
    Set<String> names = new LinkedHashSet<>();
    Matcher m = REFERENCE.matcher(text);
    while (m.find()) {
      names.add(m.group(1));
    }
    return names;
  }

  /**
   * The first malformed reference in the text, or null: every {@code {{secrets.} must open a whole
   * reference to a valid name. Other braces are plain text.
   */
  public static String malformed(String text) {
    Matcher opening = OPENING.matcher(text);
    while (opening.find()) {
      Matcher whole = REFERENCE.matcher(text).region(opening.start(), text.length());
      if (!whole.lookingAt() || !NAME.matcher(whole.group(1)).matches()) {
        return text.substring(opening.start(), Math.min(text.length(), opening.start() + 80));
      }
    }
    return null;
  }

  /** How many references the text opens ({@code {{secrets.}), well-formed or not. */
  public static int openings(String text) {
    return (int) OPENING.matcher(text).results().count();
  }

  /**
   * Where the reference that starts at {@code index} of the text ends, or -1 when none starts there:
   * a workflow expression's {@code {{ … }}} that is a secret reference stays literal text.
   */
  public static int referenceEnd(String text, int index) {
    Matcher m = REFERENCE.matcher(text).region(index, text.length());
    return m.lookingAt() ? m.end() : -1;
  }

  public static boolean refersToSecrets(String text) {
    return REFERENCE.matcher(text).find();
  }

  /** The text with each reference replaced by its secret's value, passed through {@code encode}. */
  public static String resolve(String text, Map<String, String> values, UnaryOperator<String> encode) {
    Matcher m = REFERENCE.matcher(text);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      m.appendReplacement(out, Matcher.quoteReplacement(encode.apply(values.get(m.group(1)))));
    }
    m.appendTail(out);
    return out.toString();
  }

  /** What a header value given literally (not a secret reference) is shown as. */
  public static final String MASKED = "********";

  /**
   * Shows every value of the headers object that does not refer to secrets as {@link #MASKED}: it
   * may be a tool's credential, and every reader of the definition would see it. A value that
   * refers to secrets is shown as written ({{secrets.NAME}} holds no secret).
   */
  public static void maskLiteral(JsonNode headers) {
    if (headers instanceof ObjectNode object) {
      object.fields().forEachRemaining(h -> {
        if (!h.getValue().isTextual() || !refersToSecrets(h.getValue().textValue())) {
          h.setValue(TextNode.valueOf(MASKED));
        }
      });
    }
  }

  /** The text with each reference replaced by a harmless stand-in, for checking its form (a URL, a header). */
  public static String withStandIns(String text) {
    return REFERENCE.matcher(text).replaceAll("secret");
  }
}
