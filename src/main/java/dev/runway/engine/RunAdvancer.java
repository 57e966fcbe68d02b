package dev.runway.engine;

import dev.runway.instance.Leases;
import dev.runway.run.Run;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;

/** How one kind of run advances: the only per-kind part of the engine (StepRunner, AgentRunner). */
interface RunAdvancer {
  /** A claim round begins: what a runner read for the last round's claims is read anew. Called on the dispatcher's thread, as claim is. */
  default void newRound() {}

  /**
   * The run's moves that need no waiting as of {@code now}; when a call is then due, the claim saves
   * the run leased to this instance with the call recorded as started.
   */
  Engine.Claim claim(Run run, Instant now);

  /**
   * Makes the call of a run saved by a claim, and every call after it, until the run waits or ends,
   * each move saved only while this instance still holds the run ({@code hold}). Completes then;
   * fails only if a save failed (the lease is no longer renewed, and the run is taken up again).
   */
  CompletableFuture<Void> call(Run calling, CallMemory.Reservation room, Leases.Hold hold);

  /** The memory a call of the run (as saved for the call) holds: its documents, its request, room for its answer. */
  long weight(Run run);

  /** From now on, a run whose call has been answered is saved without starting its next call. */
  void stop();
}
