package dev.runway.db;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Answers at once while the database is known to be down: after a failed connection, requests
 * fail fast for {@code quietMillis} instead of each waiting out the pool's time-out; then the next
 * one tries again, so the server recovers by itself when the database is back.
 */
final class FailFastDataSource implements DataSource {
  private final DataSource pool;
  private final long quietNanos;
  private volatile long downUntil;

  FailFastDataSource(DataSource pool, long quietMillis) {
    this.pool = pool;
    this.quietNanos = quietMillis * 1_000_000;
  }

  @Override
  public Connection getConnection() throws SQLException {
    if (System.nanoTime() - downUntil < 0) {
      throw new SQLTransientConnectionException("the database was unreachable moments ago", "08001");
    }
    try {
      return pool.getConnection();
    } catch (SQLException e) {
      if (SqlErrors.isUnavailable(e)) {
        downUntil = System.nanoTime() + quietNanos;
      }
      throw e;
    }
  }

  /** The pool itself, for probes that must really try (readiness). */
  DataSource pool() {
    return pool;
  }

  /** A probe found the database answering again. */
  void markUp() {
    downUntil = System.nanoTime();
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return pool.getConnection(username, password);
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return pool.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    pool.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    pool.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return pool.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return pool.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return iface.isInstance(this) ? iface.cast(this) : pool.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || pool.isWrapperFor(iface);
  }
}
