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
