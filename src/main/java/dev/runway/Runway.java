package dev.runway;

import dev.runway.auth.ApiKeyService;
import dev.runway.auth.Scope;
import dev.runway.config.Settings;
import dev.runway.db.Database;
import dev.runway.engine.Engine;
import dev.runway.http.InFlightLimit;
import dev.runway.instance.Heartbeat;
import dev.runway.instance.InstanceDao;
import dev.runway.instance.InstanceStatistics;
import dev.runway.instance.Leases;
import dev.runway.metrics.Metrics;
import dev.runway.run.CallPlaces;
import dev.runway.trigger.Scheduler;
import dev.runway.trigger.TriggerProcessor;
import dev.runway.webhook.WebhookDispatcher;
import dev.runway.workflow.WorkflowFiles;
import io.javalin.Javalin;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running Runway server: the public API for embedding it in another program.
 *
 * <pre>{@code
 * try (Runway runway = Runway.start(Settings.defaults().with("http.port", "0").with("db.url", url))) {
 *   int port = runway.port();
 * }
 * }</pre>
 */
public final class Runway implements AutoCloseable {
  public static final String DEFAULT_WORKSPACE = "default";
  private static final Logger LOG = LoggerFactory.getLogger(Runway.class);
  /** How long the registry keeps an instance that stopped or went silent. */
  private static final Duration INSTANCES_KEPT = Duration.ofDays(7);

  private final Services services;
  private final Javalin app;
  private final InFlightLimit inFlight;
  private final Duration shutdownGrace;
  private final Engine engine;
  private final WebhookDispatcher webhooks;
  private final TriggerProcessor triggers;
  private final Scheduler schedules;
  private final ScheduledExecutorService housekeeping;
  private final Heartbeat heartbeat;
  private final String firstAdminKey;
  private final String firstSetupCode;

  private Runway(Services services, Javalin app, InFlightLimit inFlight, Duration shutdownGrace, Engine engine,
      TriggerProcessor triggers, Scheduler schedules, WebhookDispatcher webhooks,
      ScheduledExecutorService housekeeping, Heartbeat heartbeat, String firstAdminKey, String firstSetupCode) {
    this.heartbeat = heartbeat;
    this.services = services;
    this.app = app;
    this.inFlight = inFlight;
    this.shutdownGrace = shutdownGrace;
    this.engine = engine;
    this.triggers = triggers;
    this.schedules = schedules;
    this.webhooks = webhooks;
    this.housekeeping = housekeeping;
    this.firstAdminKey = firstAdminKey;
    this.firstSetupCode = firstSetupCode;
  }

  /** Starts Runway with its own connection pool, as configured by {@code db.*}. */
  public static Runway start(Settings settings) {
    ServerSettings s = ServerSettings.from(settings);
    return start(s, metrics -> Database.opening(s.database(), metrics));
  }

  /** Starts Runway on a DataSource the caller owns (and closes, after {@link #close()}). */
  public static Runway start(Settings settings, DataSource dataSource) {
    return start(ServerSettings.from(settings), metrics -> Database.using(dataSource, metrics));
  }

  /** Starts on the database {@code open} gives, with metrics as the settings ask (metrics.enabled). */
  private static Runway start(ServerSettings settings, Function<Metrics, Database> open) {
    Metrics metrics = Metrics.of(settings.metrics());
    Database database;
    try {
      database = open.apply(metrics);
    } catch (RuntimeException e) {
      metrics.close();
      throw e;
    }
    return start(settings, database, metrics);
  }

  /**
   * The HTTP server starts on a thread of its own while this one opens the database (most of a
   * second for an H2 file after a long load); once it listens, this one starts the engine, makes
   * the first admin key and loads the workflow files, so the two overlap. The server listens as soon as it can but answers 503 (and
   * /readyz "starting") until everything is done.
   */
  private static Runway start(ServerSettings settings, Database database, Metrics metrics) {
    AtomicReference<Engine> engine = new AtomicReference<>();
    AtomicReference<TriggerProcessor> triggers = new AtomicReference<>();
    Scheduler schedules = null;
    WebhookDispatcher webhooks = null;
    Heartbeat heartbeat = null;
    Runnable wake = () -> {
      Engine started = engine.get();
      if (started != null) {
        started.wake();
      }
      TriggerProcessor processor = triggers.get();
      if (processor != null) {
        processor.wake();
      }
    };
    CallPlaces places = run -> {
      Engine started = engine.get();
      return started == null ? null : started.places().take(run);
    };
    AtomicReference<Javalin> listening = new AtomicReference<>();
    Services services = Services.over(database, settings, metrics, wake, places, settings.publicUrl(() -> {
      Javalin app = listening.get();
      return app == null ? settings.httpPort() : app.port(); // listening before any run can reach a step
    }));
    InFlightLimit inFlight = InFlightLimit.untilReady(settings.maxInFlight(), settings.maxInFlightPerKey());
    AtomicBoolean failed = new AtomicBoolean();
    CompletableFuture<Javalin> http = CompletableFuture.supplyAsync(() -> {
      Javalin created = RunwayApp.create(services, settings, inFlight);
      return failed.get() ? created : created.start(); // a start that failed meanwhile does not listen
    }, task -> new Thread(task, "runway-start").start());
    try {
      database.prepare();
      heartbeat = Heartbeat.start(database.jdbi(), settings.heartbeat(), settings.engine().lease(),
          database.isSingleProcess(), wake);
      Leases leases = heartbeat.leases();
      InstanceStatistics.watch(metrics, database.jdbi(), leases, settings.heartbeat());
      // Listening before the engine and the first admin key: a port in use stops the start before
      // it runs a step or makes a key it would never show.
      Javalin app = joinStart(http);
      listening.set(app);
      if (settings.engine().enabled()) {
        Engine started = Engine.start(database.jdbi(), database.committer(), settings.engine(), settings.model(),
            services.secrets(), services.crmSteps(), leases, services.signalUrls());
        engine.set(started);
        metrics.watchEngine(started::backlog, started::callsInFlight, started::callBytesInFlight);
        // Runs that CRM changes queued are made by the instances that run the engine.
        triggers.set(TriggerProcessor.start(database.jdbi(), database.committer(), services.starts(),
            settings.engine().pollInterval(), leases));
        // And so are the runs of workflow schedules (each time one run, whichever instance fires it).
        schedules = Scheduler.start(database.jdbi(), database.committer(), services.starts(),
            settings.engine().pollInterval());
      }
      if (settings.webhooks().enabled()) {
        webhooks = WebhookDispatcher.start(services.webhooks(), database.isSingleProcess(), leases);
      }
      String adminKey = null;
      String setupCode = null;
      if (settings.bootstrapAdminKey() && services.keys().databaseIsEmpty()) {
        adminKey = services.keys().create(DEFAULT_WORKSPACE, "admin", Scope.all(), null, null).key();
        // With it, the first account to sign up in the console takes the workspace `default`.
        setupCode = services.accounts().newSetupCode(DEFAULT_WORKSPACE);
      }
      List<String> loaded = new WorkflowFiles(services.workflows()).load(settings.workflowsDir(), DEFAULT_WORKSPACE);
      if (!loaded.isEmpty()) {
        LOG.info("loaded workflows {} from {} into workspace {}", loaded, settings.workflowsDir(), DEFAULT_WORKSPACE);
      }
      List<String> agents = services.agents().files(DEFAULT_WORKSPACE).load(settings.agentsDir());
      if (!agents.isEmpty()) {
        LOG.info("loaded agents {} from {} into workspace {}", agents, settings.agentsDir(), DEFAULT_WORKSPACE);
      }
      ScheduledExecutorService housekeeping = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "runway-housekeeping");
        t.setDaemon(true);
        return t;
      });
      housekeeping.scheduleWithFixedDelay(() -> sweep(services), 1, 10, TimeUnit.MINUTES);
      inFlight.ready();
      return new Runway(services, app, inFlight, settings.shutdownGrace(), engine.get(), triggers.get(), schedules,
          webhooks, housekeeping, heartbeat, adminKey, setupCode);
    } catch (RuntimeException e) {
      failed.set(true);
      try {
        http.join().stop();
      } catch (CompletionException httpFailed) {
        // it did not start: nothing to stop
      }
      if (triggers.get() != null) {
        triggers.get().close();
      }
      if (schedules != null) {
        schedules.close();
      }
      if (engine.get() != null) {
        engine.get().close();
      }
      if (webhooks != null) {
        webhooks.close();
      }
      if (heartbeat != null) {
        heartbeat.close();
      }
      database.close();
      metrics.close();
      throw e;
    }
  }

  /** The started HTTP server, or what its start threw. */
  private static Javalin joinStart(CompletableFuture<Javalin> http) {
    try {
      return http.join();
    } catch (CompletionException e) {
      throw e.getCause() instanceof RuntimeException failure ? failure : e;
    }
  }

  private static void sweep(Services services) {
    try {
      int removed = services.hooks().sweep();
      if (removed > 0) {
        LOG.info("removed {} delivery ids and ended hooks of inbound webhooks", removed);
      }
    } catch (RuntimeException e) {
      LOG.warn("inbound webhook sweep failed: {}", e.getMessage());
    }
    try {
      int removed = services.idempotency().sweep();
      if (removed > 0) {
        LOG.info("removed {} expired idempotency keys", removed);
      }
    } catch (RuntimeException e) {
      LOG.warn("idempotency key sweep failed: {}", e.getMessage());
    }
    try {
      int pruned = services.crm().prune(Instant.now().minus(services.crm().changesRetention()));
      if (pruned > 0) {
        LOG.info("pruned {} CRM changes past crm.changes_retention_hours", pruned);
      }
    } catch (RuntimeException e) {
      LOG.warn("CRM change feed pruning failed: {}", e.getMessage());
    }
    try {
      int pruned = services.database().jdbi().withExtension(InstanceDao.class,
          dao -> dao.prune(Instant.now().minus(INSTANCES_KEPT)));
      if (pruned > 0) {
        LOG.info("forgot {} instances silent or stopped for over {} days", pruned, INSTANCES_KEPT.toDays());
      }
    } catch (RuntimeException e) {
      LOG.warn("instance registry pruning failed: {}", e.getMessage());
    }
    try {
      services.sessions().prune();
    } catch (RuntimeException e) {
      LOG.warn("console session pruning failed: {}", e.getMessage());
    }
    try {
      int pruned = services.webhooks().prune();
      if (pruned > 0) {
        LOG.info("pruned {} webhook deliveries past webhooks.retention_hours", pruned);
      }
    } catch (RuntimeException e) {
      LOG.warn("webhook delivery log pruning failed: {}", e.getMessage());
    }
  }

  /** The port the server listens on (useful with http.port=0). */
  public int port() {
    return app.port();
  }

  /** API key management, e.g. to create keys for the embedding program. */
  public ApiKeyService keys() {
    return services.keys();
  }

  /** The admin key made on the first start of an empty database, if this start made one. */
  public Optional<String> firstAdminKey() {
    return Optional.ofNullable(firstAdminKey);
  }

  /** The console setup code for workspace `default`, made with the first admin key. */
  public Optional<String> firstSetupCode() {
    return Optional.ofNullable(firstSetupCode);
  }

  /**
   * Stops cleanly: the registry says stopping; new requests get 503 while those in flight finish
   * (up to http.shutdown_grace_ms), the HTTP server stops, the engine and the webhook dispatcher stop
   * claiming and let their calls in flight finish (up to shutdown.grace_seconds), everything still
   * held is handed back and the instance marked stopped in one commit, waiting group commits are
   * committed, and the pool Runway opened is closed. Nothing acknowledged is lost.
   */
  @Override
  public void close() {
    heartbeat.stopping();
    housekeeping.shutdownNow();
    if (!inFlight.drain(shutdownGrace)) {
      LOG.warn("stopping with requests still in flight after {} ms", shutdownGrace.toMillis());
    }
    app.stop();
    if (triggers != null) {
      triggers.close();
    }
    if (schedules != null) {
      schedules.close();
    }
    // The engine's calls and the webhook attempts in flight finish side by side, within one grace.
    CompletableFuture<Void> webhooksStopped = webhooks == null ? CompletableFuture.completedFuture(null)
        : CompletableFuture.runAsync(webhooks::close, task -> new Thread(task, "runway-stop-webhooks").start());
    if (engine != null) {
      engine.close();
    }
    webhooksStopped.join();
    // What is still held goes back in one commit, for the other instances to take up at once.
    heartbeat.close();
    services.database().close();
    services.metrics().close();
  }
}
