package dev.runway.run;

import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.db.Slice;
import java.util.List;
import org.jdbi.v3.core.Jdbi;

/**
 * Reads threads of agent runs (a thread is in one workspace and one project; a key limited to
 * projects sees only their threads), and checks a thread a new run continues.
 */
public final class ThreadService {
  private final Jdbi jdbi;

  public ThreadService(Jdbi jdbi) {
    this.jdbi = jdbi;
  }

  /** A thread as the API shows it, with what its runs add up to. */
  public record Summary(AgentThread thread, ThreadDao.Totals totals, String activeRunId, int queuedRuns) {}

  /** The thread, as the caller may see it; 404 when it is missing, in another workspace or another project of the key's. */
  public Summary get(Principal caller, String threadId) {
    AgentThread thread = find(caller, threadId, null);
    return jdbi.withExtension(ThreadDao.class, dao -> {
      List<String> active = dao.runs(caller.workspaceId(), threadId,
          List.of(RunStatus.RUNNING.wireName(), RunStatus.AWAITING_APPROVAL.wireName()), 1);
      int queued = dao.runs(caller.workspaceId(), threadId, List.of(RunStatus.QUEUED.wireName()), 1000).size();
      return new Summary(thread, dao.totals(caller.workspaceId(), threadId), active.isEmpty() ? null : active.get(0),
          queued);
    });
  }

  /**
   * Up to {@code limit} threads the caller may see, newest first, after thread {@code after} (null:
   * from the newest), in {@code project} (null: any the key may see); one more than {@code limit}
   * tells that there are more.
   */
  public List<ThreadView> list(Principal caller, String project, String after, int limit) {
    if (project != null && !caller.mayUseProject(project)) {
      throw new DomainException(Kind.FORBIDDEN, "project_forbidden", "this API key may not use project '" + project
          + "'", "project");
    }
    return jdbi.withHandle(h -> {
      StringBuilder sql = new StringBuilder("SELECT * FROM agent_thread WHERE workspace_id = :ws");
      if (after != null) {
        sql.append(" AND id < :after");
      }
      if (project != null) {
        sql.append(" AND project = :project");
      }
      if (caller.projects() != null) {
        sql.append(caller.projects().isEmpty() ? " AND 1 = 0" : " AND project IN (<projects>)");
      }
      sql.append(" ORDER BY workspace_id DESC, id DESC LIMIT :limit");
      var query = h.createQuery(sql.toString()).bind("ws", caller.workspaceId()).bind("limit", limit + 1);
      if (after != null) {
        query.bind("after", after);
      }
      if (project != null) {
        query.bind("project", project);
      }
      if (caller.projects() != null && !caller.projects().isEmpty()) {
        query.bindList("projects", caller.projects());
      }
      List<AgentThread> threads = query.map(org.jdbi.v3.core.mapper.reflect.ConstructorMapper.of(AgentThread.class)).list();
      if (threads.isEmpty()) {
        return List.of();
      }
      java.util.Map<String, ThreadDao.PageTotals> totals = new java.util.HashMap<>();
      h.attach(ThreadDao.class).totalsOf(caller.workspaceId(), threads.stream().map(AgentThread::id).toList())
          .forEach(t -> totals.put(t.threadId(), t));
      return threads.stream().map(t -> {
        ThreadDao.PageTotals n = totals.get(t.id());
        return n == null ? new ThreadView(t.id(), "thread", t.project(), t.createdAt(), t.createdAt(), 0, null, null, 0)
            : new ThreadView(t.id(), "thread", t.project(), t.createdAt(), n.updatedAt(), n.runCount(), n.lastRunId(),
                n.activeRunId(), n.queuedRunCount());
      }).toList();
    });
  }

  /**
   * The thread's messages (every run's, oldest first) after message {@code afterIdx} of run
   * {@code afterRun} ("" and -1: from the start); fewer when their stored JSON would pass {@code maxBytes}.
   */
  public Slice<ThreadMessage> messages(Principal caller, String threadId, String afterRun, int afterIdx, int limit,
      long maxBytes) {
    find(caller, threadId, null);
    String ws = caller.workspaceId();
    return jdbi.withExtension(ThreadDao.class, dao -> Slice.within(dao.sizes(ws, threadId, afterRun, afterIdx,
        limit + 1), limit, maxBytes, rows -> dao.page(ws, threadId, afterRun, afterIdx, rows)));
  }

  /**
   * The thread a new run of {@code project} continues: 404 naming {@code param} when the caller
   * cannot see it, 409 thread_project_mismatch naming it when it belongs to another project.
   */
  public AgentThread continued(Principal caller, String threadId, String project) {
    AgentThread thread = find(caller, threadId, "thread_id");
    if (!thread.project().equals(project)) {
      throw new DomainException(Kind.CONFLICT, "thread_project_mismatch", "thread '" + threadId + "' belongs to project '"
          + thread.project() + "', not '" + project + "': a thread's runs are all in its project", "thread_id");
    }
    return thread;
  }

  private AgentThread find(Principal caller, String threadId, String param) {
    return jdbi.withExtension(ThreadDao.class, dao -> dao.find(caller.workspaceId(), threadId))
        .filter(t -> caller.mayUseProject(t.project()))
        .orElseThrow(() -> new DomainException(Kind.NOT_FOUND, "thread_not_found", "no thread '" + threadId
            + "' in workspace '" + caller.workspaceId() + "'", param));
  }
}
