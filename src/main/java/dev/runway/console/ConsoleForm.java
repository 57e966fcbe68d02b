package dev.runway.console;

import dev.runway.core.DomainException.Kind;
import dev.runway.http.FormFields;
import io.javalin.http.Context;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A console form post, read once, in one place: only {@code application/x-www-form-urlencoded}
 * (else 415: a multipart body is never parsed), at most {@link #MAX_BYTES} (else 413; the server
 * already stops receiving a larger body at that bound), and every field within its own bound (else
 * 400 naming the field), so that nothing a page shows again or a limiter counts by is longer than
 * its bound.
 */
public final class ConsoleForm {
  /** The most a console form may weigh: its largest fields (a comment, a password) are 1,000 characters. */
  public static final int MAX_BYTES = 16 * 1024;
  /** The most characters of each field; a field not named here has at most {@link #DEFAULT_MAX_CHARS}. */
  private static final Map<String, Integer> MAX_CHARS = Map.of(
      "csrf", 64,
      "email", AccountService.MAX_EMAIL_LENGTH,
      "password", AccountService.MAX_PASSWORD_LENGTH,
      "setup_code", 64,
      "name", 200,
      "projects", 2000,
      "expiry", 16,
      "scope", 32,
      "comment", 1000);
  private static final int DEFAULT_MAX_CHARS = 1000;

  private final Map<String, List<String>> fields;

  private ConsoleForm(Map<String, List<String>> fields) {
    this.fields = fields;
  }

  /** The request's form, or a ConsoleException (413, 415, 400) saying why not; nothing of it is echoed. */
  static ConsoleForm read(Context ctx) {
    String type = ctx.header("Content-Type");
    long declared = ctx.req().getContentLengthLong();
    boolean hasBody = declared > 0 || ctx.header("Transfer-Encoding") != null;
    if (type == null && !hasBody) {
      return new ConsoleForm(Map.of());
    }
    if (type == null || !type.split(";", 2)[0].strip().toLowerCase(Locale.ROOT)
        .equals("application/x-www-form-urlencoded")) {
      throw new ConsoleException(Kind.UNSUPPORTED_FORMAT, null, "Forms are sent as application/x-www-form-urlencoded, as browsers do.");
    }
    if (declared > MAX_BYTES) {
      throw tooLarge();
    }
    byte[] bytes;
    try (InputStream in = ctx.req().getInputStream()) {
      bytes = in.readNBytes(MAX_BYTES + 1);
    } catch (IOException e) {
      throw new ConsoleException(Kind.INVALID, null, "The form could not be read. Send it again.");
    }
    if (bytes.length > MAX_BYTES) {
      throw tooLarge();
    }
    return parse(new String(bytes, StandardCharsets.UTF_8));
  }

  static ConsoleForm parse(String body) {
    Map<String, List<String>> fields = new LinkedHashMap<>();
    if (body.isEmpty()) {
      return new ConsoleForm(fields);
    }
    List<Map.Entry<String, String>> pairs;
    try {
      pairs = FormFields.parse(body);
    } catch (IllegalArgumentException e) {
      throw new ConsoleException(Kind.INVALID, null, "The form is not well encoded. Send it again from the page.");
    }
    for (Map.Entry<String, String> pair : pairs) {
      String name = pair.getKey();
      String value = pair.getValue();
      int max = MAX_CHARS.getOrDefault(name, DEFAULT_MAX_CHARS);
      if (value.length() > max) {
        boolean known = MAX_CHARS.containsKey(name);
        throw new ConsoleException(Kind.INVALID, known ? name : null,
            (known ? "The field " + name : "A field") + " is too long: at most " + max + " characters.");
      }
      fields.computeIfAbsent(name, n -> new ArrayList<>()).add(value);
    }
    return new ConsoleForm(fields);
  }

  /** The field's first value, or null. */
  public String get(String name) {
    List<String> values = fields.get(name);
    return values == null ? null : values.get(0);
  }

  /** Every value of the field, in order (empty if none). */
  public List<String> all(String name) {
    return fields.getOrDefault(name, List.of());
  }

  private static ConsoleException tooLarge() {
    return new ConsoleException(Kind.TOO_LARGE, null, "This form is larger than " + MAX_BYTES + " bytes, which no console form is.");
  }
}
