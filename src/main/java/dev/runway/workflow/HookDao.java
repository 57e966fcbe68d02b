package dev.runway.workflow;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/** The hooks of workflows' webhook triggers (see {@link Hook}), found by the SHA-256 of their id. */
@RegisterConstructorMapper(HookDao.Row.class)
public interface HookDao {
  /**
   * The hook of trigger {@code triggerIndex} of a workflow: {@code idHash} the SHA-256 (hex) of its
   * id, {@code idSealed} the id sealed with the secrets key; a replaced hook works until {@code expiresAt}
   * (null: no end).
   */
  record Row(String idHash, String idSealed, String workspaceId, String workflowId, int triggerIndex,
      Instant createdAt, Instant expiresAt) {}

  @SqlQuery("SELECT * FROM workflow_hook WHERE id_hash = :idHash")
  Optional<Row> find(String idHash);

  /** The workflow's hooks that have no end: one per webhook trigger. */
  @SqlQuery("SELECT * FROM workflow_hook WHERE workspace_id = :workspaceId AND workflow_id = :workflowId "
      + "AND expires_at IS NULL ORDER BY trigger_index")
  List<Row> current(String workspaceId, String workflowId);

  @SqlUpdate("INSERT INTO workflow_hook (id_hash, id_sealed, workspace_id, workflow_id, trigger_index, created_at, "
      + "expires_at) VALUES (:idHash, :idSealed, :workspaceId, :workflowId, :triggerIndex, :createdAt, :expiresAt)")
  void insert(@BindMethods Row row);

  /** Ends the current hook of a trigger at {@code at} (a replaced hook works until then). */
  @SqlUpdate("UPDATE workflow_hook SET expires_at = :at WHERE workspace_id = :workspaceId AND workflow_id = :workflowId "
      + "AND trigger_index = :triggerIndex AND expires_at IS NULL")
  int expire(String workspaceId, String workflowId, int triggerIndex, Instant at);

  /** Deletes the hooks that ended before {@code now} (the housekeeping sweep). */
  @SqlUpdate("DELETE FROM workflow_hook WHERE expires_at <= :now")
  int deleteExpired(Instant now);
}
