package dev.runway.crm;

import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Has PostgreSQL take the planner's statistics of crm_record (ANALYZE) once a type has records
 * enough. With statistics from before a type's records were written, PostgreSQL takes the type for
 * an empty one and looks a sync's records up by reading every record of it, slower with every
 * record the type gains until the next ANALYZE. Autovacuum takes them too, but looks only every autovacuum_naptime (a minute), and an
 * import writes hundreds of thousands of records in a minute. One ANALYZE once a type has some
 * records is enough: the planner scales what the statistics say by the table's size as it grows.
 *
 * <p>Once per type and instance, after {@link #ANALYZE_AFTER} records this instance created in
 * it, on a thread of its own (an ANALYZE samples 30,000 rows: a few hundred milliseconds). Nothing
 * on H2, whose planner does not go by such statistics here.
 */
final class RecordStatistics {
  private static final Logger LOG = LoggerFactory.getLogger(RecordStatistics.class);
  static final int ANALYZE_AFTER = 1_000;
  /** Types counted; past it the counting starts afresh (a type may then be analyzed once more). */
  private static final int MAX_TYPES = 100_000;
  /** Records created per workspace and type since this instance started; -1 once analyzed. */
  private final Map<String, Integer> created = new ConcurrentHashMap<>();
  private final Jdbi jdbi;
  /**
   * One ANALYZE at a time and one more waiting, which covers every type asked for meanwhile (it
   * starts after their records were committed); further asks are dropped.
   */
  private final ThreadPoolExecutor analyzer = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS,
      new ArrayBlockingQueue<>(1), r -> {
        Thread t = new Thread(r, "runway-crm-analyze");
        t.setDaemon(true);
        return t;
      }, new ThreadPoolExecutor.DiscardPolicy());
  private final boolean postgres;

  RecordStatistics(Jdbi jdbi, boolean postgres) {
    this.jdbi = jdbi;
    this.postgres = postgres;
  }

  /** A commit created {@code n} records of {@code type} in {@code ws}. */
  void created(String ws, String type, int n) {
    if (n == 0 || !postgres) {
      return;
    }
    if (created.size() >= MAX_TYPES) {
      created.clear();
    }
    String key = ws + '\n' + type;
    int now = created.merge(key, n, (before, more) -> before < 0 ? before : before + more);
    if (now >= ANALYZE_AFTER && created.replace(key, now, -1)) {
      analyzer.execute(this::analyze);
    }
  }

  private void analyze() {
    long started = System.nanoTime();
    try {
      jdbi.useHandle(h -> h.execute("ANALYZE crm_record"));
      LOG.debug("analyzed crm_record in {} ms", (System.nanoTime() - started) / 1_000_000);
    } catch (RuntimeException e) {
      LOG.warn("could not ANALYZE crm_record (PostgreSQL may look CRM records up slowly until autovacuum does): {}",
          e.getMessage());
    }
  }
}
