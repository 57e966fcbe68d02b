package dev.runway.events;

import dev.runway.config.Settings;
import java.time.Duration;

/** The live event stream settings (sse.* in config/runway.properties). */
public record StreamSettings(
    Duration heartbeat,
    Duration pollInterval,
    int maxStreams,
    int maxStreamsPerKey,
    int maxBufferedBytes,
    long maxBufferedBytesTotal) {

  public static StreamSettings from(Settings s) {
    return new StreamSettings(
        Duration.ofMillis(s.integer("sse.heartbeat_ms", 10, 3_600_000)),
        Duration.ofMillis(s.integer("sse.poll_interval_ms", 10, 600_000)),
        s.integer("sse.max_streams", 0, 1_000_000),
        s.integer("sse.max_streams_per_key", 0, 1_000_000),
        s.integer("sse.max_buffered_bytes", 4096, 64 * 1024 * 1024),
        s.integer("sse.max_buffered_bytes_total", 65_536, Integer.MAX_VALUE));
  }
}
