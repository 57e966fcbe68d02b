package dev.runway.instance;

import dev.runway.core.Time;
import dev.runway.metrics.Metrics;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.jdbi.v3.core.Jdbi;

/** The instances and the work each holds, as /metrics shows them: read from the registry at each scrape. */
public final class InstanceStatistics implements Supplier<Metrics.Cluster> {
  /** The kinds of work counted, as the metrics name them. */
  public static final Map<String, String> KINDS = Map.of(Leases.RUNS, "runs", Leases.DELIVERIES, "webhook_deliveries",
      Leases.REQUESTS, "run_requests", "instance", "instances");

  private final Jdbi jdbi;
  private final Duration interval;

  /** {@code interval}: how often instances beat, to tell which are silent. */
  public InstanceStatistics(Jdbi jdbi, Duration interval) {
    this.jdbi = jdbi;
    this.interval = interval;
  }

  /** Registers the instance series, and the takeovers {@code leases} counted. */
  public static void watch(Metrics metrics, Jdbi jdbi, Leases leases, Duration interval) {
    List<String> kinds = List.of("runs", "webhook_deliveries", "run_requests", "instances");
    Map<String, String> tables = new HashMap<>();
    KINDS.forEach((table, kind) -> tables.put(kind, table));
    metrics.watchInstances(new InstanceStatistics(jdbi, interval), kinds, kind -> leases.takeovers(tables.get(kind)));
  }

  @Override
  public Metrics.Cluster get() {
    Instant now = Time.now();
    return jdbi.withExtension(InstanceDao.class, dao -> {
      Map<String, Integer> states = new HashMap<>(Map.of("running", 0, "stopping", 0, "stopped", 0, "silent", 0));
      Map<String, Double> ages = new HashMap<>();
      for (Instance i : dao.newest(1000)) {
        InstanceView view = InstanceView.of(i, now, interval, Map.of());
        states.merge(view.status(), 1, Integer::sum);
        if (i.stoppedAt() == null) {
          ages.put(i.id(), view.heartbeatAgeMs() / 1000.0);
        }
      }
      Map<String, Map<String, Integer>> held = new HashMap<>();
      dao.held(now).forEach((instance, byTable) -> {
        Map<String, Integer> byKind = new HashMap<>();
        byTable.forEach((table, n) -> byKind.put(KINDS.get(table), n));
        held.put(instance, byKind);
      });
      return new Metrics.Cluster(states, ages, held);
    });
  }
}
