package dev.runway.metrics;

import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A scrape of /metrics read back: the value of a series by name and some of its labels. */
record Scrape(String text) {
  private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)\\})? (\\S+)$");
  private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

  /**
   * The sum of the samples named {@code name} whose labels include {@code labels} (name, value
   * pairs); 0 when there is none.
   */
  double value(String name, String... labels) {
    double sum = 0;
    for (String line : text.split("\n")) {
      Matcher m = SAMPLE.matcher(line);
      if (!m.matches() || !m.group(1).equals(name)) {
        continue;
      }
      Map<String, String> found = new HashMap<>();
      if (m.group(2) != null) {
        Matcher l = LABEL.matcher(m.group(2));
        while (l.find()) {
          found.put(l.group(1), l.group(2));
        }
      }
      boolean all = true;
      for (int i = 0; i + 1 < labels.length; i += 2) {
        all &= labels[i + 1].equals(found.get(labels[i]));
      }
      if (all) {
        sum += Double.parseDouble(m.group(3));
      }
    }
    return sum;
  }

  /** Whether any sample is named {@code name}. */
  boolean has(String name) {
    return Pattern.compile("(?m)^" + Pattern.quote(name) + "[{ ]").matcher(text).find();
  }
}
