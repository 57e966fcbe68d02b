package dev.runway.run;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/** Threads of agent runs, their runs and their messages. */
@RegisterConstructorMapper(AgentThread.class)
@RegisterConstructorMapper(value = ThreadMessage.class)
@RegisterConstructorMapper(value = ThreadDao.Totals.class)
public interface ThreadDao {
  /** The statuses of ended runs (RunStatus#isEnded), whose messages a later run of the thread is given. */
  String ENDED = "('succeeded', 'failed', 'canceled', 'rejected')";
  /** A thread's runs: found through run_by_thread (V31), the run table having no index on thread_id. */
  String RUNS = "FROM run_by_thread t JOIN run r ON r.id = t.run_id ";

  @SqlUpdate("INSERT INTO agent_thread (workspace_id, id, project, created_at) VALUES (:workspaceId, :id, :project, "
      + ":createdAt)")
  void insert(String workspaceId, String id, String project, Instant createdAt);

  @SqlQuery("SELECT * FROM agent_thread WHERE workspace_id = :workspaceId AND id = :id")
  Optional<AgentThread> find(String workspaceId, String id);

  /** What a thread's runs add up to. */
  record Totals(int runCount, String lastRunId, Instant updatedAt) {}

  @SqlQuery("SELECT COUNT(*) AS run_count, MAX(r.id) AS last_run_id, MAX(r.updated_at) AS updated_at " + RUNS
      + "WHERE t.workspace_id = :workspaceId AND t.thread_id = :threadId")
  Totals totals(String workspaceId, String threadId);

  /** What the runs of each of some threads add up to (a thread without runs has no row). */
  record PageTotals(String threadId, int runCount, String lastRunId, Instant updatedAt, String activeRunId,
      int queuedRunCount) {}

  @SqlQuery("SELECT t.thread_id, COUNT(*) AS run_count, MAX(r.id) AS last_run_id, MAX(r.updated_at) AS updated_at, "
      + "MAX(CASE WHEN r.status IN ('running', 'awaiting_approval') THEN r.id END) AS active_run_id, "
      + "SUM(CASE WHEN r.status = 'queued' THEN 1 ELSE 0 END) AS queued_run_count " + RUNS
      + "WHERE t.workspace_id = :workspaceId AND t.thread_id IN (<threadIds>) GROUP BY t.thread_id")
  @RegisterConstructorMapper(PageTotals.class)
  List<PageTotals> totalsOf(String workspaceId,
      @org.jdbi.v3.sqlobject.customizer.BindList("threadIds") List<String> threadIds);

  /** The thread's runs in the given statuses, oldest first. */
  @SqlQuery("SELECT t.run_id " + RUNS + "WHERE t.workspace_id = :workspaceId AND t.thread_id = :threadId "
      + "AND r.status IN (<statuses>) ORDER BY t.run_id LIMIT :limit")
  List<String> runs(String workspaceId, String threadId,
      @org.jdbi.v3.sqlobject.customizer.BindList("statuses") List<String> statuses, int limit);

  /**
   * The most recent {@code limit} messages of the thread's ended runs other than {@code runId},
   * system messages left out, newest first.
   */
  @SqlQuery("SELECT m.run_id, m.idx, m.role, m.content, m.tool_calls, m.tool_call_id, m.created_at "
      + RUNS + "JOIN run_message m ON m.run_id = t.run_id "
      + "WHERE t.workspace_id = :workspaceId AND t.thread_id = :threadId AND t.run_id <> :runId AND r.status IN " + ENDED
      + " AND m.role <> 'system' ORDER BY m.run_id DESC, m.idx DESC LIMIT :limit")
  List<ThreadMessage> recent(String workspaceId, String threadId, String runId, int limit);

  /** The messages of run {@code runId} from index {@code from} to {@code to}, oldest first. */
  @SqlQuery("SELECT run_id, idx, role, content, tool_calls, tool_call_id, created_at FROM run_message "
      + "WHERE run_id = :runId AND idx >= :from AND idx <= :to ORDER BY run_id, idx")
  List<ThreadMessage> range(String runId, int from, int to);

  /** A page of the thread's messages (every run's, system messages too), oldest first, after a run's message. */
  @SqlQuery("SELECT m.run_id, m.idx, m.role, m.content, m.tool_calls, m.tool_call_id, m.created_at "
      + "FROM run_by_thread t JOIN run_message m ON m.run_id = t.run_id "
      + "WHERE t.workspace_id = :workspaceId AND t.thread_id = :threadId "
      + "AND (m.run_id > :afterRun OR (m.run_id = :afterRun AND m.idx > :afterIdx)) "
      + "ORDER BY m.run_id, m.idx LIMIT :limit")
  List<ThreadMessage> page(String workspaceId, String threadId, String afterRun, int afterIdx, int limit);

  /** The stored sizes of the messages {@link #page} reads. */
  @SqlQuery("SELECT COALESCE(LENGTH(m.content), 0) + COALESCE(LENGTH(m.tool_calls), 0) "
      + "FROM run_by_thread t JOIN run_message m ON m.run_id = t.run_id "
      + "WHERE t.workspace_id = :workspaceId AND t.thread_id = :threadId "
      + "AND (m.run_id > :afterRun OR (m.run_id = :afterRun AND m.idx > :afterIdx)) "
      + "ORDER BY m.run_id, m.idx LIMIT :limit")
  List<Long> sizes(String workspaceId, String threadId, String afterRun, int afterIdx, int limit);
}
