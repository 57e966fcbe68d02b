package dev.runway.metrics;

import dev.runway.config.Settings;

/** The metrics settings (metrics.* in config/runway.properties). */
public record MetricsSettings(boolean enabled, String token) {
  /** A shorter token could be guessed by a scraper's neighbours; a longer one costs nothing. */
  static final int MIN_TOKEN_LENGTH = 16;

  public static MetricsSettings from(Settings s) {
    String token = s.string("metrics.token");
    if (!token.isEmpty() && token.length() < MIN_TOKEN_LENGTH) {
      throw s.invalid("metrics.token", "must be empty or at least " + MIN_TOKEN_LENGTH
          + " characters, e.g. the output of `openssl rand -hex 32`");
    }
    return new MetricsSettings(s.bool("metrics.enabled"), token);
  }

  /** Whether scrapes from other addresses than loopback are let in (with the token). */
  public boolean hasToken() {
    return !token.isEmpty();
  }

  @Override
  public String toString() {
    return "MetricsSettings[enabled=" + enabled + ", token=" + (hasToken() ? "(set)" : "(none)") + "]";
  }
}
