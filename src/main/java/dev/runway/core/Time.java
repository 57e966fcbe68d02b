package dev.runway.core;

import java.time.Instant;
import java.time.temporal.ChronoUnit;

/** The clock Runway stores times with: UTC instants at millisecond precision, as the API shows them. */
public final class Time {
  /**
   * The times Runway accepts from callers: years 1 to 9999. H2 and PostgreSQL store different ranges
   * (and failed differently beyond them); within these years both store and compare alike.
   */
  public static final Instant EARLIEST = Instant.parse("0001-01-01T00:00:00Z");
  public static final Instant LATEST = Instant.parse("9999-12-31T23:59:59.999Z");

  private Time() {}

  public static Instant now() {
    return Instant.now().truncatedTo(ChronoUnit.MILLIS);
  }

  /** Whether the time lies within {@link #EARLIEST} and {@link #LATEST}. */
  public static boolean storable(Instant time) {
    return !time.isBefore(EARLIEST) && !time.isAfter(LATEST);
  }
}
