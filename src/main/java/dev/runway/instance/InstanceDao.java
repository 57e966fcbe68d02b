package dev.runway.instance;

import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/**
 * The instance registry, and the leases of the work instances hold: the rows of {@link Leases#RUNS},
 * {@link Leases#DELIVERIES} and {@link Leases#REQUESTS} whose {@code lease_owner} is an instance id
 * (a webhook delivery's is the id, a colon and the dispatcher's round). The statements on runs and
 * deliveries go through their due indexes: a leased row is always due.
 */
@RegisterConstructorMapper(Instance.class)
public interface InstanceDao {
  /** Bounds that make the planners use the due indexes (every due time is later). */
  String DUE_SINCE = "TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00'";

  @SqlUpdate("INSERT INTO instance (id, host, pid, version, started_at, heartbeat_at, stopping_at, stopped_at, "
      + "liveness_lock) VALUES (:id, :host, :pid, :version, :startedAt, :heartbeatAt, :stoppingAt, :stoppedAt, "
      + ":livenessLock)")
  void insert(@BindMethods Instance instance);

  @SqlUpdate("UPDATE instance SET heartbeat_at = :now WHERE id = :id AND stopped_at IS NULL")
  int beat(String id, Instant now);

  /** Running again after another instance took it for gone. */
  @SqlUpdate("UPDATE instance SET heartbeat_at = :now, stopping_at = NULL, stopped_at = NULL WHERE id = :id")
  int revive(String id, Instant now);

  @SqlUpdate("UPDATE instance SET stopping_at = :now, heartbeat_at = :now WHERE id = :id AND stopping_at IS NULL")
  int stopping(String id, Instant now);

  @SqlUpdate("UPDATE instance SET stopped_at = :now, heartbeat_at = :now, stopping_at = COALESCE(stopping_at, :now) "
      + "WHERE id = :id")
  int stopped(String id, Instant now);

  /** An instance found gone: stopped now, if no one marked it so first. */
  @SqlUpdate("UPDATE instance SET stopped_at = :now, stopping_at = COALESCE(stopping_at, :now) "
      + "WHERE id = :id AND stopped_at IS NULL")
  int gone(String id, Instant now);

  /** Every instance not stopped: on a single-process database, left by a crash. */
  @SqlUpdate("UPDATE instance SET stopped_at = :now, stopping_at = COALESCE(stopping_at, :now) WHERE stopped_at IS NULL")
  int allGone(Instant now);

  /** The other instances that hold (or held) a liveness lock and are not stopped. */
  @SqlQuery("SELECT * FROM instance WHERE stopped_at IS NULL AND liveness_lock IS NOT NULL AND id <> :self")
  List<Instance> othersWithLocks(String self);

  /** The newest {@code limit} instances, newest first. */
  @SqlQuery("SELECT * FROM instance ORDER BY started_at DESC, id DESC LIMIT :limit")
  List<Instance> newest(int limit);

  /** Forgets instances that stopped, or went quiet, before {@code before}. */
  @SqlUpdate("DELETE FROM instance WHERE heartbeat_at < :before")
  int prune(Instant before);

  // ---- leases ----

  // An owner's leases are released skipping the rows a commit is writing at that moment (a caller's
  // cancel, say): waiting for them while holding others could deadlock with it; those lapse instead.

  @SqlUpdate("UPDATE run SET lease_owner = NULL, lease_until = NULL WHERE id IN (SELECT id FROM run WHERE due_at >= "
      + DUE_SINCE + " AND lease_owner = :owner FOR UPDATE SKIP LOCKED)")
  int releaseRuns(String owner);

  @SqlUpdate("UPDATE webhook_delivery SET lease_owner = NULL, lease_until = NULL WHERE id IN (SELECT id FROM "
      + "webhook_delivery WHERE next_attempt_at >= " + DUE_SINCE + " AND LEFT(lease_owner, :length) = :prefix "
      + "FOR UPDATE SKIP LOCKED)")
  int releaseDeliveries(String prefix, int length);

  @SqlUpdate("UPDATE run_request SET lease_owner = NULL, lease_until = NULL WHERE id IN (SELECT id FROM run_request "
      + "WHERE lease_owner = :owner FOR UPDATE SKIP LOCKED)")
  int releaseRequests(String owner);

  @SqlUpdate("UPDATE run SET lease_owner = NULL, lease_until = NULL WHERE due_at >= " + DUE_SINCE
      + " AND lease_owner IS NOT NULL")
  int releaseAllRuns();

  @SqlUpdate("UPDATE webhook_delivery SET lease_owner = NULL, lease_until = NULL WHERE next_attempt_at >= " + DUE_SINCE
      + " AND lease_owner IS NOT NULL")
  int releaseAllDeliveries();

  @SqlUpdate("UPDATE run_request SET lease_owner = NULL, lease_until = NULL WHERE lease_owner IS NOT NULL")
  int releaseAllRequests();

  /** Live leases by owner. */
  record OwnerCount(String owner, int n) {}

  @SqlQuery("SELECT lease_owner AS owner, COUNT(*) AS n FROM run WHERE due_at >= " + DUE_SINCE
      + " AND lease_owner IS NOT NULL AND lease_until >= :now GROUP BY lease_owner")
  @RegisterConstructorMapper(OwnerCount.class)
  List<OwnerCount> runsHeld(Instant now);

  @SqlQuery("SELECT lease_owner AS owner, COUNT(*) AS n FROM webhook_delivery WHERE next_attempt_at >= " + DUE_SINCE
      + " AND lease_owner IS NOT NULL AND lease_until >= :now GROUP BY lease_owner")
  @RegisterConstructorMapper(OwnerCount.class)
  List<OwnerCount> deliveriesHeld(Instant now);

  @SqlQuery("SELECT lease_owner AS owner, COUNT(*) AS n FROM run_request WHERE lease_owner IS NOT NULL "
      + "AND lease_until >= :now GROUP BY lease_owner")
  @RegisterConstructorMapper(OwnerCount.class)
  List<OwnerCount> requestsHeld(Instant now);

  /** The rows each instance holds under a live lease: instance id, then table, then how many. */
  default Map<String, Map<String, Integer>> held(Instant now) {
    Map<String, Map<String, Integer>> held = new HashMap<>();
    runsHeld(now).forEach(c -> held.computeIfAbsent(c.owner(), k -> new HashMap<>()).merge(Leases.RUNS, c.n(),
        Integer::sum));
    deliveriesHeld(now).forEach(c -> held.computeIfAbsent(instanceOf(c.owner()), k -> new HashMap<>())
        .merge(Leases.DELIVERIES, c.n(), Integer::sum));
    requestsHeld(now).forEach(c -> held.computeIfAbsent(c.owner(), k -> new HashMap<>()).merge(Leases.REQUESTS,
        c.n(), Integer::sum));
    return held;
  }

  /** The instance of a lease owner: a delivery's owner is the instance id, a colon and the round. */
  static String instanceOf(String owner) {
    int colon = owner.indexOf(':');
    return colon < 0 ? owner : owner.substring(0, colon);
  }

  /** Hands back every lease {@code owner} holds; how many of each table. */
  default Map<String, Integer> releaseAll(String owner) {
    return Map.of(Leases.RUNS, releaseRuns(owner),
        Leases.DELIVERIES, releaseDeliveries(owner + ":", owner.length() + 1),
        Leases.REQUESTS, releaseRequests(owner));
  }

  /** Drops every lease of every instance (a single-process database at start: no other holds one). */
  default Map<String, Integer> releaseEveryLease() {
    return Map.of(Leases.RUNS, releaseAllRuns(), Leases.DELIVERIES, releaseAllDeliveries(),
        Leases.REQUESTS, releaseAllRequests());
  }
}
