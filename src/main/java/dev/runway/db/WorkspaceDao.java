package dev.runway.db;

import java.time.Instant;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

public interface WorkspaceDao {
  @SqlQuery("SELECT COUNT(*) FROM workspace WHERE id = :id")
  int count(String id);

  @SqlQuery("SELECT COUNT(*) FROM workspace")
  int countAll();

  @SqlUpdate("INSERT INTO workspace (id, created_at) VALUES (:id, :createdAt)")
  void insert(String id, Instant createdAt);

  /** A workspace with its count of active (not revoked) keys, for the keys command's list. */
  record WithKeys(String id, java.time.Instant createdAt, int activeKeys) {}

  @SqlQuery("SELECT w.id, w.created_at, COUNT(k.id) AS active_keys FROM workspace w LEFT JOIN api_key k "
      + "ON k.workspace_id = w.id AND k.revoked_at IS NULL GROUP BY w.id, w.created_at ORDER BY w.id")
  @org.jdbi.v3.sqlobject.config.RegisterConstructorMapper(WithKeys.class)
  java.util.List<WithKeys> listWithKeys();

  /** Creates the workspace unless it exists (a racing creator is fine: the loser sees it exists). */
  default void ensure(String id, Instant now) {
    if (count(id) == 0) {
      insert(id, now);
    }
  }
}
