package dev.runway.http;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Reads an application/x-www-form-urlencoded body: its fields in order, a field given twice listed twice. */
public final class FormFields {
  private FormFields() {}

  /** The fields of {@code body}, each name and value decoded; IllegalArgumentException for a broken %-escape. */
  public static List<Map.Entry<String, String>> parse(String body) {
    List<Map.Entry<String, String>> fields = new ArrayList<>();
    for (String pair : body.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
      String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      fields.add(Map.entry(name, value));
    }
    return fields;
  }
}
