package dev.runway.workflow;

import com.google.re2j.Pattern;
import com.google.re2j.PatternSyntaxException;
import dev.cel.common.exceptions.CelInvalidArgumentException;
import dev.cel.runtime.CelFunctionBinding;
import dev.runway.core.WeighedCache;
import java.util.function.LongConsumer;
import java.util.regex.Matcher;

/**
 * The two CEL string functions whose standard Java bindings cost more than linear time on a
 * tenant's text, bound again. {@code contains} is Java's String.contains, which tries the needle at
 * every offset (4 to 7 s for a 256 KB text and a 128 KB needle, in one call). {@code matches} is RE2/J,
 * linear in the text but compiled in full, at every call, before CEL checks the program's size:
 * {@code ((a{1000}){1000}){1000}} ran the heap out.
 */
final class BoundedFunctions {
  /**
   * A pattern's length times the bounds of all its counted repetitions ({@code {n}},
   * {@code {n,m}}, {@code {n,}}), an upper bound on the size of its compiled program.
   */
  static final long MAX_PATTERN_SIZE = 10_000;
  /** Any {n}, {n,} or {n,m} in the text, escaped or not: counting too many only refuses sooner. */
  private static final java.util.regex.Pattern REPETITION = java.util.regex.Pattern.compile("\\{(\\d+)(?:,(\\d*))?}");
  private static final WeighedCache<String, Pattern> PATTERNS =
      new WeighedCache<>(8 << 20, (regex, pattern) -> 2L * regex.length() + 64L * pattern.programSize());

  static final CelFunctionBinding CONTAINS =
      CelFunctionBinding.from("contains_string", String.class, String.class, BoundedFunctions::contains);

  private BoundedFunctions() {}

  /** Whether the text holds the part, in time linear in both (Knuth-Morris-Pratt). */
  static boolean contains(String text, String part) {
    if (part.isEmpty()) {
      return true;
    }
    int[] fallback = new int[part.length()];
    for (int i = 1, k = 0; i < part.length(); i++) {
      while (k > 0 && part.charAt(i) != part.charAt(k)) {
        k = fallback[k - 1];
      }
      if (part.charAt(i) == part.charAt(k)) {
        k++;
      }
      fallback[i] = k;
    }
    for (int i = 0, k = 0; i < text.length(); i++) {
      while (k > 0 && text.charAt(i) != part.charAt(k)) {
        k = fallback[k - 1];
      }
      if (text.charAt(i) == part.charAt(k) && ++k == part.length()) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether the pattern matches somewhere in the text, as CEL's {@code matches} does. A pattern is
   * compiled once (a bounded cache) and only when its size bound allows; {@code charge} is told
   * the work: a compile's bound, and the text's length times the program's size (RE2/J steps
   * through the program for each character), over 8. A refused or invalid pattern is CEL's
   * invalid-argument error, whose message CEL gives as it is (for other exceptions it lists the
   * arguments, the whole text among them).
   */
  static boolean matches(String text, String regex, LongConsumer charge) {
    Pattern pattern = PATTERNS.get(regex);
    if (pattern == null) {
      long size = sizeBound(regex);
      if (size > MAX_PATTERN_SIZE) {
        throw new CelInvalidArgumentException("the pattern is too large: its length times its repetition counts is over "
            + MAX_PATTERN_SIZE);
      }
      charge.accept(size);
      try {
        pattern = Pattern.compile(regex);
      } catch (PatternSyntaxException e) {
        throw new CelInvalidArgumentException(e.getMessage());
      }
      PATTERNS.putIfAbsent(regex, pattern);
    }
    charge.accept((long) text.length() * pattern.programSize() / 8);
    return pattern.matcher(text).find();
  }

  private static long sizeBound(String regex) {
    long size = regex.length();
    Matcher m = REPETITION.matcher(regex);
    while (size <= MAX_PATTERN_SIZE && m.find()) {
      size *= Math.max(count(m.group(1)), m.group(2) == null ? 0 : count(m.group(2))) + 1;
    }
    return size;
  }

  private static long count(String digits) {
    return digits.isEmpty() ? 0 : digits.length() > 6 ? 1_000_000 : Long.parseLong(digits);
  }
}
