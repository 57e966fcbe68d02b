package dev.runway.webhook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** A delivery refused by the address guard is named in the log at WARN, once per endpoint, not per attempt. */
class RefusedEndpointsTest {
  @Test
  void each_refused_endpoint_is_named_once_at_warn() {
    RefusedEndpoints refused = new RefusedEndpoints();
    String reason = "refused to call 127.0.0.1: it resolves to no public address";
    // Tests log to the file simplelogger.properties names: what this test adds to it is read back.
    LoggerFactory.getLogger(WebhookDispatcher.class).isWarnEnabled(); // the log file is open from here on
    long before = size(LOG);
    for (int i = 0; i < 5; i++) {
      refused.refused(endpoint("we_one"), reason);
      refused.refused(endpoint("we_two"), reason);
    }
    byte[] log = read(LOG);
    String added = new String(log, (int) before, log.length - (int) before, StandardCharsets.UTF_8);
    List<String> lines = Arrays.stream(added.split("\n"))
        .filter(line -> line.contains("deliveries are refused")).toList();
    assertEquals(2, lines.size(), lines::toString);
    assertTrue(lines.get(0).contains("WARN") && lines.get(0).contains("we_one")
        && lines.get(0).contains("http://127.0.0.1:9000/hook") && lines.get(0).contains(reason), lines::toString);
    assertTrue(lines.get(1).contains("we_two"), lines::toString);
  }

  /** This JVM's server log (each test JVM has its own, see pom.xml). */
  private static final Path LOG = Path.of(System.getProperty("org.slf4j.simpleLogger.logFile", "target/test-server.log"));

  private static long size(Path file) {
    try {
      return Files.exists(file) ? Files.size(file) : 0;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static byte[] read(Path file) {
    try {
      return Files.readAllBytes(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static WebhookEndpoint endpoint(String id) {
    Instant now = Instant.now();
    return new WebhookEndpoint(id, "ws", "http://127.0.0.1:9000/hook", null, "[\"run.*\"]", true, null, "sealed", null,
        null, null, now, now);
  }
}
