package dev.runway.workflow;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/** The schedules of workflows (see {@link Schedule}), one row each with its next time. */
@RegisterConstructorMapper(ScheduleDao.Row.class)
public interface ScheduleDao {
  /**
   * A stored schedule: trigger {@code triggerIndex} of the workflow, {@code spec} its JSON as
   * stored in the workflow's triggers; the scheduled time of its last run and that run's id.
   */
  record Row(String workspaceId, String workflowId, int triggerIndex, String spec, Instant nextRunAt,
      Instant lastRunAt, String lastRunId) {}

  @SqlQuery("SELECT * FROM workflow_schedule WHERE workspace_id = :workspaceId AND workflow_id = :workflowId "
      + "ORDER BY trigger_index")
  List<Row> of(String workspaceId, String workflowId);

  /** The schedules due at {@code now}, the longest due first. */
  @SqlQuery("SELECT * FROM workflow_schedule WHERE next_run_at <= :now ORDER BY next_run_at LIMIT :limit")
  List<Row> due(Instant now, int limit);

  /** The earliest next time of any schedule. */
  @SqlQuery("SELECT MIN(next_run_at) FROM workflow_schedule")
  Optional<Instant> earliest();

  @SqlUpdate("INSERT INTO workflow_schedule (workspace_id, workflow_id, trigger_index, spec, next_run_at, last_run_at, "
      + "last_run_id) VALUES (:workspaceId, :workflowId, :triggerIndex, :spec, :nextRunAt, :lastRunAt, :lastRunId)")
  void insert(@BindMethods Row row);

  @SqlUpdate("DELETE FROM workflow_schedule WHERE workspace_id = :workspaceId AND workflow_id = :workflowId")
  int deleteAll(String workspaceId, String workflowId);

  @SqlUpdate("DELETE FROM workflow_schedule WHERE workspace_id = :workspaceId AND workflow_id = :workflowId "
      + "AND trigger_index = :triggerIndex")
  int delete(String workspaceId, String workflowId, int triggerIndex);

  /**
   * Moves a schedule read as {@code row} on to {@code next}, having started run {@code runId} for
   * {@code fired} (both null when it started none): 0 when another instance moved it first, or a
   * put changed it, since it was read.
   */
  @SqlUpdate("UPDATE workflow_schedule SET next_run_at = :next, last_run_at = COALESCE(:fired, last_run_at), "
      + "last_run_id = COALESCE(:runId, last_run_id) WHERE workspace_id = :r.workspaceId "
      + "AND workflow_id = :r.workflowId AND trigger_index = :r.triggerIndex AND next_run_at = :r.nextRunAt "
      + "AND spec = :r.spec")
  int move(@BindMethods("r") Row row, Instant next, Instant fired, String runId);
}
