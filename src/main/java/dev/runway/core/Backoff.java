package dev.runway.core;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/** How long a failed call waits before its next attempt: for http steps and model calls alike. */
public final class Backoff {
  public static final Duration MAX = Duration.ofMinutes(5);

  private Backoff() {}

  /** Exponential backoff with jitter: base * 2^(attempt-1), at most 5 minutes, then 50-100% of that. */
  public static Duration jittered(Duration base, int attempt) {
    long exp = Math.min(MAX.toMillis(), base.toMillis() << Math.min(attempt - 1, 20));
    return Duration.ofMillis(exp / 2 + ThreadLocalRandom.current().nextLong(exp / 2 + 1));
  }
}
