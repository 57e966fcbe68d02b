package dev.runway.run;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.Bind;
import org.jdbi.v3.sqlobject.customizer.BindMap;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.customizer.Define;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

@RegisterConstructorMapper(Run.class)
public interface RunDao {
  @SqlUpdate("INSERT INTO run (id, workspace_id, workflow_id, project, status, requires_approval, inputs, "
      + "created_at, updated_at, finished_at, approval, error, definition, steps, current_step, due_at, lease_owner, "
      + "lease_until, version) VALUES (:id, :workspaceId, :workflowId, :project, :status, :requiresApproval, :inputs, "
      + ":createdAt, :updatedAt, :finishedAt, :approval, :error, :definition, :steps, :currentStep, :dueAt, "
      + ":leaseOwner, :leaseUntil, :version)")
  void insert(@BindMethods Run run);

  @SqlQuery("SELECT * FROM run WHERE workspace_id = :workspaceId AND id = :id FOR UPDATE")
  Optional<Run> findForUpdate(String workspaceId, String id);

  /**
   * Writes a run's new progress if nobody changed it since {@code expectedVersion} was read;
   * returns 0 when somebody did (the caller lost the race and must not go on).
   */
  @SqlUpdate("UPDATE run SET status = :status, approval = :approval, error = :error, steps = :steps, "
      + "current_step = :currentStep, due_at = :dueAt, finished_at = :finishedAt, updated_at = :updatedAt, "
      + "lease_owner = :leaseOwner, lease_until = :leaseUntil, version = :version "
      + "WHERE id = :id AND version = :version - 1")
  int saveProgress(@BindMethods Run run);

  /** Runs the engine should look at now and that no live lease holds, longest due first. */
  @SqlQuery("SELECT * FROM run WHERE due_at <= :now AND (lease_until IS NULL OR lease_until < :now) "
      + "ORDER BY due_at LIMIT :limit")
  List<Run> dueRuns(java.time.Instant now, int limit);

  /**
   * Drops every lease: only for a single-process database (H2), at start, after a crash. Leased
   * runs are always due, so the due_at index finds them without reading ended runs.
   */
  @SqlUpdate("UPDATE run SET lease_owner = NULL, lease_until = NULL WHERE due_at IS NOT NULL AND lease_owner IS NOT NULL")
  int releaseAllLeases();

  @SqlQuery("SELECT * FROM run WHERE workspace_id = :workspaceId AND id = :id")
  Optional<Run> find(String workspaceId, String id);

  @SqlQuery("SELECT * FROM run WHERE workspace_id = :workspaceId <filters> ORDER BY id DESC LIMIT :limit")
  List<Run> select(@Bind("workspaceId") String workspaceId, @Define("filters") String filters,
      @BindMap Map<String, Object> params, @Bind("limit") int limit);

  /** Newest first. Only fixed SQL text is defined into the query; every value is a bind parameter. */
  default List<Run> list(String workspaceId, RunFilter f, int limit) {
    StringBuilder sql = new StringBuilder();
    Map<String, Object> params = new HashMap<>();
    if (f.workflow() != null) {
      sql.append(" AND workflow_id = :workflow");
      params.put("workflow", f.workflow());
    }
    if (f.project() != null) {
      sql.append(" AND project = :project");
      params.put("project", f.project());
    }
    appendIn(sql, params, "status", f.statuses());
    appendIn(sql, params, "project", f.projects());
    if (f.createdAfter() != null) {
      sql.append(" AND created_at > :createdAfter");
      params.put("createdAfter", f.createdAfter());
    }
    if (f.createdBefore() != null) {
      sql.append(" AND created_at < :createdBefore");
      params.put("createdBefore", f.createdBefore());
    }
    if (f.startingAfter() != null) {
      sql.append(" AND id < :startingAfter");
      params.put("startingAfter", f.startingAfter());
    }
    return select(workspaceId, sql.toString(), params, limit);
  }

  private static void appendIn(StringBuilder sql, Map<String, Object> params, String column, List<String> values) {
    if (values == null) {
      return;
    }
    sql.append(" AND ").append(column).append(" IN (");
    for (int i = 0; i < values.size(); i++) {
      String name = column + "_" + i;
      sql.append(i == 0 ? ":" : ", :").append(name);
      params.put(name, values.get(i));
    }
    sql.append(values.isEmpty() ? "NULL)" : ")");
  }
}
