package dev.runway.outbound;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoField;
import java.util.List;
import java.util.Locale;

/**
 * Reads a Retry-After header (RFC 9110 section 10.2.3) sent by a webhook receiver or a model: delay-seconds
 * (digits only) or an HTTP-date in any of its three forms. Anything else, a negative or fractional
 * number among them, is ignored, so the caller falls back on its own backoff.
 */
public final class RetryAfter {
  /** asctime, an obsolete HTTP-date form a recipient must still accept (RFC 9110 section 5.6.7). */
  private static final DateTimeFormatter ASCTIME = new DateTimeFormatterBuilder().parseCaseInsensitive()
      .appendPattern("EEE MMM ppd HH:mm:ss yyyy").toFormatter(Locale.ENGLISH);

  private RetryAfter() {}

  /**
   * The wait the header asks for, at most {@code max}; zero for a date already past; null when the
   * header is absent or not a valid Retry-After.
   */
  public static Duration parse(String value, Instant now, Duration max) {
    if (value == null) {
      return null;
    }
    String v = value.trim();
    if (v.isEmpty()) {
      return null;
    }
    Duration wait = v.chars().allMatch(c -> c >= '0' && c <= '9') ? seconds(v, max) : untilDate(v, now);
    if (wait == null) {
      return null;
    }
    return wait.isNegative() ? Duration.ZERO : wait.compareTo(max) > 0 ? max : wait;
  }

  private static Duration seconds(String digits, Duration max) {
    try {
      return Duration.ofSeconds(Long.parseLong(digits));
    } catch (NumberFormatException | ArithmeticException tooLarge) {
      return max; // valid, only longer than any wait a caller takes
    }
  }

  private static Duration untilDate(String value, Instant now) {
    Instant date = date(value, now);
    return date == null ? null : Duration.between(now, date);
  }

  private static Instant date(String value, Instant now) {
    for (DateTimeFormatter form : List.of(DateTimeFormatter.RFC_1123_DATE_TIME, rfc850(now), ASCTIME)) {
      try {
        return form == DateTimeFormatter.RFC_1123_DATE_TIME ? ZonedDateTime.parse(value, form).toInstant()
            : LocalDateTime.parse(value, form).toInstant(ZoneOffset.UTC);
      } catch (DateTimeParseException notThisForm) {
        // the next form
      }
    }
    return null;
  }

  /**
   * RFC 850, the other obsolete form: its two-digit year is the one within 50 years ahead of now,
   * else the most recent past year with those digits (RFC 9110 section 5.6.7).
   */
  private static DateTimeFormatter rfc850(Instant now) {
    LocalDate base = now.atZone(ZoneOffset.UTC).toLocalDate().minusYears(49).withDayOfYear(1);
    return new DateTimeFormatterBuilder().parseCaseInsensitive()
        .appendPattern("EEEE, dd-MMM-")
        .appendValueReduced(ChronoField.YEAR, 2, 2, base)
        .appendPattern(" HH:mm:ss 'GMT'")
        .toFormatter(Locale.ENGLISH);
  }
}
