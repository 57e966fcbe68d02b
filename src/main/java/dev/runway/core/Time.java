package dev.runway.core;

import java.time.Instant;
import java.time.temporal.ChronoUnit;

/** The clock Runway stores times with: UTC instants at millisecond precision, as the API shows them. */
public final class Time {
  private Time() {}

  public static Instant now() {
    return Instant.now().truncatedTo(ChronoUnit.MILLIS);
  }
}
