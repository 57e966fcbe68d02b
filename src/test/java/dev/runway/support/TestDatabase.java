package dev.runway.support;

import dev.runway.ServerSettings;
import dev.runway.Services;
import dev.runway.config.Settings;
import dev.runway.db.Database;
import dev.runway.engine.Engine;
import dev.runway.engine.EngineSettings;
import dev.runway.engine.ModelSettings;
import dev.runway.instance.Heartbeat;
import dev.runway.metrics.Metrics;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;

/**
 * The two databases every API test runs on, each opened once per test JVM: an H2 file database in
 * a temp folder, and a fresh schema on the PostgreSQL server named by RUNWAY_TEST_PG_URL.
 */
public enum TestDatabase {
  H2, POSTGRESQL;

  public static final String PG_URL =
      env("RUNWAY_TEST_PG_URL", "jdbc:postgresql://127.0.0.1:5432/test");
  public static final String PG_USER = env("RUNWAY_TEST_PG_USER", "postgres");
  public static final String PG_PASSWORD = env("RUNWAY_TEST_PG_PASSWORD", "");
  /** Set in CI: an unreachable PostgreSQL fails the PostgreSQL tests instead of skipping them. */
  public static final boolean PG_REQUIRED = Boolean.parseBoolean(env("RUNWAY_TEST_PG_REQUIRED", "false"));

  private volatile Opened opened;
  private volatile Engine engine;

  /** The open database with its settings and services. */
  public record Opened(Settings settings, ServerSettings serverSettings, Services services) {}

  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }

  public synchronized Opened open() {
    if (opened == null) {
      Settings settings = settingsForFreshDatabase();
      ServerSettings server = ServerSettings.from(settings);
      // Metrics kept, as a server keeps them: every API test's requests and writes are counted.
      Metrics metrics = Metrics.prometheus();
      Database database = Database.open(server.database(), metrics);
      opened = new Opened(settings, server, Services.over(database, server, metrics, this::wakeEngine,
          run -> {
            Engine current = engine;
            return current == null ? null : current.places().take(run);
          }));
      TempFiles.first(database::close); // before its files and schema go
    }
    return opened;
  }

  /**
   * Takes every run of this database out of the engine's reach (no due time), at the start of a
   * test: the runs there are earlier tests', and this test's engine must call only its own.
   */
  public void parkEarlierRuns() {
    open().services().database().jdbi().useHandle(h -> h.execute("UPDATE run SET due_at = NULL WHERE due_at IS NOT NULL"));
  }

  /**
   * Starts an engine on this database for one test (close it at the end). API tests run without
   * one, so runs stay where their start left them (a run that calls a tool stays running); engine
   * tests call this. Tool servers of the tests listen on loopback, so private networks are allowed;
   * retries are quick; its close hands back calls still in flight at once (no shutdown grace: a test
   * that leaves a call hanging would otherwise wait 10 s for it).
   */
  public Engine startEngine() {
    return startEngine(s -> s);
  }

  /** Like {@link #startEngine()}, with some engine settings changed. */
  public Engine startEngine(java.util.function.UnaryOperator<Settings> change) {
    Opened db = open();
    Settings settings = change.apply(db.settings()
        .with("engine.http.allow_private_networks", "true")
        .with("engine.retry_base_ms", "20")
        .with("engine.poll_interval_ms", "50")
        .with("shutdown.grace_seconds", "0"));
    EngineSettings engineSettings = EngineSettings.from(settings);
    Heartbeat heartbeat = heartbeat(db.services().database().jdbi(), engineSettings.lease());
    Engine started = Engine.start(db.services().database().jdbi(), db.services().database().committer(),
        engineSettings, ModelSettings.from(settings), db.services().secrets(), db.services().crmSteps(),
        heartbeat.leases(), db.services().signalUrls()).closing(heartbeat);
    engine = started;
    return started;
  }

  /**
   * A heartbeat of its own for an engine, a webhook dispatcher or a trigger processor a test starts
   * (several may run at once on one database, so none drops the others' leases at its start); its
   * close hands back what it holds.
   */
  public Heartbeat heartbeat(org.jdbi.v3.core.Jdbi jdbi, java.time.Duration lease) {
    return Heartbeat.start(jdbi, java.time.Duration.ofSeconds(3), lease, this == POSTGRESQL, false, () -> { });
  }

  private void wakeEngine() {
    Engine current = engine;
    if (current != null) {
      current.wake();
    }
  }

  /** Settings naming a new, empty database of this kind (H2 file or PostgreSQL schema). */
  public Settings settingsForFreshDatabase() {
    Path keyDir = TempFiles.dir("runway-secrets-");
    Settings base = Settings.defaults()
        .with("secrets.key_file", keyDir.resolve("secrets.key").toString())
        .with("http.port", "0")
        .with("http.request_log", "false")
        .with("workflows.dir", "")
        .with("agents.dir", "")
        .with("bootstrap.admin_key", "false")
        .with("engine.enabled", "false");
    if (this == H2) {
      Path dir = TempFiles.dir("runway-h2-");
      return base.with("db.url", "jdbc:h2:file:" + dir.resolve("runway")).with("db.user", "sa").with("db.password", "");
    }
    String schema = "runway_test_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    try (Connection c = DriverManager.getConnection(PG_URL, PG_USER, PG_PASSWORD);
         Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + schema);
      TempFiles.schema(schema);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create a schema on PostgreSQL at " + PG_URL + ": " + e.getMessage(), e);
    }
    String url = PG_URL + (PG_URL.contains("?") ? "&" : "?") + "currentSchema=" + schema;
    return base.with("db.url", url).with("db.user", PG_USER).with("db.password", PG_PASSWORD);
  }

  /** Whether PostgreSQL answers at RUNWAY_TEST_PG_URL. */
  public static boolean postgresReachable() {
    return postgresProblem() == null;
  }

  /** Why the PostgreSQL tests cannot run at RUNWAY_TEST_PG_URL, or null when they can. */
  public static String postgresProblem() {
    try (Connection c = DriverManager.getConnection(PG_URL + (PG_URL.contains("?") ? "&" : "?") + "connectTimeout=3",
        PG_USER, PG_PASSWORD)) {
      return c.isValid(3) ? null : "it does not answer";
    } catch (SQLException e) {
      if ("3D000".equals(e.getSQLState())) {
        return "the server answers but has no such database (create it: createdb -h 127.0.0.1 -U " + PG_USER
            + " test, or point RUNWAY_TEST_PG_URL at another)";
      }
      return "it is not reachable (" + e.getMessage() + ")";
    }
  }

  private static String env(String name, String fallback) {
    String value = System.getenv(name);
    return value == null || value.isBlank() ? fallback : value;
  }
}
