package dev.runway.instance;

import java.time.Duration;
import java.time.Instant;

/**
 * An instance as GET /v1/admin/instances shows it. {@code status}: running (beating), stopping,
 * stopped, or silent (no beat for three intervals: the process is gone or paused).
 */
public record InstanceView(String id, String host, long pid, String version, String status, Instant startedAt,
    Instant heartbeatAt, long heartbeatAgeMs, Instant stoppingAt, Instant stoppedAt) {

  static InstanceView of(Instance i, Instant now, Duration interval) {
    long age = Math.max(0, Duration.between(i.heartbeatAt(), now).toMillis());
    String status = i.stoppedAt() != null ? "stopped" : i.stoppingAt() != null ? "stopping"
        : age > 3 * interval.toMillis() ? "silent" : "running";
    return new InstanceView(i.id(), i.host(), i.pid(), i.version(), status, i.startedAt(), i.heartbeatAt(), age,
        i.stoppingAt(), i.stoppedAt());
  }
}
