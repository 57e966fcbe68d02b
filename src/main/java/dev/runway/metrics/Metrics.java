package dev.runway.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.expositionformats.OpenMetricsTextFormatWriter;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;
import org.slf4j.LoggerFactory;

/**
 * Runway's metrics, served at GET /metrics in Prometheus's text format: one method per thing
 * counted, so the code that counts names no meter. Meters on a hot path are made once and kept
 * (a request's timer by route, method and status), since looking one up in the registry by name
 * and tags costs more than recording. Off ({@link #off}), every method does nothing.
 */
public final class Metrics implements AutoCloseable {
  /** What an unmatched request (404, or refused before routing) is counted under: never its raw path. */
  public static final String UNMATCHED = "unmatched";

  private static final Duration[] REQUEST_BUCKETS = millis(5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000);
  private static final Duration[] COMMIT_BUCKETS = millis(1, 2, 5, 10, 25, 50, 100, 250, 500, 1000);
  private static final Duration[] WEBHOOK_BUCKETS = millis(50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000);
  private static final double[] BATCH_BUCKETS = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  private static final List<String> RUN_KINDS = List.of("workflow", "agent");
  private static final List<String> RUN_ENDS = List.of("succeeded", "failed", "canceled", "rejected");
  private static final List<String> CRM_OUTCOMES = List.of("created", "updated", "unchanged", "deleted", "stale",
      "failed");
  private static final List<String> WEBHOOK_OUTCOMES = List.of("succeeded", "failed_attempt", "gave_up", "disabled");

  private final MeterRegistry registry;
  /** The registry scrapes are served from; null when metrics are off. */
  private final PrometheusMeterRegistry prometheus;
  private final JvmGcMetrics gc;
  private final Map<RequestKey, Timer> requests = new ConcurrentHashMap<>();
  private final Map<String, Counter> runsStarted = new ConcurrentHashMap<>();
  /** By kind, then by the ending event's type (run.succeeded, ...). */
  private final Map<String, Map<String, Counter>> runsEnded = new ConcurrentHashMap<>();
  private final Timer commits;
  private final DistributionSummary commitWrites;
  private final Map<String, Counter> crmRecords = new ConcurrentHashMap<>();
  private final Map<String, Counter> webhookDeliveries = new ConcurrentHashMap<>();
  private final Map<String, Timer> webhookAttempts = new ConcurrentHashMap<>();

  /** Series read at each scrape (the instances: from the database). */
  private final List<Runnable> beforeScrape = new java.util.concurrent.CopyOnWriteArrayList<>();
  /** What function counters read, held strongly (the registry holds it weakly). */
  private final List<Object> heldStrongly = new java.util.concurrent.CopyOnWriteArrayList<>();

  private record RequestKey(String route, String method, int status) {}

  private Metrics(MeterRegistry registry, PrometheusMeterRegistry prometheus, JvmGcMetrics gc) {
    this.registry = registry;
    this.prometheus = prometheus;
    this.gc = gc;
    // The series that are known in advance exist from the start at 0, so that rate() and increase()
    // see their first increment.
    for (String kind : RUN_KINDS) {
      runStarted(kind);
      for (String status : RUN_ENDS) {
        runEnded(kind, "run." + status);
      }
    }
    this.commits = Timer.builder("runway.commit")
        .description("Group commits: one transaction each, from its begin to its commit")
        .serviceLevelObjectives(COMMIT_BUCKETS)
        .register(registry);
    this.commitWrites = DistributionSummary.builder("runway.commit.batch.writes")
        .description("Writes (requests' and the engine's) committed together in one group commit")
        .serviceLevelObjectives(BATCH_BUCKETS)
        .register(registry);
    CRM_OUTCOMES.forEach(this::crmCounter);
    WEBHOOK_OUTCOMES.forEach(this::webhookCounter);
  }

  /** Metrics kept for scrapes, with the JVM's own (memory, garbage collection, threads, CPU, uptime). */
  public static Metrics prometheus() {
    PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    new JvmMemoryMetrics().bindTo(prometheus);
    JvmGcMetrics gc = new JvmGcMetrics();
    gc.bindTo(prometheus);
    new JvmThreadMetrics().bindTo(prometheus);
    new ProcessorMetrics().bindTo(prometheus);
    new UptimeMetrics().bindTo(prometheus);
    return new Metrics(prometheus, prometheus, gc);
  }

  /** No metrics: every method does nothing (a registry without any registry behind it). */
  public static Metrics off() {
    return new Metrics(new CompositeMeterRegistry(), null, null);
  }

  /** Metrics as {@code settings} ask: kept for scrapes, or off. */
  public static Metrics of(MetricsSettings settings) {
    return settings.enabled() ? prometheus() : off();
  }

  public boolean enabled() {
    return prometheus != null;
  }

  /** The registry, for libraries that report through Micrometer themselves (HikariCP). */
  public MeterRegistry registry() {
    return registry;
  }

  // ---- HTTP ----

  /** A request answered: {@code route} is the matched route's template (or {@link #UNMATCHED}). */
  public void request(String route, String method, int status, long nanos) {
    RequestKey key = new RequestKey(route, method, status);
    Timer timer = requests.get(key);
    if (timer == null) {
      timer = requests.computeIfAbsent(key, k -> Timer.builder("runway.http.requests")
          .description("HTTP requests by route template, method and status, from the request to the answer")
          .tags("route", k.route(), "method", k.method(), "status", Integer.toString(k.status()))
          .serviceLevelObjectives(REQUEST_BUCKETS)
          .register(registry));
    }
    timer.record(nanos, TimeUnit.NANOSECONDS);
  }

  // ---- runs ----

  /**
   * A run event of a run of {@code kind} was committed: run.started counts a start, run.succeeded,
   * run.failed, run.canceled and run.rejected an end; the others count nothing.
   */
  public void runEvent(String kind, String type) {
    if (type.equals("run.started")) {
      runStarted(kind).increment();
      return;
    }
    Map<String, Counter> ends = runsEnded.get(kind);
    Counter ended = ends == null ? null : ends.get(type);
    if (ended != null) {
      ended.increment();
    }
  }

  private Counter runStarted(String kind) {
    return runsStarted.computeIfAbsent(kind, k -> Counter.builder("runway.runs.started")
        .description("Runs started (committed), by kind")
        .tag("kind", k)
        .register(registry));
  }

  private void runEnded(String kind, String type) {
    runsEnded.computeIfAbsent(kind, k -> new ConcurrentHashMap<>()).computeIfAbsent(type, t ->
        Counter.builder("runway.runs.ended")
            .description("Runs that reached an end state (committed), by kind and status")
            .tags("kind", kind, "status", t.substring("run.".length()))
            .register(registry));
  }

  // ---- group commit ----

  /** A group commit's transaction committed {@code writes} writes in {@code nanos}. */
  public void committed(int writes, long nanos) {
    commits.record(nanos, TimeUnit.NANOSECONDS);
    commitWrites.record(writes);
  }

  /** The writes waiting for the group commit, read at each scrape. */
  public void watchCommitQueue(Supplier<Number> waiting) {
    gauge("runway.commit.queue.writes", "Writes waiting for the group commit", waiting);
  }

  // ---- engine ----

  /**
   * The engine's load, read at each scrape: runs due and waiting for an engine (its backlog), and
   * calls in flight with the memory they hold.
   */
  public void watchEngine(Supplier<Number> dueRuns, Supplier<Number> callsInFlight, Supplier<Number> callBytes) {
    gauge("runway.engine.due.runs", "Runs due now that no engine has taken yet: the backlog of every "
        + "instance on the database (counted up to 100,000)", dueRuns);
    gauge("runway.engine.calls.in.flight", "Calls (http steps, tools, model calls) this engine is waiting on",
        callsInFlight);
    gauge("runway.engine.call.bytes.in.flight", "Memory the calls in flight hold, as reserved", callBytes);
  }

  // ---- instances ----

  /** The instances sharing the database, as read at a scrape. */
  public record Cluster(Map<String, Integer> instancesByState, Map<String, Double> heartbeatAgeSeconds,
      Map<String, Map<String, Integer>> workHeld) {}

  /**
   * The instances, read from the database at each scrape ({@code cluster}): how many in each state,
   * each live one's heartbeat age and the work it holds by kind; and the work this instance took
   * over from others, by kind ({@code takeovers}).
   */
  public void watchInstances(Supplier<Cluster> cluster, List<String> kinds, ToDoubleFunction<String> takeovers) {
    MultiGauge states = MultiGauge.builder("runway.instances")
        .description("Instances registered on the database, by state (running, stopping, stopped, silent)")
        .register(registry);
    MultiGauge ages = MultiGauge.builder("runway.instance.heartbeat.age")
        .description("Seconds since each instance not stopped last beat").baseUnit("seconds").register(registry);
    MultiGauge held = MultiGauge.builder("runway.instance.work.held")
        .description("Work each instance holds under a live lease, by kind (runs, webhook_deliveries, run_requests)")
        .register(registry);
    // A function counter holds its object weakly: kept here, it lives as long as the metrics.
    heldStrongly.add(takeovers);
    for (String kind : kinds) {
      FunctionCounter.builder("runway.takeovers", takeovers, t -> t.applyAsDouble(kind))
          .description("Work this instance took over from instances that died, paused or lost their leases, by kind")
          .tag("kind", kind).register(registry);
    }
    beforeScrape.add(() -> {
      Cluster now = cluster.get();
      states.register(now.instancesByState().entrySet().stream()
          .map(e -> MultiGauge.Row.of(Tags.of("state", e.getKey()), e.getValue())).toList(), true);
      ages.register(now.heartbeatAgeSeconds().entrySet().stream()
          .map(e -> MultiGauge.Row.of(Tags.of("instance", e.getKey()), e.getValue())).toList(), true);
      held.register(now.workHeld().entrySet().stream().flatMap(i -> i.getValue().entrySet().stream()
          .map(k -> MultiGauge.Row.of(Tags.of("instance", i.getKey(), "kind", k.getKey()), k.getValue())))
          .toList(), true);
    });
  }

  // ---- webhooks ----

  /**
   * A webhook delivery's attempt ended with the delivery {@code status} (pending: it will be tried
   * again; failed: given up; succeeded). {@code attempted} is false when no attempt was made since the
   * endpoint was disabled; {@code took} is the attempt's time.
   */
  public void webhookDelivery(String status, boolean attempted, Duration took) {
    String outcome = !attempted ? "disabled" : switch (status) {
      case "succeeded" -> "succeeded";
      case "pending" -> "failed_attempt";
      default -> "gave_up";
    };
    if (attempted) {
      webhookAttempts.computeIfAbsent(outcome, o -> Timer.builder("runway.webhook.attempts")
          .description("Webhook delivery attempts, from the request to the answer (or its failure), by outcome")
          .tag("outcome", o)
          .serviceLevelObjectives(WEBHOOK_BUCKETS)
          .register(registry)).record(took);
    }
    webhookCounter(outcome).increment();
  }

  private Counter webhookCounter(String outcome) {
    return webhookDeliveries.computeIfAbsent(outcome, o -> Counter.builder("runway.webhook.deliveries")
        .description("Webhook delivery attempts by outcome: succeeded, failed_attempt (tried again later), "
            + "gave_up (failed for good), disabled (not attempted: the endpoint is disabled)")
        .tag("outcome", o)
        .register(registry));
  }

  // ---- CRM ----

  /** A CRM sync committed {@code n} records with this outcome (created, updated, unchanged, deleted, stale, failed). */
  public void crmRecordsSynced(String outcome, int n) {
    if (n > 0) {
      crmCounter(outcome).increment(n);
    }
  }

  private Counter crmCounter(String outcome) {
    return crmRecords.computeIfAbsent(outcome, o -> Counter.builder("runway.crm.records.synced")
        .description("CRM records in syncs, by outcome")
        .tag("outcome", o)
        .register(registry));
  }

  // ---- scrapes ----

  /** The format a scrape is answered in: OpenMetrics if the scraper asks for it, else Prometheus text 0.0.4. */
  public static String contentType(String accept) {
    return accept != null && accept.contains("application/openmetrics-text")
        ? OpenMetricsTextFormatWriter.CONTENT_TYPE : PrometheusTextFormatWriter.CONTENT_TYPE;
  }

  /** Every meter, in the format of {@link #contentType}. Only when {@link #enabled}. */
  public String scrape(String contentType) {
    if (prometheus == null) {
      throw new IllegalStateException("metrics are off");
    }
    for (Runnable refresh : beforeScrape) {
      try {
        refresh.run();
      } catch (RuntimeException e) {
        // The database away: these series keep their last values, and the scrape still answers.
        LoggerFactory.getLogger(Metrics.class).warn("metrics: could not read the instances ({})", e.getMessage());
      }
    }
    return prometheus.scrape(contentType);
  }

  private void gauge(String name, String description, Supplier<Number> value) {
    Gauge.builder(name, value).description(description).strongReference(true).register(registry);
  }

  private static Duration[] millis(long... values) {
    Duration[] durations = new Duration[values.length];
    for (int i = 0; i < values.length; i++) {
      durations[i] = Duration.ofMillis(values[i]);
    }
    return durations;
  }

  @Override
  public void close() {
    if (gc != null) {
      gc.close();
    }
    registry.close();
  }
}
