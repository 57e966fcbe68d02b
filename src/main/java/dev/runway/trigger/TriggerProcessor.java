package dev.runway.trigger;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.db.Tx;
import dev.runway.instance.Leases;
import dev.runway.run.RunStarts;
import dev.runway.workflow.Workflow;
import dev.runway.workflow.WorkflowDao;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes the runs that CRM record changes queued (see {@link RunRequestDao}), a few per commit so
 * that a fan-out of thousands of runs never holds the writer for long, and workspace by workspace
 * in turn: each round gives every workspace with queued requests one commit of at most
 * {@link #RUNS_PER_COMMIT} runs, so one tenant's backlog delays another's runs by a round at most.
 *
 * <p>Requests are claimed with a lease (a conditional UPDATE): several instances on one database
 * share the queue, and the requests of a crashed one are taken up when its leases run out (on a
 * single-process database, at the next start). Each target's run has an id derived from its
 * request's and is inserted in the transaction that moves the request past it, only if the request
 * is still where this processor left it: a target becomes exactly one run.
 */
public final class TriggerProcessor implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TriggerProcessor.class);
  /** Runs made in one commit at most. */
  public static final int RUNS_PER_COMMIT = 25;
  /** Requests claimed at once, per workspace. */
  private static final int CLAIM = 25;

  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final RunStarts runs;
  private final Duration pollInterval;
  private final Leases leases;
  private final Duration lease;
  private final String owner;
  private final Semaphore wakeUp = new Semaphore(0);
  private final Thread thread;
  private volatile boolean running = true;

  private TriggerProcessor(Jdbi jdbi, GroupCommitter committer, RunStarts runs, Duration pollInterval,
      Leases leases) {
    this.jdbi = jdbi;
    this.committer = committer;
    this.runs = runs;
    this.pollInterval = pollInterval;
    this.leases = leases;
    this.lease = leases.lease();
    this.owner = leases.instanceId();
    this.thread = new Thread(this::loop, "runway-triggers");
    thread.setDaemon(true);
  }

  /**
   * Starts processing; it looks for requests every {@code pollInterval} and when woken. A request
   * it claims is this instance's ({@code leases}) for a lease after each commit on it, and it takes
   * and commits nothing while the instance is not live.
   */
  public static TriggerProcessor start(Jdbi jdbi, GroupCommitter committer, RunStarts runs, Duration pollInterval,
      Leases leases) {
    TriggerProcessor processor = new TriggerProcessor(jdbi, committer, runs, pollInterval, leases);
    processor.thread.start();
    return processor;
  }

  /** Tells the processor requests were queued, so it looks before the next poll. */
  public void wake() {
    wakeUp.release();
  }

  private void loop() {
    while (running) {
      try {
        if (!round()) {
          wakeUp.tryAcquire(pollInterval.toMillis(), TimeUnit.MILLISECONDS);
          wakeUp.drainPermits();
        }
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        if (running) {
          LOG.warn("could not make triggered runs: {}", e.getMessage());
          sleepQuietly();
        }
      }
    }
  }

  /** One commit for each workspace with queued requests, in workspace order; true if any run was made. */
  boolean round() {
    boolean moved = false;
    String after = "";
    while (running) {
      String from = after;
      Optional<String> ws = jdbi.withExtension(RunRequestDao.class, dao -> dao.nextWorkspace(from));
      if (ws.isEmpty()) {
        break;
      }
      after = ws.get();
      try {
        moved |= turn(ws.get());
      } catch (LostRequest e) {
        LOG.info("triggered run request {} was taken over by another processor", e.getMessage());
      } catch (RuntimeException e) {
        // One workspace's failure (its commit refused, say) does not stop the others' turns.
        LOG.warn("could not make triggered runs of workspace {}: {}", ws.get(), e.getMessage());
      }
    }
    return moved;
  }

  /** One commit of runs for the workspace's oldest requests this processor holds or can claim. */
  private boolean turn(String ws) {
    if (!leases.live()) {
      return false; // no beat recorded lately: its leases may lapse under it
    }
    Instant now = Time.now();
    List<RunRequest> held = jdbi.withExtension(RunRequestDao.class, dao -> dao.held(ws, owner, now, CLAIM));
    if (held.isEmpty()) {
      List<String> free = jdbi.withExtension(RunRequestDao.class, dao -> dao.free(ws, now, CLAIM));
      if (free.isEmpty()) {
        return false; // another processor holds them all
      }
      int claimed = committer.commit(ws, tx -> tx.dao(RunRequestDao.class).claim(free, owner, now, now.plus(lease)));
      if (claimed == 0) {
        return false;
      }
      Instant later = Time.now();
      held = jdbi.withExtension(RunRequestDao.class, dao -> dao.held(ws, owner, later, CLAIM));
    }
    List<RunRequest> requests = held;
    boolean due = committer.commit(ws, tx -> makeRuns(tx, ws, requests));
    if (due) {
      runs.runsBecameDue();
    }
    return true;
  }

  /**
   * Starts up to {@link #RUNS_PER_COMMIT} runs of the requests, in order, and moves each past what
   * it started (removing it when it has every run); a request someone else moved meanwhile rolls
   * the whole commit back. A target whose workflow is gone or archived gets no run. Returns whether
   * some run has work due now.
   */
  private boolean makeRuns(Tx tx, String ws, List<RunRequest> requests) {
    if (!leases.live()) {
      throw new LostRequest(requests.get(0).id()); // its leases may have lapsed: nothing commits
    }
    RunRequestDao dao = tx.dao(RunRequestDao.class);
    Map<String, Optional<Workflow>> workflows = new HashMap<>();
    Instant until = Time.now().plus(lease);
    int budget = RUNS_PER_COMMIT;
    boolean due = false;
    for (RunRequest request : requests) {
      if (budget == 0) {
        break;
      }
      List<RunRequest.Target> targets = request.targetList();
      ObjectNode inputs = (ObjectNode) Json.tree(request.inputs());
      int next = request.done();
      while (next < targets.size() && budget > 0) {
        RunRequest.Target target = targets.get(next);
        Optional<Workflow> workflow = workflows.computeIfAbsent(target.workflowId(),
            id -> tx.dao(WorkflowDao.class).find(ws, id).filter(w -> !w.archived()));
        if (workflow.isPresent()) {
          due |= runs.startInTransaction(tx, Ids.derived("run", request.id(), next), workflow.get(), target.project(),
              inputs, request.actor(), request.depth());
          budget--;
        }
        next++;
      }
      int moved = next == targets.size() ? dao.finish(request.id(), owner, request.done())
          : dao.progress(request.id(), owner, request.done(), next, until);
      if (moved == 0) {
        throw new LostRequest(request.id());
      }
    }
    return due;
  }

  /** A request that another processor moved on while this one worked on it: this commit rolls back. */
  private static final class LostRequest extends RuntimeException {
    LostRequest(String id) {
      super(id, null, false, false);
    }
  }

  private void sleepQuietly() {
    try {
      Thread.sleep(pollInterval.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops after the commit under way; the requests it held are handed back with the instance's other work. */
  @Override
  public void close() {
    running = false;
    wakeUp.release();
    try {
      thread.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
