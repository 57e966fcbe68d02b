package dev.runway.console;

import dev.runway.config.Settings;
import java.time.Duration;

/** The console settings (console.* in config/runway.properties). */
public record ConsoleSettings(
    boolean enabled,
    boolean signupOpen,
    boolean secureCookies,
    Duration sessionIdle,
    Duration sessionMax,
    int signinsPerMinutePerEmail,
    int signinsPerMinutePerAddress,
    int lockoutFailures,
    Duration lockout,
    int maxConcurrentHashes) {

  public static ConsoleSettings from(Settings s) {
    String signup = s.string("console.signup");
    if (!signup.equals("open") && !signup.equals("closed")) {
      throw s.invalid("console.signup", "must be open or closed");
    }
    int hashes = s.integer("console.max_concurrent_hashes", 0, 1024);
    return new ConsoleSettings(
        s.bool("console.enabled"),
        signup.equals("open"),
        s.bool("console.secure_cookies"),
        Duration.ofMinutes(s.integer("console.session_idle_minutes", 1, 60 * 24 * 30)),
        Duration.ofHours(s.integer("console.session_max_hours", 1, 24 * 365)),
        s.integer("console.signins_per_minute_per_email", 1, 10_000),
        s.integer("console.signins_per_minute_per_address", 1, 100_000),
        s.integer("console.lockout_failures", 1, 10_000),
        Duration.ofMinutes(s.integer("console.lockout_minutes", 1, 60 * 24)),
        hashes == 0 ? Math.max(1, Runtime.getRuntime().availableProcessors() / 2) : hashes);
  }
}
