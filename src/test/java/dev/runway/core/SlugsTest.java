package dev.runway.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.SplittableRandom;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class SlugsTest {
  /** The rule as a regular expression, which isSlug checks without one. */
  private static final Pattern RULE = Pattern.compile("[a-z0-9][a-z0-9_-]{0,63}");

  @Test
  void is_slug_follows_the_rule() {
    String alphabet = "az09_-AZ.é/ ";
    SplittableRandom random = new SplittableRandom(40);
    for (int i = 0; i < 200_000; i++) {
      StringBuilder text = new StringBuilder();
      for (int n = random.nextInt(0, 67); n > 0; n--) {
        text.append(random.nextInt(4) == 0 ? alphabet.charAt(random.nextInt(alphabet.length()))
            : (char) ('a' + random.nextInt(26)));
      }
      assertEquals(RULE.matcher(text).matches(), Slugs.isSlug(text.toString()), text::toString);
    }
    assertFalse(Slugs.isSlug(null));
    assertEquals(true, Slugs.isSlug("a".repeat(64)));
    assertFalse(Slugs.isSlug("a".repeat(65)));
    assertFalse(Slugs.isSlug("-a"));
    assertFalse(Slugs.isSlug("_a"));
  }
}
