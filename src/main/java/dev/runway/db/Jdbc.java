package dev.runway.db;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

/** Helpers for the few hot statements written in plain JDBC instead of Jdbi (see {@link Tx#batch}). */
public final class Jdbc {
  private Jdbc() {}

  /** Binds a TIMESTAMP WITH TIME ZONE, or NULL; the same on H2 and PostgreSQL. */
  public static void setTime(PreparedStatement ps, int index, Instant time) throws SQLException {
    ps.setObject(index, time == null ? null : time.atOffset(ZoneOffset.UTC), Types.TIMESTAMP_WITH_TIMEZONE);
  }

  /** Reads a TIMESTAMP WITH TIME ZONE column; null stays null. */
  public static Instant getTime(ResultSet rs, String column) throws SQLException {
    OffsetDateTime time = rs.getObject(column, OffsetDateTime.class);
    return time == null ? null : time.toInstant();
  }

  /** A JDBC failure of a plain statement; {@link SqlErrors} reads its SQL state as for Jdbi's exceptions. */
  public static final class UncheckedSqlException extends RuntimeException {
    public UncheckedSqlException(SQLException cause) {
      super(cause.getMessage(), cause);
    }
  }
}
