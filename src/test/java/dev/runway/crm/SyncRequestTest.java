package dev.runway.crm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The quick path for times in Runway's own form reads them as OffsetDateTime.parse does. */
class SyncRequestTest {
  @Test
  void times_in_runways_form_read_as_any_iso_time_does() {
    for (String text : List.of("2026-11-20T10:00:00.000Z", "2024-02-29T23:59:59.999Z", "0001-01-01T00:00:00.000Z",
        "9999-12-31T23:59:59.999Z", "2026-11-20T10:00:00Z", "2026-11-20T10:00:00.5+02:00",
        "2026-11-20T10:00:00.123456789Z")) {
      assertEquals(OffsetDateTime.parse(text).toInstant(), SyncRequest.parseTime(text), text);
    }
    for (String text : List.of("2026-13-20T10:00:00.000Z", "2025-02-29T10:00:00.000Z", "2026-11-20T24:00:00.000Z",
        "2026-11-20T10:60:00.000Z", "2026-11-20 10:00:00.000Z", "2026-11-20T10:00:00.000")) {
      assertThrows(DateTimeParseException.class, () -> SyncRequest.parseTime(text), text);
      assertThrows(DateTimeParseException.class, () -> OffsetDateTime.parse(text), text);
    }
  }
}
