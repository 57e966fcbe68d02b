package dev.runway.core;

import java.util.regex.Pattern;

/** Slugs name workflows, projects and workspaces: 1-64 of a-z, 0-9, '-' and '_', not starting with '-' or '_'. */
public final class Slugs {
  private static final Pattern SLUG = Pattern.compile("[a-z0-9][a-z0-9_-]{0,63}");
  public static final String RULE = "1-64 lowercase letters, digits, '-' and '_', starting with a letter or digit";

  private Slugs() {}

  public static boolean isSlug(String text) {
    return text != null && SLUG.matcher(text).matches();
  }
}
