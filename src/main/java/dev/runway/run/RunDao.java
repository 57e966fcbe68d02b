package dev.runway.run;

import dev.runway.db.Slice;
import dev.runway.db.Jdbc;
import dev.runway.db.Tx;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.Bind;
import org.jdbi.v3.sqlobject.customizer.BindList;
import org.jdbi.v3.sqlobject.customizer.BindMap;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.customizer.Define;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

@RegisterConstructorMapper(Run.class)
public interface RunDao {
  /** Earlier than any due_at: as a lower bound, it lets an index range scan skip the NULLs. */
  String DUE_SINCE = "TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00'";

  /** Stores a new run when the group commit's transaction commits (see {@link Tx#batch}). */
  static void insert(Tx tx, Run run) {
    PreparedStatement ps = tx.batch("INSERT INTO run (id, workspace_id, workflow_id, project, status, "
        + "requires_approval, inputs, created_at, updated_at, finished_at, approval, error, definition, steps, "
        + "current_step, due_at, lease_owner, lease_until, version, kind, agent_id, output, parent_run_id, rerun_of, "
        + "concurrency_key, thread_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    try {
      ps.setString(1, run.id());
      ps.setString(2, run.workspaceId());
      ps.setString(3, run.workflowId());
      ps.setString(4, run.project());
      ps.setString(5, run.status());
      ps.setBoolean(6, run.requiresApproval());
      ps.setString(7, run.inputs());
      Jdbc.setTime(ps, 8, run.createdAt());
      Jdbc.setTime(ps, 9, run.updatedAt());
      Jdbc.setTime(ps, 10, run.finishedAt());
      ps.setString(11, run.approval());
      ps.setString(12, run.error());
      ps.setString(13, run.definition());
      ps.setString(14, run.steps());
      ps.setInt(15, run.currentStep());
      Jdbc.setTime(ps, 16, run.dueAt());
      ps.setString(17, run.leaseOwner());
      Jdbc.setTime(ps, 18, run.leaseUntil());
      ps.setInt(19, run.version());
      ps.setString(20, run.kind());
      ps.setString(21, run.agentId());
      ps.setString(22, run.output());
      ps.setString(23, run.parentRunId());
      ps.setString(24, run.rerunOf());
      ps.setString(25, run.concurrencyKey());
      ps.setString(26, run.threadId());
      ps.addBatch();
      if (run.parentRunId() != null) {
        addRow(tx.batch("INSERT INTO run_by_parent (parent_run_id, run_id) VALUES (?, ?)"), run.parentRunId(), run.id());
      }
      if (run.threadId() != null) {
        addRow(tx.batch("INSERT INTO run_by_thread (workspace_id, thread_id, run_id) VALUES (?, ?, ?)"),
            run.workspaceId(), run.threadId(), run.id());
      }
      if (run.agentId() != null) {
        addRow(tx.batch("INSERT INTO run_by_agent (workspace_id, agent_id, run_id) VALUES (?, ?, ?)"),
            run.workspaceId(), run.agentId(), run.id());
      }
      if (run.concurrencyKey() != null && !run.isEnded()) {
        addRow(tx.batch("INSERT INTO run_by_key (workspace_id, workflow_id, concurrency_key, status, run_id) "
            + "VALUES (?, ?, ?, ?, ?)"), run.workspaceId(), run.workflowId(), run.concurrencyKey(), run.status(), run.id());
      }
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  private static void addRow(PreparedStatement ps, String... values) throws SQLException {
    for (int i = 0; i < values.length; i++) {
      ps.setString(i + 1, values[i]);
    }
    ps.addBatch();
  }

  @SqlQuery("SELECT * FROM run WHERE workspace_id = :workspaceId AND id = :id FOR UPDATE")
  Optional<Run> findForUpdate(String workspaceId, String id);

  /** The run's parent run id, "" when it has none (or there is no such run); takes no lock. */
  @SqlQuery("SELECT COALESCE(MAX(parent_run_id), '') FROM run WHERE workspace_id = :workspaceId AND id = :id")
  String parentOf(String workspaceId, String id);

  /**
   * Writes a run's new progress if the stored run is still at the version before {@code run}'s and
   * has not ended; returns 0 otherwise (the caller lost the race and must not go on). An ended run
   * never changes again, which lets every instance keep copies of ended runs (EndedRuns).
   */
  default int saveProgress(Run run) {
    return keepKeyed(this, run, updateProgress(run));
  }

  /** {@link #saveProgress}'s statement alone: call that, which keeps run_by_key too. */
  @SqlUpdate("UPDATE run SET status = :status, approval = :approval, error = :error, steps = :steps, "
      + "current_step = :currentStep, due_at = :dueAt, finished_at = :finishedAt, updated_at = :updatedAt, "
      + "lease_owner = :leaseOwner, lease_until = :leaseUntil, version = :version, output = :output "
      + "WHERE id = :id AND version = :version - 1 AND finished_at IS NULL")
  int updateProgress(@BindMethods Run run);

  /**
   * Like {@link #saveProgress}, for a move that rests on a lease: only while the run is still
   * leased to {@code heldBy}. An instance that takes a run over writes its own lease (and the next
   * version) in its claim, so of a holder that lost the run and the one that took it, one saves.
   */
  default int saveHeldProgress(Run run, String heldBy) {
    return keepKeyed(this, run, updateHeldProgress(run, heldBy));
  }

  /** {@link #saveHeldProgress}'s statement alone: call that, which keeps run_by_key too. */
  @SqlUpdate("UPDATE run SET status = :r.status, approval = :r.approval, error = :r.error, steps = :r.steps, "
      + "current_step = :r.currentStep, due_at = :r.dueAt, finished_at = :r.finishedAt, updated_at = :r.updatedAt, "
      + "lease_owner = :r.leaseOwner, lease_until = :r.leaseUntil, version = :r.version, output = :r.output "
      + "WHERE id = :r.id AND version = :r.version - 1 AND finished_at IS NULL AND lease_owner = :heldBy")
  int updateHeldProgress(@BindMethods("r") Run run, String heldBy);

  /** After a saved move of a run with a concurrency key: its status in run_by_key, or its row gone once it ended. */
  private static int keepKeyed(RunDao runs, Run run, int saved) {
    if (saved == 1 && run.concurrencyKey() != null) {
      if (run.isEnded()) {
        runs.forgetKeyed(run.workspaceId(), run.workflowId(), run.concurrencyKey(), run.id());
      } else {
        runs.keyedStatus(run.workspaceId(), run.workflowId(), run.concurrencyKey(), run.id(), run.status());
      }
    }
    return saved;
  }

  @SqlUpdate("UPDATE run_by_key SET status = :status WHERE workspace_id = :workspaceId AND workflow_id = :workflowId "
      + "AND concurrency_key = :key AND run_id = :runId AND status <> :status")
  void keyedStatus(String workspaceId, String workflowId, String key, String runId, String status);

  @SqlUpdate("DELETE FROM run_by_key WHERE workspace_id = :workspaceId AND workflow_id = :workflowId "
      + "AND concurrency_key = :key AND run_id = :runId")
  void forgetKeyed(String workspaceId, String workflowId, String key, String runId);

  /**
   * Runs the engine should look at now and that no live lease holds, longest due first. The lower
   * bound on due_at matters: H2 keeps the ended runs' NULLs at the start of the due_at index, and
   * without it would walk all of them on every poll.
   */
  @SqlQuery("SELECT * FROM run WHERE due_at >= " + DUE_SINCE + " AND due_at <= :now "
      + "AND (lease_until IS NULL OR lease_until < :now) ORDER BY due_at LIMIT :limit")
  List<Run> dueRuns(java.time.Instant now, int limit);

  @SqlQuery("SELECT * FROM run WHERE due_at >= " + DUE_SINCE + " AND due_at <= :now "
      + "AND (lease_until IS NULL OR lease_until < :now) AND workspace_id NOT IN (<except>) ORDER BY due_at LIMIT :limit")
  List<Run> dueRunsOutside(java.time.Instant now, @BindList("except") java.util.Collection<String> except, int limit);

  /** How many runs {@link #dueRuns(java.time.Instant, int)} would find without a limit, counted up to {@code atMost}. */
  @SqlQuery("SELECT COUNT(*) FROM (SELECT 1 FROM run WHERE due_at >= " + DUE_SINCE + " AND due_at <= :now "
      + "AND (lease_until IS NULL OR lease_until < :now) LIMIT :atMost) due")
  int countDue(java.time.Instant now, int atMost);

  @SqlQuery("SELECT " + STORED_SIZE + " FROM run WHERE due_at >= " + DUE_SINCE + " AND due_at <= :now "
      + "AND (lease_until IS NULL OR lease_until < :now) ORDER BY due_at LIMIT :limit")
  List<Long> dueSizes(java.time.Instant now, int limit);

  @SqlQuery("SELECT " + STORED_SIZE + " FROM run WHERE due_at >= " + DUE_SINCE + " AND due_at <= :now "
      + "AND (lease_until IS NULL OR lease_until < :now) AND workspace_id NOT IN (<except>) ORDER BY due_at LIMIT :limit")
  List<Long> dueSizesOutside(java.time.Instant now, @BindList("except") java.util.Collection<String> except, int limit);

  /**
   * As {@link #dueRuns(java.time.Instant, java.util.Collection, int)}, as many as fit in
   * {@code maxBytes} of stored JSON (at least one): 256 runs near their 512 KB bound are 128 MB.
   */
  default Slice<Run> dueRuns(java.time.Instant now, java.util.Collection<String> except, int limit, long maxBytes) {
    List<Long> sizes = except.isEmpty() ? dueSizes(now, limit + 1) : dueSizesOutside(now, except, limit + 1);
    return Slice.within(sizes, limit, maxBytes, rows -> dueRuns(now, except, rows));
  }

  /** As {@link #dueRuns(java.time.Instant, int)}, leaving out the runs of the workspaces {@code except}. */
  default List<Run> dueRuns(java.time.Instant now, java.util.Collection<String> except, int limit) {
    return except.isEmpty() ? dueRuns(now, limit) : dueRunsOutside(now, except, limit);
  }

  /** The run, if the workspace has it: plain JDBC, as GET /v1/runs/{id} is among the most frequent requests. */
  static Optional<Run> find(Handle h, String workspaceId, String id) {
    try (PreparedStatement ps = h.getConnection().prepareStatement(
        "SELECT * FROM run WHERE workspace_id = ? AND id = ?")) {
      ps.setString(1, workspaceId);
      ps.setString(2, id);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(fromRow(rs)) : Optional.empty();
      }
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  private static Run fromRow(ResultSet rs) throws SQLException {
    return new Run(rs.getString("id"), rs.getString("workspace_id"), rs.getString("kind"), rs.getString("workflow_id"),
        rs.getString("agent_id"),
        rs.getString("project"), rs.getString("status"), rs.getBoolean("requires_approval"), rs.getString("inputs"),
        Jdbc.getTime(rs, "created_at"), Jdbc.getTime(rs, "updated_at"), Jdbc.getTime(rs, "finished_at"),
        rs.getString("approval"), rs.getString("error"), rs.getString("definition"), rs.getString("steps"),
        rs.getInt("current_step"), Jdbc.getTime(rs, "due_at"), rs.getString("lease_owner"),
        Jdbc.getTime(rs, "lease_until"), rs.getInt("version"), rs.getString("output"),
        rs.getString("parent_run_id"), rs.getString("rerun_of"), rs.getString("concurrency_key"),
        rs.getString("thread_id"));
  }

  @SqlQuery("SELECT * FROM run WHERE workspace_id = :workspaceId <filters> ORDER BY id DESC LIMIT :limit")
  List<Run> select(@Bind("workspaceId") String workspaceId, @Define("filters") String filters,
      @BindMap Map<String, Object> params, @Bind("limit") int limit);

  /** What a run holds in its big columns, in stored characters: what reading it costs. */
  String STORED_SIZE = "LENGTH(inputs) + COALESCE(LENGTH(steps), 0) + COALESCE(LENGTH(definition), 0) "
      + "+ COALESCE(LENGTH(approval), 0) + COALESCE(LENGTH(error), 0) + COALESCE(LENGTH(output), 0)";

  @SqlQuery("SELECT " + STORED_SIZE + " FROM run WHERE workspace_id = :workspaceId <filters> ORDER BY id DESC LIMIT :limit")
  List<Long> selectSizes(@Bind("workspaceId") String workspaceId, @Define("filters") String filters,
      @BindMap Map<String, Object> params, @Bind("limit") int limit);

  /**
   * Up to {@code limit} runs, newest first, as many as fit in {@code maxBytes} of stored JSON (at
   * least one). Only fixed SQL text is defined into the query; every value is a bind parameter.
   */
  default Slice<Run> list(String workspaceId, RunFilter f, int limit, long maxBytes) {
    Map<String, Object> params = new HashMap<>();
    String filters = filters(f, params);
    return Slice.within(selectSizes(workspaceId, filters, params, limit + 1), limit, maxBytes,
        rows -> select(workspaceId, filters, params, rows));
  }

  private static String filters(RunFilter f, Map<String, Object> params) {
    StringBuilder sql = new StringBuilder();
    if (f.kind() != null) {
      sql.append(" AND kind = :kind");
      params.put("kind", f.kind());
    }
    // A run's agent and parent are found through their lookup tables (V31). The page's lower bound
    // goes into those lookups, where their key orders the run ids: next to the run's own id, H2 would
    // walk the run table's key down from it instead.
    String before = f.startingAfter() == null ? "" : " AND run_id < :startingAfter";
    if (f.agent() != null) {
      sql.append(" AND id IN (SELECT run_id FROM run_by_agent WHERE workspace_id = :workspaceId AND agent_id = :agent")
          .append(before).append(")");
      params.put("agent", f.agent());
    }
    if (f.workflow() != null) {
      sql.append(" AND workflow_id = :workflow");
      params.put("workflow", f.workflow());
      if (f.parentRunId() == null) {
        // Leaves out iterations: a foreach's or parallel's child runs are runs of its own workflow,
        // reached from their run (parent_run_id=). The parent is read by its primary key.
        sql.append(" AND (parent_run_id IS NULL OR NOT EXISTS (SELECT 1 FROM run p WHERE p.id = run.parent_run_id "
            + "AND p.workflow_id = run.workflow_id))");
      }
    }
    if (f.parentRunId() != null) {
      sql.append(" AND id IN (SELECT run_id FROM run_by_parent WHERE parent_run_id = :parentRunId").append(before)
          .append(")");
      params.put("parentRunId", f.parentRunId());
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
      if (f.agent() == null && f.parentRunId() == null) {
        sql.append(" AND id < :startingAfter");
      }
      params.put("startingAfter", f.startingAfter());
    }
    return sql.toString();
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
