package dev.runway.run;

import dev.runway.core.Json;
import dev.runway.db.Tx;
import java.util.Optional;

/**
 * Keeps wait steps and the signals they wait for in step, in the commits that move runs: a new
 * run's signal URLs are stored (their tokens' hashes) with it; a move that reaches a wait step takes
 * the oldest signal of its name kept for the run, if any, and moves on in the same commit (as
 * {@link CrmSteps} does); the URL of a wait that ended, or of every wait of a run that ended, stops
 * working in the commit that ends it. No thread and no lease wait for a signal.
 */
final class SignalWaits {
  private final RunMachines machines;
  private final long approvalTimeoutSeconds;
  private final Runnable runDue;
  private final SignalUrls urls;

  SignalWaits(RunMachines machines, long approvalTimeoutSeconds, Runnable runDue, SignalUrls urls) {
    this.machines = machines;
    this.approvalTimeoutSeconds = approvalTimeoutSeconds;
    this.runDue = runDue;
    this.urls = urls;
  }

  SignalUrls urls() {
    return urls;
  }

  /** After a new run {@code stored} (made by {@code m}) was stored: the hashes of its signal URLs, one per signal its waits wait for. */
  void register(Tx tx, RunMachine m, Run stored) {
    if (!(m instanceof WorkflowRunMachine w) || !urls.enabled()) {
      return;
    }
    for (String name : w.signalNames()) {
      tx.dao(RunSignalDao.class).insertUrl(SignalUrls.hash(urls.token(stored.id(), name)), stored.workspaceId(),
          stored.id(), name, stored.createdAt());
    }
  }

  /**
   * After {@code saved} (the run as {@code m}'s moves left it) was saved in {@code tx}: ends the URLs
   * of the waits that ended, and when the moves reached a wait, takes a kept signal for it and moves
   * on, saving the run again. Returns true when it saved the run again (that save told its parent).
   */
  boolean saved(Tx tx, WorkflowRunMachine m, Run saved) {
    if (saved.isEnded()) {
      if (!m.signalNames().isEmpty()) {
        tx.dao(RunSignalDao.class).endUrls(saved.id(), m.now());
      }
      return false;
    }
    for (String name : m.endedWaits()) {
      tx.dao(RunSignalDao.class).endUrl(saved.id(), name, m.now());
    }
    if (m.signalWait() == null) {
      return false;
    }
    RunSignalDao signals = tx.dao(RunSignalDao.class);
    Optional<RunSignal> kept = signals.oldestKept(saved.id(), m.signalWait());
    if (kept.isEmpty()) {
      return false;
    }
    signals.consume(kept.get().id(), m.now(), saved.currentStep());
    tx.flush(); // the run may have been inserted by a batch not yet executed
    WorkflowRunMachine after = machines.workflow(saved, m.now());
    after.signalReceived(kept.get().id(), kept.get().name(), Json.tree(kept.get().body()), kept.get().via(),
        RunMachine.ENGINE);
    if (after.moveUntilWaiting(approvalTimeoutSeconds)) {
      tx.afterCommit(runDue); // it stands at an http step: the engine makes the call
    }
    ChildRuns.save(tx, after, after.toRun(saved.leaseOwner(), saved.leaseUntil()));
    return true;
  }
}
