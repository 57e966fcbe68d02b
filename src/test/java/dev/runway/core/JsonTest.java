package dev.runway.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class JsonTest {
  @Test
  void time_writes_what_the_formatter_writes() {
    SplittableRandom random = new SplittableRandom(40);
    long earliest = Instant.parse("-0001-12-31T23:59:59.999Z").getEpochSecond();
    long latest = Instant.parse("+10000-01-01T00:00:00Z").getEpochSecond();
    for (int i = 0; i < 100_000; i++) {
      Instant at = Instant.ofEpochSecond(random.nextLong(earliest, latest + 1), random.nextInt(1_000_000_000));
      assertEquals(Json.TIME.format(at), Json.time(at), at::toString);
    }
    for (String edge : new String[] {"0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "1970-01-01T00:00:00Z",
        "2024-02-29T12:00:00.0005Z", "-0001-12-31T23:59:59Z", "+10000-01-01T00:00:00Z"}) {
      Instant at = Instant.parse(edge);
      assertEquals(Json.TIME.format(at), Json.time(at), edge);
    }
    assertEquals("\"2026-11-27T23:18:27.123Z\"", Json.string(Instant.parse("2026-11-27T23:18:27.123456Z")));
  }

  @Test
  void short_documents_skip_the_count_and_long_ones_are_still_counted() throws Exception {
    assertEquals(2, Json.parseUntrusted("{\"a\":[1,2]}".getBytes(StandardCharsets.UTF_8)).size() + 1);
    // More values than the bound: one byte each at least, so such a document is always long enough to be counted.
    StringBuilder many = new StringBuilder("[0");
    for (int i = 0; i < Json.MAX_UNTRUSTED_VALUES; i++) {
      many.append(",0");
    }
    byte[] tooMany = many.append(']').toString().getBytes(StandardCharsets.UTF_8);
    assertInstanceOf(Json.TooMany.class, assertThrows(Json.InvalidJson.class, () -> Json.parseUntrusted(tooMany)));
    // A counted array's bound applies to a short document too.
    byte[] records = "{\"records\":[{},{},{}]}".getBytes(StandardCharsets.UTF_8);
    Json.TooMany refused = assertThrows(Json.TooMany.class, () -> Json.parseUntrusted(records, "records", 2));
    assertEquals("records", refused.path());
    assertEquals(3, Json.parseUntrusted(records, "records", 3).path("records").size());
  }

  @Test
  void an_unpaired_surrogate_is_refused_with_its_path() throws Exception {
    Json.InvalidJson refused = assertThrows(Json.InvalidJson.class, () -> Json.parseUntrusted(
        "{\"a\":{\"b\":[\"ok\",\"\\ud800\"]}}".getBytes(StandardCharsets.UTF_8)));
    assertEquals("a.b[1]", refused.path());
    for (String[] doc : new String[][] {{"{\"\\ud800\":1}", "(a field name)"}, {"{\"a\":{\"\\ud800\":1}}", "a"},
        {"[1,\"\\ud800\"]", "[1]"}, {"\"\\udc00\"", ""}, {"{\"a\":[{\"b\":\"\\ud800x\"}]}", "a[0].b"}}) {
      assertEquals(doc[1], assertThrows(Json.InvalidJson.class,
          () -> Json.parseUntrusted(doc[0].getBytes(StandardCharsets.UTF_8))).path(), doc[0]);
    }
    assertNull(Json.parseUntrusted("{\"a\":\"\\ud83d\\ude00\"}".getBytes(StandardCharsets.UTF_8)).path("b").textValue());
  }
}
