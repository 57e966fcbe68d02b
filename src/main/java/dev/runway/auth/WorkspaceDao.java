package dev.runway.auth;

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

  /** Creates the workspace unless it exists (a racing creator is fine: the loser sees it exists). */
  default void ensure(String id, Instant now) {
    if (count(id) == 0) {
      insert(id, now);
    }
  }
}
