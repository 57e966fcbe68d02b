package dev.runway.agent;

import com.google.re2j.Pattern;
import com.networknt.schema.regex.RegularExpression;
import com.networknt.schema.regex.RegularExpressionFactory;

/**
 * Tenants' regular expressions in JSON Schemas ({@code pattern}, {@code patternProperties},
 * {@code format: regex}), compiled and matched by RE2/J: matching takes time linear in the text,
 * where java.util.regex backtracks ({@code ^(.*a){12}$} against 60 a's and a '!' runs for minutes).
 * RE2 syntax has no backreferences and no lookaround; such a pattern does not compile.
 */
final class Re2Patterns implements RegularExpressionFactory {
  static final Re2Patterns INSTANCE = new Re2Patterns();
  /**
   * The most a pattern may grow to when its counted repetitions are written out: {@code (a{1000}){1000}}
   * compiles to a million instructions (most of a second and tens of MB), {@code [a-z]{1,1000}} to about 1,000.
   */
  static final int MAX_EXPANDED_SIZE = 20_000;
  private static final int MAX_DEPTH = 100;

  private Re2Patterns() {}

  @Override
  public RegularExpression getRegularExpression(String regex) {
    Pattern pattern = compile(regex);
    return text -> pattern.matcher(SchemaBudget.watched(text)).find(); // a JSON Schema pattern is not anchored
  }

  /** The pattern compiled; an IllegalArgumentException saying why when RE2 refuses it or it is too large. */
  static Pattern compile(String regex) {
    if (expandedSize(regex) > MAX_EXPANDED_SIZE) {
      throw new IllegalArgumentException("the pattern is too large once its repetitions are counted out (over "
          + MAX_EXPANDED_SIZE + " characters)");
    }
    try {
      return Pattern.compile(regex);
    } catch (com.google.re2j.PatternSyntaxException e) {
      throw new IllegalArgumentException("not an RE2 pattern (no backreferences or lookaround): "
          + e.getDescription() + (e.getPattern().isEmpty() ? "" : " `" + e.getPattern() + "`"), e);
    }
  }

  /** Why RE2 refuses the pattern, or null when it compiles. */
  static String refusal(String regex) {
    try {
      compile(regex);
      return null;
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
  }

  /**
   * An upper bound of the pattern's size once each counted repetition {@code {n,m}} is written out
   * m times (nested ones multiply), read without compiling; stops counting past the maximum.
   */
  static long expandedSize(String regex) {
    return new SizeReader(regex).alternatives(0);
  }

  /** Reads a pattern's shape for {@link #expandedSize}: groups, escapes, classes and repetitions. */
  private static final class SizeReader {
    private final String text;
    private int at;

    SizeReader(String text) {
      this.text = text;
    }

    /** The size of alternatives up to the closing ')' of the group (or the end), which it consumes. */
    long alternatives(int depth) {
      long total = 0;
      while (at < text.length()) {
        char c = text.charAt(at);
        if (c == ')' && depth > 0) {
          at++;
          return total;
        }
        if (c == '|') {
          at++;
          total += 1;
          continue;
        }
        long atom = atom(depth);
        total = Math.min(Long.MAX_VALUE / 2, total + atom * repetition());
        if (total > MAX_EXPANDED_SIZE) {
          return total;
        }
      }
      return total;
    }

    private long atom(int depth) {
      char c = text.charAt(at++);
      if (c == '(') {
        if (depth >= MAX_DEPTH) {
          throw new IllegalArgumentException("the pattern nests groups more than " + MAX_DEPTH + " deep");
        }
        return 1 + alternatives(depth + 1);
      }
      if (c == '\\') {
        skipEscape();
        return 1;
      }
      if (c == '[') {
        skipClass();
        return 1;
      }
      return 1;
    }

    private void skipEscape() {
      if (at >= text.length()) {
        return;
      }
      char c = text.charAt(at++);
      if ((c == 'p' || c == 'P' || c == 'x') && at < text.length() && text.charAt(at) == '{') {
        skipTo('}');
      } else if (c == 'Q') {
        int end = text.indexOf("\\E", at);
        at = end < 0 ? text.length() : end + 2;
      }
    }

    private void skipClass() {
      if (at < text.length() && text.charAt(at) == '^') {
        at++;
      }
      if (at < text.length() && text.charAt(at) == ']') {
        at++;
      }
      while (at < text.length()) {
        char c = text.charAt(at++);
        if (c == '\\') {
          skipEscape();
        } else if (c == '[' && at < text.length() && text.charAt(at) == ':') {
          skipTo(']');
        } else if (c == ']') {
          return;
        }
      }
    }

    private void skipTo(char end) {
      int i = text.indexOf(end, at);
      at = i < 0 ? text.length() : i + 1;
    }

    /** How many times the atom just read may be written out: 1, or the larger bound of {n,m}. */
    private long repetition() {
      long times = 1;
      while (at < text.length()) {
        char c = text.charAt(at);
        if (c == '*' || c == '+' || c == '?') {
          at++;
        } else if (c == '{' && counted()) {
          int close = text.indexOf('}', at);
          String[] bounds = text.substring(at + 1, close).split(",", -1); // at most 20 characters
          String larger = bounds.length > 1 && !bounds[1].isEmpty() ? bounds[1] : bounds[0];
          times = Math.min(Long.MAX_VALUE / 4, times * (Math.min(parse(larger), 100_000L) + 1));
          at = close + 1;
        } else {
          return times;
        }
      }
      return times;
    }

    /** Whether the '{' at the cursor opens {n}, {n,} or {n,m} (else it is a literal brace). */
    private boolean counted() {
      int digits = 0;
      int commas = 0;
      for (int i = at + 1; i < text.length() && i <= at + 20; i++) {
        char c = text.charAt(i);
        if (c == '}') {
          return digits > 0 && text.charAt(at + 1) != ',';
        } else if (c == ',' && commas++ == 0) {
          continue;
        } else if (c < '0' || c > '9') {
          return false;
        }
        digits++;
      }
      return false;
    }

    private static long parse(String digits) {
      return digits.isEmpty() ? 0 : digits.length() > 6 ? 1_000_000 : Long.parseLong(digits);
    }
  }
}
