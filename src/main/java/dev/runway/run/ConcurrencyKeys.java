package dev.runway.run;

import dev.runway.core.Time;
import dev.runway.db.Tx;
import dev.runway.workflow.Concurrency;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Concurrency keys (a workflow's {@code concurrency}): in the commit that stores a new run, whether
 * it takes a place of its key, waits {@code queued}, cancels the oldest active run of the key or
 * ends skipped; in the commit that ends an active run (whatever ends it), its place goes to the
 * oldest queued run of the key, which starts there, or is given back. The places are counted in a
 * row per key (ConcurrencyDao), changed by conditional updates under its row lock, so that two
 * instances on one database cannot both take the last place. No thread or timer waits for a place.
 */
final class ConcurrencyKeys {
  /** The queued runs a freed place looks at, at most (a run canceled meanwhile is passed over). */
  private static final int LOOK_AHEAD = 20;

  private final RunMachines machines;
  private final long approvalTimeoutSeconds;
  private final Runnable runDue;

  ConcurrencyKeys(RunMachines machines, long approvalTimeoutSeconds, Runnable runDue) {
    this.machines = machines;
    this.approvalTimeoutSeconds = approvalTimeoutSeconds;
    this.runDue = runDue;
  }

  /**
   * What a new run stores instead of its first moves: {@code run} with {@code events}; {@code machine}
   * made the moves (a skipped run's end, to tell its parent), null for a queued run.
   */
  record Held(Run run, List<Event> events, WorkflowRunMachine machine) {}

  /**
   * Decides in {@code tx} for a new run that its first moves (made by {@code m}) left as
   * {@code stored}, still going, with a concurrency key: null when it takes a place and goes on as
   * stored (with {@code cancel_oldest}, the oldest active run of the key is canceled in this commit
   * when no place was free); else what to store instead, made from {@code fresh}, the run as it was
   * created: queued, or ended skipped. {@code actor} is who started it.
   */
  Held admit(Tx tx, WorkflowRunMachine m, Run fresh, Run stored, String actor) {
    Concurrency concurrency = m.concurrency();
    String key = stored.concurrencyKey();
    if (concurrency == null || key == null || stored.isEnded()) {
      return null;
    }
    ConcurrencyDao places = tx.dao(ConcurrencyDao.class);
    String ws = stored.workspaceId();
    String wf = stored.workflowId();
    if (places.take(ws, wf, key, concurrency.limit()) == 1) {
      return null;
    }
    if (places.rows(ws, wf, key) == 0) { // the key's first run
      places.insertTaken(ws, wf, key);
      return null;
    }
    Run keyed = fresh.withConcurrencyKey(key);
    switch (concurrency.onLimit()) {
      case CANCEL_OLDEST -> {
        cancelOldest(tx, stored, actor);
        places.add(ws, wf, key); // the canceled run gave its place back (or handed it to a queued one)
        return null;
      }
      case SKIP -> {
        WorkflowRunMachine skipped = machines.workflow(keyed, keyed.createdAt());
        List<Event> events = new ArrayList<>();
        events.add(RunMachine.started(keyed, actor));
        skipped.skipForConcurrency(actor);
        events.addAll(skipped.events());
        return new Held(skipped.toRun(null, null), events, skipped);
      }
      default -> {
        Run queued = keyed.queued();
        return new Held(queued, List.of(RunMachine.event(queued, "run.queued", actor,
            Map.of("concurrency_key", key, "limit", concurrency.limit()), queued.createdAt())), null);
      }
    }
  }

  /**
   * Cancels the oldest active run of {@code run}'s key, as a cancel through the API does (its
   * children too), by {@code actor}, naming the run that took its place.
   */
  private void cancelOldest(Tx tx, Run run, String actor) {
    tx.flush();
    RunDao runs = tx.dao(RunDao.class);
    for (String id : tx.dao(ConcurrencyDao.class).activeRuns(run.workspaceId(), run.workflowId(),
        run.concurrencyKey(), LOOK_AHEAD)) {
      // The runs above first, as every commit that moves a child and its parents locks them (see ChildRuns).
      ChildRuns.lockAncestors(tx, run.workspaceId(), runs.parentOf(run.workspaceId(), id));
      Optional<Run> oldest = runs.findForUpdate(run.workspaceId(), id);
      if (oldest.isPresent() && RunStatus.parse(oldest.get().status()).map(RunStatus::isActive).orElse(false)) {
        RunMachine machine = machines.of(oldest.get(), Time.now());
        machine.cancel(actor);
        ChildRuns.save(tx, machine, machine.toRun(null, null));
        return;
      }
    }
  }

  /**
   * After {@code ended} was saved in {@code tx}, a run that held a place of its key (it was active)
   * and has ended: the place goes to the oldest queued run of the key, which starts in this commit,
   * or is given back when none waits. The place of a run's thread is handed on by {@link Threads}.
   */
  void released(Tx tx, Run ended) {
    if (ended.threadId() != null) {
      machines.threads().released(tx, ended);
      return;
    }
    tx.flush(); // a queued run may have been stored in this transaction, by a batch not yet executed
    ConcurrencyDao places = tx.dao(ConcurrencyDao.class);
    RunDao runs = tx.dao(RunDao.class);
    String ws = ended.workspaceId();
    for (String id : places.queued(ws, ended.workflowId(), ended.concurrencyKey(), LOOK_AHEAD)) {
      Optional<Run> queued = runs.findForUpdate(ws, id);
      if (queued.isPresent() && RunStatus.QUEUED.wireName().equals(queued.get().status())) {
        start(tx, queued.get());
        return;
      }
    }
    places.giveBack(ws, ended.workflowId(), ended.concurrencyKey());
  }

  /**
   * Starts queued run {@code queued} in {@code tx}: its first moves, as a new run makes them, and
   * their events; a run that stands at an http call then is handed to the engine (see {@link CallPlaces}).
   */
  private void start(Tx tx, Run queued) {
    Instant now = Time.now();
    WorkflowRunMachine m = machines.workflow(queued.dequeued(now), now);
    List<Event> events = new ArrayList<>();
    boolean due = m.start(RunMachine.ENGINE, null, approvalTimeoutSeconds, events);
    m.events().clear(); // saved with the machine's events: its start event first, then its moves'
    m.events().addAll(events);
    // Standing at a due call, it goes to this instance's engine at once when it has room, as a new run does.
    CallPlaces.Place place = due ? machines.places().take(m.toRun(null, null)) : null;
    Run next = m.toRun(null, null);
    if (place != null) {
      m.startAttempt();
      next = place.leaseIn(tx, m.toRun(null, null));
    }
    ChildRuns.save(tx, m, next);
    if (due && place == null) {
      tx.afterCommit(runDue);
    }
  }
}
