package dev.runway.engine;

import dev.runway.db.GroupCommitter;
import dev.runway.db.Tx;
import dev.runway.instance.Leases;
import dev.runway.run.Run;
import dev.runway.run.RunMachine;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the runners of every kind of run share: a run's calls made one after another, each answer
 * taken up on {@code executor} (no thread waits for a call); the stop after which an answered run
 * is saved without its next call; and the save of a move, which gives way to a caller's move made
 * while the call was out. A kind says how one call goes ({@link #callOnce}).
 */
abstract class CallingRunner<M extends RunMachine> implements RunAdvancer {
  private static final Logger LOG = LoggerFactory.getLogger(CallingRunner.class);

  protected final GroupCommitter committer;
  protected final EngineSettings settings;
  protected final Leases leases;
  protected final Executor executor;
  private volatile boolean stopping;
  /**
   * The run progress, in characters, that this runner's saves not yet committed may hold at once (one
   * bound for workflow runs, one for agent runs). A save waiting for its commit holds its run twice,
   * once parsed (several times its stored size); past this a worker waits for commits, as every save
   * once did, so that answers carrying large outputs cannot pile up in memory behind a busy
   * committer. Thousands of small saves (a foreach's iterations) still share a commit.
   */
  private static final long MAX_UNSAVED_CHARS = 2_000_000;
  private final java.util.concurrent.Semaphore unsaved = new java.util.concurrent.Semaphore((int) MAX_UNSAVED_CHARS);

  CallingRunner(GroupCommitter committer, EngineSettings settings, Leases leases, Executor executor) {
    this.committer = committer;
    this.settings = settings;
    this.leases = leases;
    this.executor = executor;
  }

  @Override
  public final CompletableFuture<Void> call(Run calling, CallMemory.Reservation room, Leases.Hold hold) {
    return CompletableFuture.supplyAsync(() -> callOnce(calling, room, hold), executor)
        .thenCompose(answered -> answered)
        .thenCompose(next -> next == null ? CompletableFuture.completedFuture(null) : call(next, room, hold));
  }

  /** One call and the move it leads to; the run of the next call, or null when the run now waits or ended. */
  protected abstract CompletableFuture<Run> callOnce(Run calling, CallMemory.Reservation room, Leases.Hold hold);

  /** The run as saved for its next call: leased to this instance for a lease (renewed while it is held). */
  protected final Run leased(RunMachine m) {
    return m.toRun(leases.instanceId(), leases.until(m.now()));
  }

  /**
   * From now on, a run whose call has been answered is saved without starting its next call: the
   * next start (or another instance) makes it, and no call is cut off by this stop.
   */
  @Override
  public final void stop() {
    stopping = true;
  }

  protected final boolean stopping() {
    return stopping;
  }

  /**
   * Saves {@code next}, the run after {@code m}'s moves, if this instance still holds the run: it
   * has not given it up ({@code hold}: after a stall past its lease it gives up everything), the
   * run is still leased to it in the database (an instance that took the run over leased it anew:
   * a paused process waking commits nothing of it) and still at the version it was read at. Then
   * the run of the next call: {@code next} if {@code callAgain}, else null (see {@link #callOnce}).
   * Null too when it was not saved: a caller's move (cancel, approve) came first and the run is left
   * as that move made it, or the run was lost and the answer is dropped (the instance that took the
   * run over makes the call again, with the same Idempotency-Key). No thread waits for the commit:
   * the answers of many calls then share one, however few the engine's workers.
   */
  protected final CompletableFuture<Run> save(Run next, M m, Leases.Hold hold, boolean callAgain) {
    int weight = (int) Math.min(MAX_UNSAVED_CHARS, next.steps().length() + 1_024L);
    unsaved.acquireUninterruptibly(weight);
    CompletableFuture<Boolean> committed;
    try {
      committed = committer.submit(next.workspaceId(), tx -> {
        saveAlso(tx, m);
        return leases.holds(hold) && m.saveHeldIn(tx, next, hold.owner());
      });
    } catch (RuntimeException e) {
      unsaved.release(weight);
      throw e;
    }
    return committed.whenComplete((saved, failure) -> unsaved.release(weight)).thenApply(saved -> {
      if (!saved) {
        LOG.info("run {} changed while its call was out, or this instance's lease on it lapsed; leaving it as it "
            + "is now", next.id());
      }
      return saved && callAgain ? next : null;
    });
  }

  /** What is written with every save of a move, whether or not the run itself is saved. */
  protected void saveAlso(Tx tx, M m) {}
}
