package dev.runway.db;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;

/**
 * PostgreSQL locks on workspaces, held until the transaction ends: the writes of one workspace
 * commit one after another, also from several Runway instances. Advisory locks write nothing (a
 * row lock on the workspace wrote its row and a WAL record at every commit); the key is a 64-bit
 * hash of the workspace id, and a collision only makes two workspaces wait for each other. Plain
 * JDBC: the group commit takes one at every commit, and a Jdbi DAO's set-up cost more than the
 * statement.
 */
public final class WorkspaceLocks {
  private WorkspaceLocks() {}

  /** Takes the lock {@code key} for the rest of the connection's transaction, waiting for it if another holds it. */
  public static void lock(Connection c, long key) {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_xact_lock(?)")) {
      ps.setLong(1, key);
      try (ResultSet r = ps.executeQuery()) {
        r.next();
      }
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  /** The lock key of a workspace. Writers take their keys in ascending order, so they never deadlock. */
  public static long key(String workspaceId) {
    return UUID.nameUUIDFromBytes(("runway workspace " + workspaceId).getBytes(StandardCharsets.UTF_8))
        .getMostSignificantBits();
  }
}
