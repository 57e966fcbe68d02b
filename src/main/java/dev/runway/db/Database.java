package dev.runway.db;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.metrics.micrometer.MicrometerMetricsTrackerFactory;
import dev.runway.metrics.Metrics;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.sqlobject.SqlObjectPlugin;
import org.slf4j.LoggerFactory;

/** The connection pool, the schema migrations and the Jdbi handle factory over one database. */
public final class Database implements AutoCloseable {
  private static final Duration STARTUP_PATIENCE = Duration.ofSeconds(30);
  /** How long requests fail at once after a failed connection, before one tries again. */
  private static final long FAIL_FAST_MILLIS = 1000;
  /** The newest migration under db/ (DatabaseTest keeps the two in step). */
  static final String SCHEMA_VERSION = "31";
  /** H2's page cache in KB (see {@link #configureH2}). */
  private static final int H2_CACHE_KB = 1024;
  /** How long H2 keeps a chunk it no longer needs, in ms (see {@link #configureH2}). */
  static final int H2_RETENTION_MILLIS = 5000;

  private final FailFastDataSource dataSource;
  private final HikariDataSource ownedPool;
  private final Jdbi jdbi;
  private final boolean h2;
  /** The embedded H2 file behind the pool Runway opened, if that is the database; null otherwise. */
  private final H2FileDatabase h2File;
  /** Refuse an H2 file another process holds (a server must have it alone; a keys command need not). */
  private final boolean alone;
  private final GroupCommitter committer;
  private boolean prepared; // guarded by this
  private volatile H2Housekeeping housekeeping;

  private Database(DataSource dataSource, HikariDataSource ownedPool, boolean h2, H2FileDatabase h2File,
      boolean alone, Metrics metrics) {
    this.dataSource = new FailFastDataSource(dataSource, FAIL_FAST_MILLIS);
    this.ownedPool = ownedPool;
    this.jdbi = Jdbi.create(this.dataSource).installPlugin(new SqlObjectPlugin());
    this.h2 = h2;
    this.h2File = h2File;
    this.alone = alone;
    // Several Runway instances may write to one PostgreSQL, never to one H2 file. Only H2 writes in
    // full every page a commit changes, which makes gathering the deliveries' writes pay.
    this.committer = new GroupCommitter(jdbi, !h2, h2, 10_000, metrics);
  }

  /**
   * Opens a pool from the settings, makes H2 durable and applies the migrations. An H2 file that a
   * running server holds is used through that server (AUTO_SERVER): this is for the keys command.
   */
  public static Database open(DatabaseSettings settings) {
    return open(settings, Metrics.off());
  }

  /** Like {@link #open(DatabaseSettings)}, counting the pool and the group commit in {@code metrics}. */
  public static Database open(DatabaseSettings settings, Metrics metrics) {
    return fromSettings(settings, false, metrics).prepared();
  }

  /**
   * The pool from the settings for a server, before any connection: {@link #prepare} connects and
   * migrates. Runway's start sets up its HTTP server meanwhile; an H2 file with many chunks takes
   * most of a second to open after a long load. An H2 file another process holds is refused in
   * {@link #prepare} ({@link DatabaseInUseException}). The pool and the group commit are counted in
   * {@code metrics}.
   */
  public static Database opening(DatabaseSettings settings, Metrics metrics) {
    return fromSettings(settings, true, metrics);
  }

  /**
   * The pool, not connected yet. An H2 file with an empty db.password gets its generated password
   * here (see {@link H2FileDatabase#password}); that reads a file, and only a database made before
   * Runway generated passwords is connected to, once, to set one.
   */
  private static Database fromSettings(DatabaseSettings settings, boolean alone, Metrics metrics) {
    if (settings.isH2()) {
      H2FileDatabase.keepServersOnLoopback(); // before H2 starts: it reads the setting once
    }
    H2FileDatabase h2File = H2FileDatabase.of(settings.url()).orElse(null);
    String password = h2File != null && settings.password().isEmpty()
        ? h2File.password(settings.url(), settings.user())
        : settings.password();
    HikariConfig config = new HikariConfig();
    config.setPoolName("runway");
    config.setJdbcUrl(settings.url());
    config.setUsername(settings.user());
    config.setPassword(password);
    config.setMaximumPoolSize(settings.poolSize());
    config.setConnectionTimeout(settings.connectionTimeoutMs());
    config.setExceptionOverrideClassName(EvictBrokenConnections.class.getName());
    if (settings.url().startsWith("jdbc:postgresql:")) {
      // A group commit's new rows go as one multi-row INSERT per table: one round trip, not one per row.
      config.addDataSourceProperty("reWriteBatchedInserts", "true");
    }
    if (settings.isH2() && !settings.url().toUpperCase(Locale.ROOT).contains("TRACE_LEVEL_FILE")) {
      // H2 writes every SQL error to <name>.trace.db, Flyway's look for its history table on a new
      // database among them: a file that looks like a failure after a clean first start. Runway
      // logs the errors it meets itself; a db.url naming TRACE_LEVEL_FILE keeps its own.
      config.addDataSourceProperty("TRACE_LEVEL_FILE", "0");
    }
    // Start even when the database is briefly away; requests answer 503 until it is back.
    config.setInitializationFailTimeout(-1);
    if (metrics.enabled()) {
      // HikariCP's own meters: connections active, idle, pending, and the time to get one.
      config.setMetricsTrackerFactory(new MicrometerMetricsTrackerFactory(metrics.registry()));
    }
    HikariDataSource pool = new HikariDataSource(config);
    return new Database(pool, pool, settings.isH2(), h2File, alone, metrics);
  }

  /** Uses a DataSource the embedding program owns; it is not closed with the Database. */
  public static Database using(DataSource dataSource) {
    return using(dataSource, Metrics.off());
  }

  /**
   * Like {@link #using(DataSource)}, counting the group commit in {@code metrics}. The pool is the
   * embedding program's: Runway adds no meters to it.
   */
  public static Database using(DataSource dataSource, Metrics metrics) {
    boolean h2;
    try (Connection c = firstConnection(dataSource)) {
      h2 = c.getMetaData().getURL().startsWith("jdbc:h2:");
    } catch (SQLException e) {
      throw new DatabaseUnavailableException("cannot open the database: " + e.getMessage(), e);
    }
    return new Database(dataSource, null, h2, null, false, metrics).prepared();
  }

  /** This database, prepared; closed if that fails (the commit thread must not outlive it). */
  private Database prepared() {
    try {
      prepare();
      return this;
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /**
   * Connects (waiting for the database up to a while, see {@link #firstConnection}), makes H2
   * durable and applies the migrations; does nothing once done. For a server ({@link #opening}),
   * an H2 file another process holds is refused before anything is changed.
   */
  public synchronized void prepare() {
    if (prepared) {
      return;
    }
    DataSource pool = dataSource.pool();
    try (Connection c = firstConnection(pool)) {
      if (alone && h2File != null && H2FileDatabase.isReachedThroughAutoServer(c)) {
        throw new DatabaseInUseException(h2File.shownName());
      }
      if (h2) {
        configureH2(c);
      }
    } catch (SQLException e) {
      if (h2File != null && SqlErrors.isH2FileInUse(e)) {
        throw new DatabaseInUseException(h2File.shownName()); // held by a process without AUTO_SERVER
      }
      throw new DatabaseUnavailableException("cannot open the database: "
          + SqlErrors.loginRefusal(e).map(refused -> "the login was refused: " + refused.getMessage())
              .orElse(e.getMessage()), e);
    }
    if (!schemaIsCurrent(pool)) {
      Flyway.configure()
          .dataSource(pool)
          // Shared migrations, then the few settings that differ between H2 and PostgreSQL.
          .locations("classpath:db/migration", h2 ? "classpath:db/vendor/h2" : "classpath:db/vendor/postgresql")
          .load()
          .migrate();
    }
    if (h2File != null) {
      h2File.restrictPermissions();
    }
    if (h2) {
      housekeeping = new H2Housekeeping(pool);
    }
    prepared = true;
  }

  /**
   * True when Flyway's history says the newest migration this jar carries ({@link #SCHEMA_VERSION})
   * was the last one applied, and applied successfully. Then there is nothing to migrate, and the
   * start skips Flyway's set-up and its scan of the migrations, a good part of the start. A
   * database behind the jar, or ahead of it, goes through Flyway, which migrates or refuses.
   */
  static boolean schemaIsCurrent(DataSource dataSource) {
    try (Connection c = dataSource.getConnection();
         Statement s = c.createStatement();
         ResultSet r = s.executeQuery("SELECT \"version\", \"success\" FROM \"flyway_schema_history\" "
             + "ORDER BY \"installed_rank\" DESC")) {
      return r.next() && SCHEMA_VERSION.equals(r.getString(1)) && r.getBoolean(2);
    } catch (SQLException e) {
      return false; // no history yet: a new database
    }
  }

  /**
   * H2 writes committed transactions to its file only every 500 ms by default, so a kill -9
   * loses what was acknowledged in between. WRITE_DELAY 0 writes at each commit. The setting
   * is kept in the database file, so it holds whatever URL opens it later.
   *
   * <p>H2's page cache is made small (1 MB; by default 64 MB per GB of heap). It lives in the old
   * generation and is rewired at every page access, so each young collection has to scan it: the
   * smaller it is, the shorter the young pauses. The pages a request needs (the right edges of the
   * indexes, recent runs) stay in it, and the operating system caches the file.
   *
   * <p>H2 keeps every chunk (one per commit) for its retention time, 45 s by default, before it
   * may rewrite it or reuse its space: should the disk lose the last seconds of writes, the file
   * falls back to an older version, whose chunks must still be there. Runway hands H2's writes to
   * the disk every 250 ms ({@link H2Housekeeping}), so 5 s keeps that margin twenty times over,
   * and under load far fewer chunks are kept, each with its metadata in the heap and read again at
   * the next start (docs/performance.md, "H2 under sustained load").
   */
  private static void configureH2(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("SET WRITE_DELAY 0");
      s.execute("SET CACHE_SIZE " + H2_CACHE_KB);
      s.execute("SET RETENTION_TIME " + H2_RETENTION_MILLIS);
    }
  }

  /**
   * The first connection, waited for up to {@link #STARTUP_PATIENCE}: after a crash H2 needs a few
   * seconds to see that the old process's lock file is stale, and a database may start slower
   * than Runway. Requests later wait only db.connection_timeout_ms. A refused login, or an H2 file
   * another process holds, will not change by waiting: those fail at once.
   */
  static Connection firstConnection(DataSource dataSource) throws SQLException {
    long deadline = System.nanoTime() + STARTUP_PATIENCE.toNanos();
    while (true) {
      try {
        return dataSource.getConnection();
      } catch (SQLException e) {
        if (!SqlErrors.isUnavailable(e) || SqlErrors.isLoginRefused(e) || SqlErrors.isH2FileInUse(e)
            || System.nanoTime() > deadline) {
          throw e;
        }
        LoggerFactory.getLogger(Database.class).info("waiting for the database: {}", e.getMessage());
      }
    }
  }

  /** H2 serves one process; PostgreSQL may be shared by several Runway instances. */
  public boolean isSingleProcess() {
    return h2;
  }

  public Jdbi jdbi() {
    return jdbi;
  }

  /** Writes that should be committed together with other callers' writes (group commit). */
  public GroupCommitter committer() {
    return committer;
  }

  /** True when the database answers now: always really tries, even while requests fail fast. */
  public boolean isReachable() {
    try (Connection c = dataSource.pool().getConnection()) {
      boolean valid = c.isValid(2);
      if (valid) {
        dataSource.markUp();
      }
      return valid;
    } catch (SQLException e) {
      return false;
    }
  }

  /** Commits what is waiting for group commit, then closes the pool if Runway opened it. */
  @Override
  public void close() {
    committer.close();
    H2Housekeeping started = housekeeping;
    if (started != null) {
      started.close();
    }
    if (ownedPool != null) {
      ownedPool.close();
    }
  }
}
