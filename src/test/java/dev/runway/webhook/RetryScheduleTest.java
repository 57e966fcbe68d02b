package dev.runway.webhook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A failed delivery's wait: the endpoint's Retry-After, else four times longer per attempt with ±20% jitter. */
class RetryScheduleTest {
  private static final Instant NOW = Instant.parse("2026-11-26T20:00:00Z");
  private final RetrySchedule schedule = new RetrySchedule(Duration.ofSeconds(1));

  @Test
  void without_retry_after_the_wait_grows_four_times_per_attempt_with_jitter() {
    assertBetween(800, 1_200, 1);
    assertBetween(3_200, 4_800, 2);
    assertBetween(12_800, 19_200, 3);
    Set<Duration> seen = new HashSet<>();
    for (int i = 0; i < 50; i++) {
      seen.add(schedule.delay(1, null, NOW));
    }
    assertTrue(seen.size() > 1, "jittered: " + seen);
  }

  @Test
  void the_wait_without_retry_after_is_at_most_ten_hours_before_jitter() {
    long tenHours = Duration.ofHours(10).toMillis();
    assertBetween(tenHours * 8 / 10, tenHours * 12 / 10, 12);
    assertBetween(tenHours * 8 / 10, tenHours * 12 / 10, 1_000);
  }

  @Test
  void retry_after_is_the_wait_whatever_the_attempt() {
    assertEquals(Duration.ofSeconds(7), schedule.delay(1, "7", NOW));
    assertEquals(Duration.ofSeconds(7), schedule.delay(9, "7", NOW));
    assertEquals(Duration.ofSeconds(90), schedule.delay(3, "Thu, 26 Nov 2026 20:01:30 GMT", NOW));
    assertEquals(Duration.ZERO, schedule.delay(3, "Thu, 26 Nov 2026 19:00:00 GMT", NOW), "a date already past");
  }

  @Test
  void retry_after_is_honoured_up_to_a_day() {
    assertEquals(Duration.ofHours(24), schedule.delay(1, "172800", NOW));
  }

  @Test
  void an_invalid_retry_after_falls_back_on_the_backoff() {
    for (String invalid : new String[] {"-1", "1.5", "later", ""}) {
      Duration d = schedule.delay(2, invalid, NOW);
      assertTrue(d.toMillis() >= 3_200 && d.toMillis() <= 4_800, invalid + ": " + d);
    }
  }

  private void assertBetween(long minMillis, long maxMillis, int attempts) {
    for (int i = 0; i < 200; i++) {
      long millis = schedule.delay(attempts, null, NOW).toMillis();
      assertTrue(millis >= minMillis && millis <= maxMillis,
          "attempt " + attempts + ": " + millis + " ms, not within " + minMillis + "-" + maxMillis);
    }
  }
}
