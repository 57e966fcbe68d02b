package dev.runway.webhook;

import dev.runway.outbound.RetryAfter;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ThreadLocalRandom;

/** When a failed delivery is attempted again: what the endpoint's Retry-After asks, else a growing backoff. */
final class RetrySchedule {
  /** Retry delays grow four times per attempt, up to this. */
  static final Duration MAX_DELAY = Duration.ofHours(10);
  /** The longest Retry-After honoured. */
  static final Duration MAX_RETRY_AFTER = Duration.ofHours(24);

  private final Duration base;

  /** {@code base} (webhooks.retry_base_ms): the wait after the first failed attempt, before jitter. */
  RetrySchedule(Duration base) {
    this.base = base;
  }

  /**
   * The wait before the next attempt, after {@code attempts} made: Retry-After when the endpoint sent
   * a valid one (at most a day), else the base delay times four per attempt made, at most 10 hours,
   * with jitter of ±20%.
   */
  Duration delay(int attempts, String retryAfter, Instant now) {
    Duration asked = RetryAfter.parse(retryAfter, now, MAX_RETRY_AFTER);
    if (asked != null) {
      return asked;
    }
    double factor = Math.pow(4, Math.min(attempts - 1, 20));
    double millis = Math.min(base.toMillis() * factor, MAX_DELAY.toMillis());
    return Duration.ofMillis((long) (millis * ThreadLocalRandom.current().nextDouble(0.8, 1.2)));
  }
}
