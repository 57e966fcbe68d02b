package dev.runway.core;

/** Slugs name workflows, projects and workspaces: 1-64 of a-z, 0-9, '-' and '_', not starting with '-' or '_'. */
public final class Slugs {
  public static final String RULE = "1-64 lowercase letters, digits, '-' and '_', starting with a letter or digit";

  private Slugs() {}

  public static boolean isSlug(String text) {
    if (text == null || text.isEmpty() || text.length() > 64 || !lowerOrDigit(text.charAt(0))) {
      return false;
    }
    for (int i = 1; i < text.length(); i++) {
      char c = text.charAt(i);
      if (!lowerOrDigit(c) && c != '_' && c != '-') {
        return false;
      }
    }
    return true;
  }

  private static boolean lowerOrDigit(char c) {
    return c >= 'a' && c <= 'z' || c >= '0' && c <= '9';
  }
}
