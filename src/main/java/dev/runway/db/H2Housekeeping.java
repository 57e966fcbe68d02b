package dev.runway.db;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.h2.engine.SessionLocal;
import org.h2.jdbc.JdbcConnection;
import org.h2.mvstore.MVStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What H2's background writer thread would do, had WRITE_DELAY 0 (which a durable commit needs)
 * not turned it off: rewrite the few live pages of old, mostly dead chunks, so that H2 drops
 * those chunks and reuses their space. Without it, a chunk (one per commit) stays in the file as
 * long as one of its pages is live, which under load is nearly all of them: the file grows by the
 * full write rate, and H2 keeps every chunk's metadata in memory.
 *
 * <p>H2 rewrites only chunks older than its retention time ({@value Database#H2_RETENTION_MILLIS}
 * ms, which Runway sets), so that the file stays consistent even if the disk loses the writes of
 * the last moments.
 *
 * <p>It also hands H2's writes on to the disk (fsync) every {@value #SYNC_MILLIS} ms. A commit
 * survives a crash of the process once it is written to the file, as the operating system keeps
 * it; but Linux writes a file's changed pages to the disk only once they are 30 s old, all at
 * once, and under load commits stall while gigabytes go out (docs/performance.md, "H2 under
 * sustained load").
 */
final class H2Housekeeping implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(H2Housekeeping.class);
  private static final long INTERVAL_MILLIS = 60;
  /**
   * The first round waits until the server has surely started: a round holds H2's store lock, and
   * the start's own commits (the workflow files) would wait behind it. What a start writes is little.
   */
  private static final long FIRST_ROUND_MILLIS = 10_000;
  /** Below this share of live data in its chunks, H2 rewrites the emptiest old chunks. */
  private static final int TARGET_FILL_RATE = 80;
  /**
   * Live bytes rewritten per round, at most: a round holds H2's store lock, so commits wait for
   * it, and small rounds often keep those waits short without rewriting less in all.
   */
  private static final int WRITE_LIMIT = 512 << 10;
  /**
   * Short, so that each sync is small and the writes never pile up into one long write-out that
   * stalls commits. A sync runs on this thread, holding none of H2's locks.
   */
  private static final long SYNC_MILLIS = 250;

  private final DataSource dataSource;
  private final ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "runway-h2-housekeeping");
    t.setDaemon(true);
    return t;
  });
  /** The open file's store, fetched once (only the housekeeping thread touches it). */
  private MVStore store;
  /** H2's count of writes to the file at the last sync. */
  private volatile long syncedWrites;

  /**
   * {@code dataSource} is the pool itself, not the fail-fast wrapper the requests use: a failed
   * round must not make requests fail fast. It is asked only while there is no open store.
   */
  H2Housekeeping(DataSource dataSource) {
    this.dataSource = dataSource;
    executor.scheduleWithFixedDelay(this::round, FIRST_ROUND_MILLIS, INTERVAL_MILLIS, TimeUnit.MILLISECONDS);
    executor.scheduleWithFixedDelay(this::sync, SYNC_MILLIS, SYNC_MILLIS, TimeUnit.MILLISECONDS);
  }

  private void round() {
    try {
      MVStore s = store();
      // The rewritten pages reach the file with the next commit, and only then are the old chunks
      // free: when no request commits (after a burst of writes), this round has to store them.
      if (s != null && s.compact(TARGET_FILL_RATE, WRITE_LIMIT)) {
        s.tryCommit();
      }
    } catch (RuntimeException | SQLException e) {
      // The database may be away for a while; the next round tries again.
      LOG.debug("H2 housekeeping skipped: {}", e.toString());
    }
  }

  private void sync() {
    try {
      MVStore s = store();
      if (s == null) {
        return;
      }
      long writes = s.getFileStore().getWriteCount();
      if (writes != syncedWrites) {
        s.sync();
        syncedWrites = writes;
      }
    } catch (RuntimeException | SQLException e) {
      LOG.debug("H2 sync skipped: {}", e.toString());
    }
  }

  /** H2's count of writes to the file at the last sync (0 before the first). */
  long syncedWrites() {
    return syncedWrites;
  }

  private MVStore store() throws SQLException {
    if (store == null || store.isClosed()) {
      try (Connection c = dataSource.getConnection()) {
        store = storeOf(c);
      }
    }
    return store;
  }

  /**
   * The store of the H2 file this connection works on; null when another process holds the file
   * and this one reaches it through AUTO_SERVER.
   */
  static MVStore storeOf(Connection c) throws SQLException {
    return c.unwrap(JdbcConnection.class).getSession() instanceof SessionLocal session
        ? session.getDatabase().getStore().getMvStore()
        : null;
  }

  /**
   * Waits for a round or sync in progress instead of interrupting it: an interrupt during file I/O
   * would close H2's file channel, and with it the database.
   */
  @Override
  public void close() {
    executor.shutdown();
    try {
      executor.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
