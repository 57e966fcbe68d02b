package dev.runway.instance;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * An instance as GET /v1/admin/instances shows it. {@code status}: running (beating), stopping,
 * stopped, or silent (no beat for three intervals: the process is gone or paused). {@code held}: the
 * work it holds under a live lease, by kind (runs, webhook_deliveries, run_requests).
 */
public record InstanceView(String id, String host, long pid, String version, String status, Instant startedAt,
    Instant heartbeatAt, long heartbeatAgeMs, Instant stoppingAt, Instant stoppedAt, Map<String, Integer> held) {

  /** {@code heldByTable}: the rows it holds, by table ({@link Leases#RUNS}, ...). */
  static InstanceView of(Instance i, Instant now, Duration interval, Map<String, Integer> heldByTable) {
    long age = Math.max(0, Duration.between(i.heartbeatAt(), now).toMillis());
    String status = i.stoppedAt() != null ? "stopped" : i.stoppingAt() != null ? "stopping"
        : age > 3 * interval.toMillis() ? "silent" : "running";
    Map<String, Integer> held = new LinkedHashMap<>();
    for (String table : new String[] {Leases.RUNS, Leases.DELIVERIES, Leases.REQUESTS}) {
      held.put(InstanceStatistics.KINDS.get(table), heldByTable.getOrDefault(table, 0));
    }
    return new InstanceView(i.id(), i.host(), i.pid(), i.version(), status, i.startedAt(), i.heartbeatAt(), age,
        i.stoppingAt(), i.stoppedAt(), held);
  }
}
