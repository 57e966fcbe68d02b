package dev.runway.outbound;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.secret.SecretReferences;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The URLs and headers API users give for Runway to call (workflow http steps, agent tools), checked
 * when they are defined: absolute http or https URLs, header names and values HTTP can carry,
 * Runway's own headers left to Runway, and well-formed secret references (in a URL only in its query
 * string). Each failure is a 400 naming the field.
 */
public final class CallTargets {
  private CallTargets() {}

  /** The URL at {@code param}, or a 400. */
  public static String url(JsonNode node, String param) {
    if (node == null || !node.isTextual()) {
      throw DomainException.invalid(param, param + " is required: an absolute http or https URL");
    }
    String text = node.textValue();
    String malformed = SecretReferences.malformed(text);
    if (malformed != null) {
      throw DomainException.invalid(param, param + " holds a malformed secret reference '" + malformed
          + "': write {{secrets.NAME}}, NAME " + SecretReferences.NAME_RULE);
    }
    int query = text.indexOf('?');
    if (SecretReferences.refersToSecrets(query < 0 ? text : text.substring(0, query))) {
      throw DomainException.invalid(param, param + " may refer to secrets only in its query string "
          + "(https://host/path?key={{secrets.NAME}})");
    }
    try {
      URI uri = new URI(SecretReferences.withStandIns(text));
      String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
      if ((scheme.equals("http") || scheme.equals("https")) && uri.getHost() != null && text.length() <= 2000) {
        return text;
      }
    } catch (URISyntaxException e) {
      // reported below
    }
    throw DomainException.invalid(param, param + " must be an absolute http or https URL");
  }

  /** The headers at {@code param}, or a 400. */
  public static Map<String, String> headers(ObjectNode headers, String param) {
    Map<String, String> out = new LinkedHashMap<>();
    Iterator<Map.Entry<String, JsonNode>> fields = headers.fields();
    while (fields.hasNext()) {
      Map.Entry<String, JsonNode> e = fields.next();
      if (!e.getValue().isTextual()) {
        throw DomainException.invalid(param + "." + e.getKey(), param + "." + e.getKey() + " must be a string");
      }
      if (!e.getKey().matches("[A-Za-z0-9!#$%&'*+.^_`|~-]+") || !headerValue(e.getValue().textValue())) {
        throw DomainException.invalid(param + "." + e.getKey(), param + " holds an invalid header name or value");
      }
      String malformed = SecretReferences.malformed(e.getValue().textValue());
      if (malformed != null) {
        throw DomainException.invalid(param + "." + e.getKey(), param + "." + e.getKey()
            + " holds a malformed secret reference '" + malformed + "': write {{secrets.NAME}}, NAME "
            + SecretReferences.NAME_RULE);
      }
      String lower = e.getKey().toLowerCase(Locale.ROOT);
      if (Set.of("idempotency-key", "content-type", "content-length", "host", "connection", "upgrade", "expect",
          "transfer-encoding").contains(lower)) {
        throw DomainException.invalid(param + "." + e.getKey(), param + "." + e.getKey() + " is set by Runway");
      }
      out.put(e.getKey(), e.getValue().textValue());
    }
    return out;
  }

  /** RFC 9110 field-value characters (HTAB, SP, VCHAR, obs-text): what an HTTP client can send in a header. */
  public static boolean headerValue(String value) {
    return value.chars().allMatch(c -> c == '\t' || c >= 0x20 && c != 0x7f && c <= 0xff);
  }
}
