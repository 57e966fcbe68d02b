package dev.runway.db;

import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientConnectionException;
import java.util.Optional;
import java.util.function.Supplier;
import org.jdbi.v3.core.JdbiException;

/** Reads what kind of failure a database exception is, the same way on H2 and PostgreSQL. */
public final class SqlErrors {
  private SqlErrors() {}

  public static boolean isUniqueViolation(Throwable e) {
    return "23505".equals(sqlState(e));
  }

  /** A wait for another transaction's lock gave up (H2 HYT00, PostgreSQL 55P03) or hit a deadlock (40P01). */
  public static boolean isLockTimeout(Throwable e) {
    String state = sqlState(e);
    return "HYT00".equals(state) || "55P03".equals(state) || isDeadlock(e);
  }

  /** The database broke the transaction off to resolve a deadlock or serialization conflict: try again. */
  public static boolean isDeadlock(Throwable e) {
    String state = sqlState(e);
    return "40P01".equals(state) || "40001".equals(state);
  }

  /** No connection could be had, or it broke: pool time-out, refused or dropped connection, database shut down. */
  public static boolean isUnavailable(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLTransientConnectionException || t instanceof SQLNonTransientConnectionException
          || t instanceof SQLRecoverableException || t instanceof DatabaseUnavailableException) {
        return true;
      }
      if (t instanceof SQLException sql && sql.getSQLState() != null
          && (sql.getSQLState().startsWith("08") || sql.getSQLState().equals("57P01"))) {
        return true;
      }
    }
    return false;
  }

  /**
   * The driver's exception when the database refused the login (SQLState class 28: wrong user or
   * password), or empty. The innermost: the pool's wrapper has the state but not the driver's words.
   */
  public static Optional<SQLException> loginRefusal(Throwable e) {
    SQLException refusal = null;
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException sql && sql.getSQLState() != null && sql.getSQLState().startsWith("28")) {
        refusal = sql;
      }
    }
    return Optional.ofNullable(refusal);
  }

  public static boolean isLoginRefused(Throwable e) {
    return loginRefusal(e).isPresent();
  }

  /** An H2 file another process has open, without AUTO_SERVER to share it (H2's error 90020). */
  public static boolean isH2FileInUse(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException sql && "90020".equals(sql.getSQLState())) {
        return true;
      }
    }
    return false;
  }

  /** Runs the work, once more if it lost an insert race (a unique violation); the retry sees the winner's row. */
  public static <T> T retryOnUniqueViolation(Supplier<T> work) {
    try {
      return work.get();
    } catch (JdbiException e) {
      if (!isUniqueViolation(e)) {
        throw e;
      }
      return work.get();
    }
  }

  private static String sqlState(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException sql && sql.getSQLState() != null) {
        return sql.getSQLState();
      }
    }
    return null;
  }
}
