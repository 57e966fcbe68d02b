package dev.runway.run;

import dev.runway.db.Tx;
import java.time.Instant;

/**
 * Where a run that a commit stores standing at a due http call can go to this instance's engine at
 * once, with no claim round (a query, a commit of its own, and the wait for the dispatcher): the run
 * is stored with the engine's lease and its first attempt started, and handed to the engine once the
 * commit is done. A foreach's iterations start this way, a wave at a time. When the engine has no
 * place for the call (its bounds of calls and memory, a workspace's fair share), the run is stored
 * due, for a claim, as before.
 */
@FunctionalInterface
public interface CallPlaces {
  /** No engine in this process, or none taking runs this way: every run is stored due. */
  CallPlaces NONE = run -> null;

  /**
   * A place in the engine for the call of {@code run} (as it would be stored due), or null. Asked on
   * the group commit's thread, in the transaction that stores the run: quick, never blocking.
   */
  Place take(Run run);

  /** A place taken: the lease to store the run under; started after the commit, or given back. */
  interface Place {
    String owner();

    Instant until();

    /** The transaction committed with the run stored as {@code stored}: its call goes out. */
    void start(Run stored);

    /** The transaction rolled back: the place is free again. */
    void giveBack();

    /**
     * {@code attempting} (the new run with its attempt started) as {@code tx} is to store it: leased
     * under this place, its call started once {@code tx} commits, the place given back if it rolls back.
     */
    default Run leaseIn(Tx tx, Run attempting) {
      Run leased = attempting.withLease(owner(), until());
      tx.onRollback(this::giveBack);
      tx.afterCommit(() -> start(leased));
      return leased;
    }
  }
}
