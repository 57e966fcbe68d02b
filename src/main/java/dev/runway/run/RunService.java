package dev.runway.run;

import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.db.Slice;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.jdbi.v3.core.Jdbi;

/**
 * Reads runs and their transcripts (only the key's projects), and applies callers' moves
 * (approve, reject, cancel) under the run's row lock.
 */
public final class RunService {
  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final Runnable runDue;
  private final RunMachines machines;
  private final EndedRuns endedRuns = new EndedRuns();

  /** Moves go through {@code committer}; {@code runDue} is told when a moved run became due now. */
  public RunService(Jdbi jdbi, GroupCommitter committer, RunMachines machines, Runnable runDue) {
    this.machines = machines;
    this.jdbi = jdbi;
    this.committer = committer;
    this.runDue = runDue;
  }

  /** Approves a run waiting at an approval; 409 run_state_conflict if it is not waiting. */
  public Run approve(Principal caller, String runId, String comment) {
    return approve(caller, runId, comment, null);
  }

  /** As {@link #approve(Principal, String, String)}; with {@code toolCallIds} only those of an agent run's tool calls. */
  public Run approve(Principal caller, String runId, String comment, List<String> toolCallIds) {
    return move(caller, runId, m -> m.approve(caller.keyId(), comment, toolCallIds));
  }

  public Run reject(Principal caller, String runId, String comment) {
    return reject(caller, runId, comment, null);
  }

  public Run reject(Principal caller, String runId, String comment, List<String> toolCallIds) {
    return move(caller, runId, m -> m.reject(caller.keyId(), comment, toolCallIds));
  }

  /** Cancels a run that has not finished; 409 run_state_conflict if it has. */
  public Run cancel(Principal caller, String runId) {
    return move(caller, runId, m -> m.cancel(caller.keyId()));
  }

  /**
   * Applies a caller's move to the run under a row lock, with its events, in one transaction. An
   * approval past its time-out has failed, whether or not an engine noticed yet: then that expiry
   * is recorded instead, and the move is refused as for any ended run.
   */
  private Run move(Principal caller, String runId, Consumer<RunMachine> move) {
    AtomicBoolean tooLate = new AtomicBoolean();
    Run saved = committer.commit(caller.workspaceId(), tx -> {
      RunDao runs = tx.dao(RunDao.class);
      // The runs above first, as every commit that moves a child and its parents locks them (see ChildRuns).
      ChildRuns.lockAncestors(tx, caller.workspaceId(), runs.parentOf(caller.workspaceId(), runId));
      Run run = runs.findForUpdate(caller.workspaceId(), runId).orElseThrow(() -> runNotFound(caller.workspaceId(), runId));
      checkProject(caller, run);
      RunMachine machine = machines.of(run, Time.now());
      tooLate.set(machine.approvalTimedOut());
      if (tooLate.get()) {
        machine.expireApproval();
      } else {
        move.accept(machine);
      }
      // A caller's move ends any engine lease: an engine still holding the old version will not save.
      Run next = machine.toRun(null, null);
      if (!machine.saveIn(tx, next)) {
        throw new IllegalStateException("run " + runId + " changed under its row lock");
      }
      return next;
    });
    if (tooLate.get()) {
      move.accept(machines.of(saved, Time.now())); // an ended run: 409 run_state_conflict
    }
    if (saved.dueAt() != null) {
      runDue.run();
    }
    return saved;
  }

  private static DomainException runNotFound(String workspaceId, String runId) {
    return DomainException.notFound("run_not_found", "no run '" + runId + "' in workspace '" + workspaceId + "'");
  }

  /**
   * A run of a project outside the key's list does not exist for it, as another workspace's run
   * does not: 404 either way, so the answer tells nothing about ids the key may not see.
   */
  private static void checkProject(Principal caller, Run run) {
    if (!caller.mayUseProject(run.project())) {
      throw runNotFound(caller.workspaceId(), run.id());
    }
  }

  /** An agent run's transcript, oldest first, after message {@code afterIndex} (-1: from the start); a workflow run has none. */
  public List<RunMessage> messages(Principal caller, String runId, int afterIndex, int limit) {
    Run run = get(caller, runId);
    if (!run.isAgent()) {
      return List.of();
    }
    return jdbi.withExtension(RunMessageDao.class, dao -> dao.page(runId, afterIndex, limit));
  }

  /** As {@link #messages(Principal, String, int, int)}, fewer when their stored JSON would pass {@code maxBytes}. */
  public Slice<RunMessage> messages(Principal caller, String runId, int afterIndex, int limit, long maxBytes) {
    Run run = get(caller, runId);
    if (!run.isAgent()) {
      return new Slice<>(List.of(), false);
    }
    return jdbi.withExtension(RunMessageDao.class, dao -> Slice.within(dao.sizes(runId, afterIndex, limit + 1),
        limit, maxBytes, rows -> dao.page(runId, afterIndex, rows)));
  }

  /** The run; an ended one from memory when this instance has read it before (see EndedRuns). */
  public Run get(Principal caller, String runId) {
    Run run = endedRuns.find(caller.workspaceId(), runId).orElseGet(() -> {
      Run read = jdbi.withHandle(h -> RunDao.find(h, caller.workspaceId(), runId))
          .orElseThrow(() -> runNotFound(caller.workspaceId(), runId));
      endedRuns.offer(read);
      return read;
    });
    checkProject(caller, run);
    return run;
  }

  /** Up to {@code limit} runs the caller may see, newest first; fewer when their stored JSON would pass {@code maxBytes}. */
  public Slice<Run> list(Principal caller, RunFilter filter, int limit, long maxBytes) {
    RunFilter scoped = scoped(caller, filter);
    return jdbi.withExtension(RunDao.class, dao -> dao.list(caller.workspaceId(), scoped, limit, maxBytes));
  }

  private static RunFilter scoped(Principal caller, RunFilter filter) {
    if (filter.project() != null && !caller.mayUseProject(filter.project())) {
      throw new DomainException(Kind.FORBIDDEN, "project_forbidden",
          "this API key may not use project '" + filter.project() + "'", "project");
    }
    return new RunFilter(filter.kind(), filter.workflow(), filter.agent(), filter.project(), filter.statuses(),
        filter.createdAfter(), filter.createdBefore(), filter.startingAfter(), caller.projects(), filter.parentRunId());
  }

}

