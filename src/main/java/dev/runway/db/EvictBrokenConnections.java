package dev.runway.db;

import com.zaxxer.hikari.SQLExceptionOverride;
import java.sql.SQLException;

/**
 * Tells the pool to drop a connection whose error says it is broken. Hikari knows PostgreSQL's
 * signs of that (SQL state 08xxx) but not H2's (e.g. 90121 "database is already closed" from a
 * dropped TCP connection); without this, broken H2 connections stay pooled after an outage.
 */
public final class EvictBrokenConnections implements SQLExceptionOverride {
  @java.lang.Override
  public SQLExceptionOverride.Override adjudicate(SQLException e) {
    return SqlErrors.isUnavailable(e) ? SQLExceptionOverride.Override.MUST_EVICT
        : SQLExceptionOverride.Override.CONTINUE_EVICT;
  }
}
