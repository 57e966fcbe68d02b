package dev.runway.instance;

import dev.runway.core.Ids;
import dev.runway.core.Time;
import dev.runway.db.Jdbc;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This process in the instance registry, and the liveness its leases rest on. It registers at the
 * start and beats every interval: each beat records that it is alive and renews the leases of the
 * work it holds ({@link Leases}), in one transaction. It is marked stopping when its stop begins;
 * at the end it hands back every lease it still holds and is marked stopped, in one commit, so the
 * other instances take its work up at their next claim.
 *
 * <p>On PostgreSQL it also holds a session advisory lock on a connection of its own, which the
 * database releases the moment the process dies. At every beat (and at the start) it tries the
 * locks of the other instances not stopped: one whose lock is free is gone, and its work is handed
 * back at once (a kill -9 costs a beat, not a lease; a restarted instance takes back its previous
 * process's work as it starts). A paused process keeps its lock: its work comes back when its
 * leases lapse. On H2 only one process uses the database: the leases a crash left are all dropped
 * at the start.
 */
public final class Heartbeat implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Heartbeat.class);
  /** Leases renewed per statement at most. */
  private static final int RENEW_CHUNK = 500;

  private final Jdbi jdbi;
  private final Leases leases;
  private final Long lockKey;
  private final Runnable workReturned;
  private final ScheduledExecutorService timer;
  /** The connection holding this instance's advisory lock (PostgreSQL), or null. */
  private Handle lock;

  private Heartbeat(Jdbi jdbi, Leases leases, Long lockKey, Handle lock, Runnable workReturned,
      ScheduledExecutorService timer) {
    this.jdbi = jdbi;
    this.leases = leases;
    this.lockKey = lockKey;
    this.lock = lock;
    this.workReturned = workReturned;
    this.timer = timer;
  }

  /**
   * Registers this process and beats every {@code wanted} (or a third of {@code lease}, if shorter).
   * {@code singleProcess}: H2, no other process shares the database. {@code workReturned}: told when
   * work of a gone instance was handed back, to be claimed at once.
   */
  public static Heartbeat start(Jdbi jdbi, Duration wanted, Duration lease, boolean singleProcess,
      Runnable workReturned) {
    return start(jdbi, wanted, lease, !singleProcess, singleProcess, workReturned);
  }

  /**
   * Like {@link #start(Jdbi, Duration, Duration, boolean, Runnable)}, saying what to do separately:
   * {@code lockable} (PostgreSQL) hold a liveness lock and take back the work of the instances
   * whose locks are free; {@code takeBackAll} drop every lease at once (no other process can hold
   * one). An embedding program with several engines in one process on one H2 database takes
   * neither.
   */
  public static Heartbeat start(Jdbi jdbi, Duration wanted, Duration lease, boolean lockable, boolean takeBackAll,
      Runnable workReturned) {
    Instant now = Time.now();
    String id = Ids.newId("ins", now.toEpochMilli());
    Leases leases = new Leases(id, lease, Leases.beatFor(wanted, lease), System::nanoTime);
    Long key = null;
    Handle lock = null;
    if (takeBackAll) {
      jdbi.useTransaction(h -> {
        InstanceDao dao = h.attach(InstanceDao.class);
        Map<String, Integer> released = dao.releaseEveryLease();
        dao.allGone(now);
        if (released.values().stream().anyMatch(n -> n > 0)) {
          LOG.info("took back the work held before the last stop: {}", describe(released));
        }
      });
    }
    if (lockable) {
      // The lock before the row: an instance registered without a lock held is one that died.
      key = ThreadLocalRandom.current().nextLong();
      lock = lock(jdbi, key);
    }
    String version = Heartbeat.class.getPackage().getImplementationVersion();
    Instance self = new Instance(id, host(), ProcessHandle.current().pid(), version == null ? "dev" : version, now,
        now, null, null, key);
    try {
      jdbi.useExtension(InstanceDao.class, dao -> dao.insert(self));
    } catch (RuntimeException e) {
      if (lock != null) {
        lock.close();
      }
      throw e;
    }
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "runway-heartbeat");
      t.setDaemon(true);
      return t;
    });
    Heartbeat heartbeat = new Heartbeat(jdbi, leases, key, lock, workReturned, timer);
    if (lock != null) {
      try {
        heartbeat.takeBackFromTheGone(); // a restart takes back its previous process's work at once
      } catch (RuntimeException e) {
        LOG.warn("instance {}: could not look for instances that are gone ({}); the next beat looks again", id,
            e.getMessage());
      }
    }
    long every = leases.beat().toMillis();
    timer.scheduleWithFixedDelay(heartbeat::beat, every, every, TimeUnit.MILLISECONDS);
    LOG.info("instance {} registered ({} pid {}, version {}): beats every {} ms, leases of {} s", id, self.host(),
        self.pid(), self.version(), every, lease.toSeconds());
    return heartbeat;
  }

  public String id() {
    return leases.instanceId();
  }

  /** The leases of the work this instance holds. */
  public Leases leases() {
    return leases;
  }

  /** One beat: alive, the held leases renewed; then (PostgreSQL) its own lock checked and the others' tried. */
  void beat() {
    try {
      long started = leases.nanos();
      Instant now = Time.now();
      if (leases.lapsed()) {
        int abandoned = leases.lapse();
        if (abandoned > 0) {
          LOG.warn("instance {}: no beat recorded for longer than its leases allow; it gives up the {} pieces of "
              + "work it held, which any instance takes up again", id(), abandoned);
        }
      }
      List<Leases.Hold> holds = leases.current();
      boolean known = jdbi.withExtension(InstanceDao.class, dao -> dao.beat(id(), now)) == 1;
      if (known) {
        boolean postgres = lock != null;
        jdbi.<Void, SQLException>withHandle(h -> {
          renew(h.getConnection(), holds, now, leases.until(now), postgres);
          return null;
        });
      } else {
        int abandoned = leases.lapse();
        jdbi.useExtension(InstanceDao.class, dao -> dao.revive(id(), now));
        LOG.warn("instance {} was taken for gone by another instance, which took back its work; it gives up the {} "
            + "pieces of work it held and goes on", id(), abandoned);
      }
      leases.confirmed(started);
      if (lock != null) {
        keepOwnLock();
        takeBackFromTheGone();
      }
    } catch (SQLException | RuntimeException e) {
      LOG.warn("instance {}: heartbeat not recorded ({}); trying again", id(), e.getMessage());
    }
  }

  /**
   * Renews the leases held, each only if still this instance's and not lapsed (one that lapsed
   * stays lapsed: another instance may claim it, and then this one's commit on it fails), outside
   * any transaction of several rows, so that a beat never holds one row while it waits for another
   * that a commit is writing (they would deadlock). On PostgreSQL in chunks, skipping the rows a
   * commit is writing at this moment (that commit writes their next lease, or ends them); on H2 one
   * row per statement, without a locking read.
   */
  private static void renew(Connection c, List<Leases.Hold> holds, Instant now, Instant until, boolean postgres)
      throws SQLException {
    for (String table : List.of(Leases.RUNS, Leases.DELIVERIES, Leases.REQUESTS)) {
      List<Leases.Hold> theirs = holds.stream().filter(h -> h.table().equals(table)).toList();
      if (!postgres) {
        try (PreparedStatement ps = c.prepareStatement("UPDATE " + table + " SET lease_until = ? WHERE id = ? "
            + "AND lease_owner = ? AND lease_until > ?")) {
          for (Leases.Hold hold : theirs) {
            Jdbc.setTime(ps, 1, until);
            ps.setString(2, hold.id());
            ps.setString(3, hold.owner());
            Jdbc.setTime(ps, 4, now);
            ps.executeUpdate();
          }
        }
        continue;
      }
      for (int from = 0; from < theirs.size(); from += RENEW_CHUNK) {
        List<Leases.Hold> chunk = theirs.subList(from, Math.min(theirs.size(), from + RENEW_CHUNK));
        String pairs = String.join(", ", java.util.Collections.nCopies(chunk.size(), "(?, ?)"));
        try (PreparedStatement ps = c.prepareStatement("UPDATE " + table + " SET lease_until = ? WHERE id IN "
            + "(SELECT id FROM " + table + " WHERE (id, lease_owner) IN (" + pairs + ") AND lease_until > ? "
            + "FOR UPDATE SKIP LOCKED)")) {
          int i = 1;
          Jdbc.setTime(ps, i++, until);
          for (Leases.Hold hold : chunk) {
            ps.setString(i++, hold.id());
            ps.setString(i++, hold.owner());
          }
          Jdbc.setTime(ps, i, now);
          ps.executeUpdate();
        }
      }
    }
  }

  /**
   * The lock's connection broke: the lock is gone, and another instance may take this one for gone
   * and its work back. What it holds is given up, and the lock taken again.
   */
  private void keepOwnLock() {
    try {
      lock.createQuery("SELECT 1").mapTo(Integer.class).one();
      return;
    } catch (RuntimeException e) {
      LOG.warn("instance {}: the connection holding its liveness lock broke ({}); it gives up the {} pieces of work "
          + "it held and takes the lock again", id(), e.getMessage(), leases.lapse());
    }
    try {
      lock.close();
    } catch (RuntimeException ignored) {
      // broken already
    }
    lock = lock(jdbi, lockKey); // if this fails, the next beat tries again
  }

  /** Hands back the work of every other instance whose liveness lock is free: its process is gone. */
  private void takeBackFromTheGone() {
    for (Instance other : jdbi.withExtension(InstanceDao.class, dao -> dao.othersWithLocks(id()))) {
      if (!lock.createQuery("SELECT pg_try_advisory_lock(:key)").bind("key", other.livenessLock())
          .mapTo(Boolean.class).one()) {
        continue; // alive (or paused: its leases lapse by themselves)
      }
      try {
        Map<String, Integer> released = jdbi.inTransaction(h -> {
          InstanceDao dao = h.attach(InstanceDao.class);
          return dao.gone(other.id(), Time.now()) == 1 ? dao.releaseAll(other.id()) : Map.<String, Integer>of();
        });
        if (!released.isEmpty()) {
          released.forEach(leases::tookOver);
          leases.tookOver("instance", 1);
          LOG.warn("instance {} ({} pid {}) is gone (its liveness lock is free): took back {}", other.id(),
              other.host(), other.pid(), describe(released));
          workReturned.run();
        }
      } finally {
        lock.createQuery("SELECT pg_advisory_unlock(:key)").bind("key", other.livenessLock()).mapTo(Boolean.class)
            .one();
      }
    }
  }

  private static Handle lock(Jdbi jdbi, long key) {
    Handle h = jdbi.open();
    try {
      if (!h.createQuery("SELECT pg_try_advisory_lock(:key)").bind("key", key).mapTo(Boolean.class).one()) {
        throw new IllegalStateException("the liveness lock " + key + " is held by another session");
      }
      return h;
    } catch (RuntimeException e) {
      h.close();
      throw e;
    }
  }

  static String describe(Map<String, Integer> released) {
    return released.getOrDefault(Leases.RUNS, 0) + " runs, " + released.getOrDefault(Leases.DELIVERIES, 0)
        + " webhook deliveries and " + released.getOrDefault(Leases.REQUESTS, 0) + " triggered run requests";
  }

  /** Its stop began: it takes no new work. */
  public void stopping() {
    record(dao -> dao.stopping(id(), Time.now()), "stopping");
  }

  /**
   * Its stop ended (the engine and the dispatcher have stopped): everything it still holds is handed
   * back and it is marked stopped, in one commit; nothing it held commits any more.
   */
  @Override
  public void close() {
    timer.shutdown();
    try {
      timer.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    leases.lapse();
    try {
      Map<String, Integer> handedBack = jdbi.inTransaction(h -> {
        InstanceDao dao = h.attach(InstanceDao.class);
        Map<String, Integer> released = dao.releaseAll(id());
        dao.stopped(id(), Time.now());
        return released;
      });
      if (handedBack.values().stream().anyMatch(n -> n > 0)) {
        LOG.info("instance {} stopped and handed back {}", id(), describe(handedBack));
      }
    } catch (RuntimeException e) {
      LOG.warn("instance {}: could not hand back its work and record that it stopped ({}); its leases lapse in {} s",
          id(), e.getMessage(), leases.lease().toSeconds());
    }
    if (lock != null) {
      try {
        // Unlocked first: the pool keeps the session open, and with it a lock not released.
        lock.createQuery("SELECT pg_advisory_unlock(:key)").bind("key", lockKey).mapTo(Boolean.class).one();
        lock.close();
      } catch (RuntimeException ignored) {
        // gone already
      }
    }
  }

  private void record(ToIntFunction<InstanceDao> change, String what) {
    try {
      jdbi.useExtension(InstanceDao.class, change::applyAsInt);
    } catch (RuntimeException e) {
      LOG.warn("instance {}: could not record that it {} ({})", id(), what, e.getMessage());
    }
  }

  private static String host() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "unknown";
    }
  }
}
