import dev.runway.db.Database;
import dev.runway.db.DatabaseSettings;
import dev.runway.run.Event;
import dev.runway.run.EventDao;
import dev.runway.run.Run;
import dev.runway.run.RunDao;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The floor of bench/cpu.py: the CPU that storing a start's rows takes, with nothing else. What a
 * start of a workflow without steps stores (the run, its run.started and run.succeeded events),
 * written through Runway's own database set-up (its schema and indexes, H2's settings, the pool)
 * and group commit (the workspace's lock on PostgreSQL, one writer), 32 starts a commit: the most
 * that wrk's 32 connections can have waiting, so the fewest commits a start can share. No HTTP, no
 * JSON, no key, no webhook check, one caller to wake a commit. Loads for WARM seconds, then measures SECONDS:
 * prints
 *
 *   RESULT starts seconds jvm_cpu_seconds postgres_cpu_seconds
 *
 * the last being the CPU of every process named postgres over the same window (0 on H2).
 *
 *   java -cp target/runway.jar bench/StartFloor.java JDBC_URL USER WARM SECONDS
 */
public class StartFloor {
  /** Starts a commit: as many as wrk's 32 connections can have waiting, the group commit's best case. */
  static final int BATCH = 32;
  static final long TICKS = 100; // USER_HZ, as on Linux

  public static void main(String[] args) throws Exception {
    String url = args[0];
    int warm = Integer.parseInt(args[2]);
    int seconds = Integer.parseInt(args[3]);
    Database db = Database.open(new DatabaseSettings(url, args[1], "", 10, 5000));
    AtomicLong starts = new AtomicLong();
    String prefix = Long.toString(System.nanoTime(), 36);
    Thread writer = new Thread(() -> {
      for (long i = 0; ; i += BATCH) {
        long first = i;
        db.committer().commit("bench", tx -> {
          Instant now = Instant.now();
          for (long n = first; n < first + BATCH; n++) {
            String id = "run_" + prefix + "_" + n;
            RunDao.insert(tx, new Run(id, "bench", Run.WORKFLOW, "noop", null, "bench", "succeeded", false,
                "{\"order\":\"A-1001\",\"amount\":4200}", now, now, now, null, null,
                "{\"requires_approval\":false,\"steps\":[]}", "[]", 0, null, null, null, 1, null, null, null, null, null));
            EventDao.insert(tx, List.of(
                new Event(null, "evt_" + prefix + "_" + n + "a", "bench", id, "noop", null, "bench", "run.started",
                    "key_01m8ggx9c10kv149dyrynj9q4z", null, null, "{\"status\":\"running\"}", now),
                new Event(null, "evt_" + prefix + "_" + n + "b", "bench", id, "noop", null, "bench", "run.succeeded",
                    "engine", null, null, "{}", now)));
          }
          return null;
        });
        starts.addAndGet(BATCH);
      }
    }, "floor");
    writer.setDaemon(true);
    writer.start();
    Thread.sleep(warm * 1000L);
    var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    long n0 = starts.get();
    long cpu0 = os.getProcessCpuTime();
    double pg0 = postgresCpuSeconds();
    long t0 = System.nanoTime();
    Thread.sleep(seconds * 1000L);
    long n1 = starts.get();
    long cpu1 = os.getProcessCpuTime();
    double pg1 = postgresCpuSeconds();
    double elapsed = (System.nanoTime() - t0) / 1e9;
    System.out.printf("RESULT %d %.3f %.3f %.3f%n", n1 - n0, elapsed, (cpu1 - cpu0) / 1e9,
        url.startsWith("jdbc:postgresql:") ? pg1 - pg0 : 0.0);
    System.out.flush();
    Runtime.getRuntime().halt(0); // the writers never end; the database is thrown away
  }

  /** CPU time of every process named postgres (the server and its back-ends, exited ones included). */
  static double postgresCpuSeconds() throws Exception {
    double total = 0;
    try (var procs = Files.newDirectoryStream(Path.of("/proc"), p -> p.getFileName().toString().matches("\\d+"))) {
      for (Path p : procs) {
        try {
          String stat = Files.readString(p.resolve("stat"));
          int end = stat.lastIndexOf(')');
          if (!stat.substring(0, end).endsWith("(postgres")) {
            continue;
          }
          String[] f = stat.substring(end + 2).split(" ");
          total += (Long.parseLong(f[11]) + Long.parseLong(f[12]) + Long.parseLong(f[13]) + Long.parseLong(f[14]))
              / (double) TICKS;
        } catch (Exception gone) {
          // a process that ended meanwhile
        }
      }
    }
    return total;
  }
}
