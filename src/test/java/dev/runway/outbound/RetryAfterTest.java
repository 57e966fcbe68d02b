package dev.runway.outbound;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.NullSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Retry-After as RFC 9110 defines it: delay-seconds or an HTTP-date, anything else ignored, capped by the caller. */
class RetryAfterTest {
  /** A Thursday. */
  private static final Instant NOW = Instant.parse("2026-11-26T20:00:00Z");
  private static final Duration DAY = Duration.ofDays(1);

  @Test
  void delay_seconds_are_the_wait() {
    assertEquals(Duration.ofSeconds(120), RetryAfter.parse("120", NOW, DAY));
    assertEquals(Duration.ZERO, RetryAfter.parse("0", NOW, DAY));
    assertEquals(Duration.ofSeconds(5), RetryAfter.parse(" 5 ", NOW, DAY), "surrounding whitespace is allowed");
  }

  @Test
  void a_wait_longer_than_the_callers_cap_is_the_cap() {
    assertEquals(DAY, RetryAfter.parse("86401", NOW, DAY));
    assertEquals(Duration.ofMinutes(5), RetryAfter.parse("3600", NOW, Duration.ofMinutes(5)));
    assertEquals(DAY, RetryAfter.parse("99999999999999999999999", NOW, DAY), "more digits than a long holds");
    assertEquals(DAY, RetryAfter.parse("Fri, 27 Nov 2026 20:00:01 GMT", NOW, DAY));
  }

  @Test
  void an_imf_fixdate_is_the_wait_until_it() {
    assertEquals(Duration.ofSeconds(120), RetryAfter.parse("Thu, 26 Nov 2026 20:02:00 GMT", NOW, DAY));
  }

  @Test
  void the_obsolete_http_date_forms_are_accepted() {
    assertEquals(Duration.ofSeconds(120), RetryAfter.parse("Thursday, 26-Nov-26 20:02:00 GMT", NOW, DAY), "RFC 850");
    assertEquals(Duration.ofSeconds(120), RetryAfter.parse("Thu Nov 26 20:02:00 2026", NOW, DAY), "asctime");
    assertEquals(Duration.ofDays(5), RetryAfter.parse("Tue Dec  1 20:00:00 2026", NOW, Duration.ofDays(30)),
        "asctime with a one-digit day");
  }

  @Test
  void a_two_digit_year_more_than_50_years_ahead_is_in_the_past_century() {
    // 2094 would be far ahead (and 6 November 2094 is no Sunday): it is 1994, so the wait is over.
    assertEquals(Duration.ZERO, RetryAfter.parse("Sunday, 06-Nov-94 08:49:37 GMT", NOW, DAY));
    assertEquals(Duration.ofDays(14_610), RetryAfter.parse("Friday, 26-Nov-66 20:00:00 GMT", NOW,
        Duration.ofDays(365 * 100)), "40 years ahead stays ahead");
  }

  @Test
  void a_date_already_past_means_no_wait() {
    assertEquals(Duration.ZERO, RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", NOW, DAY));
    assertEquals(Duration.ZERO, RetryAfter.parse("Thu, 26 Nov 2026 19:59:59 GMT", NOW, DAY));
  }

  @ParameterizedTest
  @NullSource
  @ValueSource(strings = {"", "   ", "-5", "+5", "1.5", "1e3", "NaN", "Infinity", "5s", "soon", "0x10",
      "Thu, 26 Nov 2026 25:00:00 GMT", "26 Nov 2026 20:02:00", "2026-11-26T20:02:00Z", "120, 60"})
  void anything_else_is_ignored(String value) {
    assertNull(RetryAfter.parse(value, NOW, DAY));
  }
}
