package dev.runway.db;

import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.jdbi.v3.sqlobject.statement.SqlQuery;

/**
 * PostgreSQL locks on workspaces, held until the transaction ends: the writes of one workspace
 * commit one after another, also from several Runway instances. Advisory locks write nothing (a
 * row lock on the workspace wrote its row and a WAL record at every commit); the key is a 64-bit
 * hash of the workspace id, and a collision only makes two workspaces wait for each other.
 */
public interface WorkspaceLocks {
  @SqlQuery("SELECT 1 FROM (SELECT pg_advisory_xact_lock(:key)) AS locked")
  int lock(long key);

  /** The lock key of a workspace. Writers take their keys in ascending order, so they never deadlock. */
  static long key(String workspaceId) {
    return UUID.nameUUIDFromBytes(("runway workspace " + workspaceId).getBytes(StandardCharsets.UTF_8))
        .getMostSignificantBits();
  }
}
