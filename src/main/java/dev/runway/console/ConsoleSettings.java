package dev.runway.console;

import dev.runway.config.Settings;
import java.time.Duration;

/** The console settings (console.* in config/runway.properties). */
public record ConsoleSettings(
    boolean enabled,
    Signup signup,
    boolean secureCookies,
    Duration sessionIdle,
    Duration sessionMax,
    int signinsPerMinutePerEmail,
    int signinsPerMinutePerAddress,
    int lockoutFailures,
    Duration lockout,
    int maxConcurrentHashes) {

  /** Who may sign up: anyone, no one (accounts from the command line), or whoever has an invitation. */
  public enum Signup { OPEN, CLOSED, INVITE }

  public static ConsoleSettings from(Settings s) {
    Signup signup = switch (s.string("console.signup")) {
      case "auto" -> isLoopback(s.string("http.host")) ? Signup.OPEN : Signup.CLOSED;
      case "open" -> Signup.OPEN;
      case "closed" -> Signup.CLOSED;
      case "invite" -> Signup.INVITE;
      default -> throw s.invalid("console.signup", "must be auto, open, closed or invite");
    };
    int hashes = s.integer("console.max_concurrent_hashes", 0, 1024);
    return new ConsoleSettings(
        s.bool("console.enabled"),
        signup,
        s.bool("console.secure_cookies"),
        Duration.ofMinutes(s.integer("console.session_idle_minutes", 1, 60 * 24 * 30)),
        Duration.ofHours(s.integer("console.session_max_hours", 1, 24 * 365)),
        s.integer("console.signins_per_minute_per_email", 1, 10_000),
        s.integer("console.signins_per_minute_per_address", 1, 100_000),
        s.integer("console.lockout_failures", 1, 10_000),
        Duration.ofMinutes(s.integer("console.lockout_minutes", 1, 60 * 24)),
        hashes == 0 ? Math.max(1, Runtime.getRuntime().availableProcessors() / 2) : hashes);
  }

  /** Whether the sign-up form is offered (to anyone, or to those with an invitation). */
  public boolean signupOpen() {
    return signup != Signup.CLOSED;
  }

  /**
   * Whether the server listens on this machine only: then only its own users reach the console,
   * and open sign-up (console.signup=auto) gives nothing away.
   */
  static boolean isLoopback(String host) {
    String h = host.toLowerCase(java.util.Locale.ROOT);
    return h.equals("localhost") || h.equals("::1") || h.equals("[::1]") || h.matches("127\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}");
  }
}
