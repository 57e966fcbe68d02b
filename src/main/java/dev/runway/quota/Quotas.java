package dev.runway.quota;

import dev.runway.config.Settings;
import dev.runway.core.RateLimiter;
import dev.runway.db.WorkspaceDao;
import dev.runway.db.WorkspaceLocks;
import java.time.Instant;
import java.util.EnumMap;
import java.util.Map;
import org.jdbi.v3.core.Handle;

/**
 * Per-workspace quotas: how many keys, webhook endpoints, workflows, agents, secrets and open
 * event streams a workspace may have, how much it may keep in the CRM, and how many runs it may
 * start a minute. Without them every per-workspace share (calls in flight, webhook attempts,
 * streams) multiplies with the things a tenant can make for free.
 *
 * <p>A count is checked in the transaction of the insert, after {@link #lock} took the workspace's
 * lock: on PostgreSQL the advisory lock the group committer's writes of that workspace take too
 * (so concurrent creates on any instance queue and none overshoots); on H2 a row lock on the
 * workspace (one process holds an H2 file; a second process through AUTO_SERVER, the keys command,
 * takes the same row lock). Creates are rare, so the wait costs nothing that matters.
 */
public final class Quotas {
  private final Map<Quota, Integer> limits;
  private final boolean postgres;
  private final RateLimiter runStarts;

  public Quotas(Map<Quota, Integer> limits, boolean postgres) {
    this.limits = new EnumMap<>(limits);
    for (Quota q : Quota.values()) {
      this.limits.putIfAbsent(q, 0);
    }
    this.postgres = postgres;
    int perMinute = this.limits.get(Quota.RUNS_PER_MINUTE);
    this.runStarts = perMinute == 0 ? null : new RateLimiter(perMinute / 60.0, perMinute);
  }

  /** No quota at all (tests of other things, embedding). */
  public static Quotas none() {
    return new Quotas(Map.of(), false);
  }

  /** The quotas.* settings; 0 turns a quota off. */
  public static Map<Quota, Integer> limits(Settings s) {
    Map<Quota, Integer> limits = new EnumMap<>(Quota.class);
    for (Quota q : Quota.values()) {
      limits.put(q, s.integer(q.setting(), 0, Integer.MAX_VALUE));
    }
    return limits;
  }

  /** The limit of {@code quota}; 0 when it is off. */
  public int limit(Quota quota) {
    return limits.get(quota);
  }

  /**
   * Makes the workspace if new and takes its lock for the rest of {@code h}'s transaction: the
   * count that follows stays true until the insert commits. On PostgreSQL the advisory lock comes
   * first, before any row is written, as the group committer takes it.
   */
  public void lock(Handle h, String workspaceId, Instant now) {
    if (postgres) {
      WorkspaceLocks.lock(h.getConnection(), WorkspaceLocks.key(workspaceId));
      h.attach(WorkspaceDao.class).ensure(workspaceId, now);
    } else {
      h.attach(WorkspaceDao.class).ensure(workspaceId, now);
      h.createQuery("SELECT id FROM workspace WHERE id = :ws FOR UPDATE").bind("ws", workspaceId)
          .mapTo(String.class).findOne();
    }
  }

  /**
   * Refuses a create when the workspace has {@code count} of {@code quota} already and that is its
   * limit; counted only while the quota is on (a count reads every row of the workspace).
   */
  public void check(Quota quota, String workspaceId, java.util.function.LongSupplier count) {
    long limit = limit(quota);
    if (limit > 0 && count.getAsLong() >= limit) {
      throw new QuotaExceeded(quota, limit, "workspace '" + workspaceId + "' has its quota of " + limit + " "
          + quota.wireName().replace('_', ' ') + " (" + quota.setting() + ")", 0);
    }
  }

  /** Refuses a write that would take the workspace from {@code count} past its limit by adding {@code adding}. */
  public void checkAdding(Quota quota, String workspaceId, long count, long adding) {
    long limit = limit(quota);
    if (limit > 0 && count + adding > limit) {
      throw new QuotaExceeded(quota, limit, "workspace '" + workspaceId + "' has " + count + " "
          + quota.wireName().replace('_', ' ') + "; " + adding + " more would pass its quota of " + limit + " ("
          + quota.setting() + ")", 0);
    }
  }

  /** Like {@link #checkAdding} for a quota in megabytes (10^6) over a count of characters. */
  public void checkAddingMegabytes(Quota quota, String workspaceId, long chars, long adding) {
    long limit = limit(quota);
    if (limit > 0 && chars + adding > limit * 1_000_000L) {
      throw new QuotaExceeded(quota, limit, "workspace '" + workspaceId + "' holds " + (chars + 999_999) / 1_000_000
          + " MB; " + adding + " more characters would pass its quota of " + limit + " MB (" + quota.setting() + ")",
          0);
    }
  }

  /**
   * Refuses one more of {@code quota} held open at once (event streams) when {@code open} is its
   * limit: 429 with Retry-After, since closing one makes room.
   */
  public void checkOpen(Quota quota, String workspaceId, long open) {
    long limit = limit(quota);
    if (limit > 0 && open >= limit) {
      throw new QuotaExceeded(quota, limit, "workspace '" + workspaceId + "' has " + open + " "
          + quota.wireName().replace('_', ' ') + " open, its quota (" + quota.setting() + "); close one first",
          5);
    }
  }

  /** Counts a run start of the workspace against its per-minute quota; 429 with Retry-After past it. */
  public void takeRunStart(String workspaceId) {
    if (runStarts == null) {
      return;
    }
    RateLimiter.Quota taken = runStarts.take(workspaceId);
    if (!taken.allowed()) {
      int limit = limit(Quota.RUNS_PER_MINUTE);
      throw new QuotaExceeded(Quota.RUNS_PER_MINUTE, limit, "workspace '" + workspaceId + "' started its quota of "
          + limit + " runs a minute (" + Quota.RUNS_PER_MINUTE.setting() + "); retry after "
          + taken.retryAfterSeconds() + " s", taken.retryAfterSeconds());
    }
  }
}
