package dev.runway.run;

import java.util.List;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/**
 * The places of concurrency keys (a row per workspace, workflow and key: how many of its runs are
 * active) and the runs that wait for them. Every change of a count is one conditional statement
 * under the row's lock, in the commit that starts or ends the run it counts.
 */
public interface ConcurrencyDao {
  /** Takes a place if one is free: 1 if taken, 0 if every place is taken or the key has no row yet. */
  @SqlUpdate("UPDATE concurrency_slot SET active = active + 1 WHERE workspace_id = :workspaceId "
      + "AND workflow_id = :workflowId AND concurrency_key = :key AND active < :limit")
  int take(String workspaceId, String workflowId, String key, int limit);

  /** Whether the key has its row. */
  @SqlQuery("SELECT COUNT(*) FROM concurrency_slot WHERE workspace_id = :workspaceId AND workflow_id = :workflowId "
      + "AND concurrency_key = :key")
  int rows(String workspaceId, String workflowId, String key);

  /**
   * The key's row, with one place taken. Two commits that make it at once: one fails on the primary
   * key and is tried again alone by the group commit, and then finds the row.
   */
  @SqlUpdate("INSERT INTO concurrency_slot (workspace_id, workflow_id, concurrency_key, active) "
      + "VALUES (:workspaceId, :workflowId, :key, 1)")
  void insertTaken(String workspaceId, String workflowId, String key);

  /** Takes a place whether or not one is free (cancel_oldest: the oldest run's end gives one back). */
  @SqlUpdate("UPDATE concurrency_slot SET active = active + 1 WHERE workspace_id = :workspaceId "
      + "AND workflow_id = :workflowId AND concurrency_key = :key")
  int add(String workspaceId, String workflowId, String key);

  /** Gives a place back. */
  @SqlUpdate("UPDATE concurrency_slot SET active = active - 1 WHERE workspace_id = :workspaceId "
      + "AND workflow_id = :workflowId AND concurrency_key = :key AND active > 0")
  int giveBack(String workspaceId, String workflowId, String key);

  /** How many places of the key are taken (0 when it has no row). */
  @SqlQuery("SELECT COALESCE(MAX(active), 0) FROM concurrency_slot WHERE workspace_id = :workspaceId "
      + "AND workflow_id = :workflowId AND concurrency_key = :key")
  int active(String workspaceId, String workflowId, String key);

  /** The key's queued runs, oldest first (from run_by_key: the key's runs that have not ended, see RunDao). */
  @SqlQuery("SELECT run_id FROM run_by_key WHERE workspace_id = :workspaceId AND workflow_id = :workflowId "
      + "AND concurrency_key = :key AND status = 'queued' ORDER BY run_id LIMIT :limit")
  List<String> queued(String workspaceId, String workflowId, String key, int limit);

  /** The key's active runs (running or awaiting approval), oldest first. */
  @SqlQuery("SELECT run_id FROM run_by_key WHERE workspace_id = :workspaceId AND workflow_id = :workflowId "
      + "AND concurrency_key = :key AND status IN ('running', 'awaiting_approval') ORDER BY run_id LIMIT :limit")
  List<String> activeRuns(String workspaceId, String workflowId, String key, int limit);
}
