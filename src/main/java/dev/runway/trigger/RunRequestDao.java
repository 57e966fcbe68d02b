package dev.runway.trigger;

import dev.runway.db.Jdbc;
import dev.runway.db.Tx;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindList;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/** The queue of run requests (see V16__run_requests.sql): written by CRM writes, claimed by the processor. */
@RegisterConstructorMapper(RunRequest.class)
public interface RunRequestDao {

  /**
   * Queues a request in the transaction of the change that made it (sent with the commit: nothing
   * reads it back before); its runs nest {@code depth} deep.
   */
  static void queue(Tx tx, String id, String workspaceId, List<RunRequest.Target> targets, String inputs,
      String actor, int depth, Instant now) {
    PreparedStatement ps = tx.batch("INSERT INTO run_request (id, workspace_id, targets, done, inputs, actor, "
        + "depth, created_at) VALUES (?, ?, ?, 0, ?, ?, ?, ?)");
    try {
      ps.setString(1, id);
      ps.setString(2, workspaceId);
      ps.setString(3, RunRequest.targetsText(targets));
      ps.setString(4, inputs);
      ps.setString(5, actor);
      ps.setInt(6, depth);
      Jdbc.setTime(ps, 7, now);
      ps.addBatch();
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  /** The first workspace after {@code after} (in id order) that has queued requests: round-robin over workspaces. */
  @SqlQuery("SELECT workspace_id FROM run_request WHERE workspace_id > :after ORDER BY workspace_id LIMIT 1")
  Optional<String> nextWorkspace(String after);

  /** The workspace's requests this processor holds a live lease on, oldest first. */
  @SqlQuery("SELECT * FROM run_request WHERE workspace_id = :ws AND lease_owner = :owner AND lease_until > :now "
      + "ORDER BY workspace_id, id LIMIT :limit")
  List<RunRequest> held(String ws, String owner, Instant now, int limit);

  /** The ids of the workspace's oldest requests that no live lease holds. */
  @SqlQuery("SELECT id FROM run_request WHERE workspace_id = :ws AND (lease_until IS NULL OR lease_until <= :now) "
      + "ORDER BY workspace_id, id LIMIT :limit")
  List<String> free(String ws, Instant now, int limit);

  /** Takes the lease of requests still free; how many it took. */
  @SqlUpdate("UPDATE run_request SET lease_owner = :owner, lease_until = :until WHERE id IN (<ids>) "
      + "AND (lease_until IS NULL OR lease_until <= :now)")
  int claim(@BindList("ids") List<String> ids, String owner, Instant now, Instant until);

  /** Records progress on a request this processor holds, if no one else moved it meanwhile. */
  @SqlUpdate("UPDATE run_request SET done = :done, lease_until = :until WHERE id = :id AND lease_owner = :owner "
      + "AND done = :was")
  int progress(String id, String owner, int was, int done, Instant until);

  /** Removes a request whose runs all exist, if no one else moved it meanwhile. */
  @SqlUpdate("DELETE FROM run_request WHERE id = :id AND lease_owner = :owner AND done = :was")
  int finish(String id, String owner, int was);


  @SqlQuery("SELECT COUNT(*) FROM run_request WHERE workspace_id = :ws")
  int countQueued(String ws);
}
