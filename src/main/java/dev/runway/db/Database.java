package dev.runway.db;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.runway.config.ServerSettings;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.sqlobject.SqlObjectPlugin;

/** The connection pool, the schema migrations and the Jdbi handle factory over one database. */
public final class Database implements AutoCloseable {
  private final DataSource dataSource;
  private final HikariDataSource ownedPool;
  private final Jdbi jdbi;
  private final boolean h2;

  private Database(DataSource dataSource, HikariDataSource ownedPool, boolean h2) {
    this.dataSource = dataSource;
    this.ownedPool = ownedPool;
    this.jdbi = Jdbi.create(dataSource).installPlugin(new SqlObjectPlugin());
    this.h2 = h2;
  }

  /** Opens a pool from the settings, makes H2 durable and applies the migrations. */
  public static Database open(ServerSettings settings) {
    HikariConfig config = new HikariConfig();
    config.setPoolName("runway");
    config.setJdbcUrl(settings.dbUrl());
    config.setUsername(settings.dbUser());
    config.setPassword(settings.dbPassword());
    config.setMaximumPoolSize(settings.dbPoolSize());
    config.setConnectionTimeout(settings.dbConnectionTimeoutMs());
    // Start even when the database is briefly away; requests answer 503 until it is back.
    config.setInitializationFailTimeout(-1);
    HikariDataSource pool = new HikariDataSource(config);
    try {
      return prepare(pool, pool);
    } catch (RuntimeException e) {
      pool.close();
      throw e;
    }
  }

  /** Uses a DataSource the embedding program owns; it is not closed with the Database. */
  public static Database using(DataSource dataSource) {
    return prepare(dataSource, null);
  }

  private static Database prepare(DataSource dataSource, HikariDataSource ownedPool) {
    boolean h2 = makeDurable(dataSource);
    Flyway.configure()
        .dataSource(dataSource)
        .locations("classpath:db/migration")
        .load()
        .migrate();
    return new Database(dataSource, ownedPool, h2);
  }

  /**
   * H2 writes committed transactions to its file only every 500 ms by default, so a kill -9
   * loses what was acknowledged in between. WRITE_DELAY 0 writes at each commit. The setting
   * is kept in the database file, so it holds whatever URL opens it later. Returns whether the
   * database is H2.
   */
  private static boolean makeDurable(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      boolean h2 = c.getMetaData().getURL().startsWith("jdbc:h2:");
      if (h2) {
        try (Statement s = c.createStatement()) {
          s.execute("SET WRITE_DELAY 0");
        }
      }
      return h2;
    } catch (SQLException e) {
      throw new DatabaseUnavailableException("cannot open the database: " + e.getMessage(), e);
    }
  }

  /** H2 serves one process; PostgreSQL may be shared by several Runway instances. */
  public boolean isSingleProcess() {
    return h2;
  }

  public Jdbi jdbi() {
    return jdbi;
  }

  /** True when the database answers a trivial query. */
  public boolean isReachable() {
    try (Connection c = dataSource.getConnection()) {
      return c.isValid(2);
    } catch (SQLException e) {
      return false;
    }
  }

  @Override
  public void close() {
    if (ownedPool != null) {
      ownedPool.close();
    }
  }
}
