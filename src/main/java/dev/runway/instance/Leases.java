package dev.runway.instance;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The work this instance holds, and whether it still holds it. A lease on a row (a run in a call, a
 * webhook delivery, a CRM run request) runs for {@code engine.lease_seconds} from the moment it is
 * taken, and the heartbeat renews the leases of the work still {@link #hold held} at every beat: a
 * lease lapses only when its holder stops beating (dead, paused, cut off from the database), never
 * because a call is long.
 *
 * <p>The holder checks its own liveness: it takes no new work unless {@link #live} (its last
 * renewal less than the lease minus one beat old, the beat left as a margin for the other
 * instances' clocks). When a beat finds that a whole lease passed (a long pause, the database
 * away), every lease has lapsed and may have been taken by another instance: all the work held then
 * is given up ({@link #lapse}) and none of it commits ({@link #holds}). Every commit that depends on a lease
 * also checks in the database that the lease is still its holder's and has not lapsed, besides the
 * run's version: a holder that wakes from a pause commits nothing of the work it lost.
 */
public final class Leases {
  /** The tables whose rows are leased, as the registry and the hand-back know them. */
  public static final String RUNS = "run";
  public static final String DELIVERIES = "webhook_delivery";
  public static final String REQUESTS = "run_request";

  /** One piece of held work: the row, the owner its lease was written with, and the epoch it was taken in. */
  public record Hold(String table, String id, String owner, long epoch) {
    String key() {
      return table + "/" + id;
    }
  }

  private final String instanceId;
  private final Duration lease;
  private final Duration beat;
  private final LongSupplier nanos;
  private final Map<String, Hold> held = new ConcurrentHashMap<>();
  private final Map<String, AtomicLong> takeovers = new ConcurrentHashMap<>();
  private volatile long epoch;
  private volatile long confirmedAt;

  /** {@code nanos}: a monotonic clock (System::nanoTime; a test's own). Live from now on, as just confirmed. */
  public Leases(String instanceId, Duration lease, Duration beat, LongSupplier nanos) {
    if (beat.multipliedBy(2).compareTo(lease) > 0) {
      throw new IllegalArgumentException("a beat of " + beat + " leaves no margin in a lease of " + lease);
    }
    this.instanceId = instanceId;
    this.lease = lease;
    this.beat = beat;
    this.nanos = nanos;
    this.confirmedAt = nanos.getAsLong();
  }

  /**
   * How often to beat: {@code wanted} (instances.heartbeat_ms), or a third of the lease when that is
   * shorter, so that a lease outlives two missed beats.
   */
  public static Duration beatFor(Duration wanted, Duration lease) {
    Duration third = lease.dividedBy(3);
    return wanted.compareTo(third) <= 0 ? wanted : third;
  }

  /** The owner this instance writes in the leases it takes (the engine's, the triggers'), and its registry id. */
  public String instanceId() {
    return instanceId;
  }

  public Duration lease() {
    return lease;
  }

  public Duration beat() {
    return beat;
  }

  /** When a lease taken now runs out unless renewed. */
  public Instant until(Instant now) {
    return now.plus(lease);
  }

  /** Whether the leases this instance holds are surely still its own: take no new work otherwise. */
  public boolean live() {
    return nanos.getAsLong() - confirmedAt < lease.minus(beat).toNanos();
  }

  /** Whether a whole lease passed since the last renewal: every lease held then has lapsed. */
  boolean lapsed() {
    return nanos.getAsLong() - confirmedAt >= lease.toNanos();
  }

  /** Holds the row leased to {@code owner}: the heartbeat renews its lease until {@link #release}. */
  public Hold hold(String table, String id, String owner) {
    Hold hold = new Hold(table, id, owner, epoch);
    held.put(hold.key(), hold);
    return hold;
  }

  /**
   * Whether a commit that depends on this hold may go ahead: still held, in this epoch (not given up
   * after a stall). The commit itself checks in the database that the lease is still its holder's
   * and has not lapsed.
   */
  public boolean holds(Hold hold) {
    return hold.epoch() == epoch && held.get(hold.key()) == hold;
  }

  /** The work is done (or given back): its lease is no longer renewed. */
  public void release(Hold hold) {
    held.remove(hold.key(), hold);
  }

  /** Like {@link #holds(Hold)}, for the row of {@code table} leased to {@code owner}. */
  public boolean holds(String table, String id, String owner) {
    Hold hold = held.get(table + "/" + id);
    return hold != null && hold.owner().equals(owner) && holds(hold);
  }

  /** Like {@link #release(Hold)}, for the row of {@code table} leased to {@code owner}. */
  public void release(String table, String id, String owner) {
    held.computeIfPresent(table + "/" + id, (key, hold) -> hold.owner().equals(owner) ? null : hold);
  }

  /** What is held now, to renew. */
  List<Hold> current() {
    long now = epoch;
    return held.values().stream().filter(h -> h.epoch() == now).toList();
  }

  /** A beat that started at {@code startedNanos} renewed every lease held then. */
  void confirmed(long startedNanos) {
    confirmedAt = startedNanos;
  }

  /** The monotonic time now, by this instance's clock. */
  long nanos() {
    return nanos.getAsLong();
  }

  /**
   * Gives up everything held: the leases may have lapsed and been taken by others, so none of this
   * work commits any more (its rows are taken up again by whoever claims them). Returns how many.
   */
  int lapse() {
    epoch++;
    int n = held.size();
    held.clear();
    return n;
  }

  /** Counts work this instance took over from another: {@code n} rows of {@code table}. */
  public void tookOver(String table, long n) {
    if (n > 0) {
      takeovers.computeIfAbsent(table, t -> new AtomicLong()).addAndGet(n);
    }
  }

  /** Rows of {@code table} taken over from other instances since the start. */
  public long takeovers(String table) {
    AtomicLong n = takeovers.get(table);
    return n == null ? 0 : n.get();
  }
}
