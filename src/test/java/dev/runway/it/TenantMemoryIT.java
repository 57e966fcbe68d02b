package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import dev.runway.support.ToolServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * One tenant must not run the heap out for everyone. The shipped server (128 MB heap, 64 MB of it
 * old generation) takes 5,000 rounds of "put a new 60 KB workflow (100 http steps with long URLs and
 * an approval gate), start a run of it": every answer is a 200, /readyz still answers 200, and the
 * heap after a full collection is back near where it was before the rounds. With caches bounded by
 * entry count it died of OutOfMemoryError after about 1,050 rounds.
 */
class TenantMemoryIT {
  private static final int ROUNDS = 5_000;
  private static final int THREADS = 4;
  /** What caches bounded by weight may hold at most (about 12 MB in all), plus slack for H2's own. */
  private static final long ALLOWED_GROWTH_KB = 24 * 1024;
  private static final Pattern TOTAL = Pattern.compile("(?m)^Total\\s+\\d+\\s+(\\d+)\\s*$");

  @Test
  void five_thousand_new_60_kb_workflows_each_with_a_run_leave_the_heap_as_it_was() throws Exception {
    RunwayProcess server = RunwayProcess.onFreshDatabase(TestDatabase.H2,
        Map.of("RUNWAY_RATELIMIT_PER_KEY_PER_SECOND", "0", "RUNWAY_ENGINE_ENABLED", "false",
            // one workspace with thousands of workflows: the churn of definitions is what is measured
            "RUNWAY_QUOTAS_WORKFLOWS_PER_WORKSPACE", "0"), "runway-heap-");
    String key = server.command("keys", "create", "--workspace", "default", "--name", "tenant").trim();
    Http api = server.http(key);
    try {
      server.start();
      rounds(api, 0, 200); // classes loaded, code compiled, pools filled
      long before = liveHeapKb(server);
      long t0 = System.nanoTime();
      rounds(api, 200, 200 + ROUNDS);
      long seconds = (System.nanoTime() - t0) / 1_000_000_000L;
      long after = liveHeapKb(server);
      System.out.printf("%d rounds of a new 60 KB workflow and a run in %d s: live heap %d KB before, %d KB after%n",
          ROUNDS, seconds, before, after);
      Http.Reply ready = api.get("/readyz", null);
      assertEquals(200, ready.status(), ready.body());
      assertTrue(after - before < ALLOWED_GROWTH_KB, "live heap grew from " + before + " KB to " + after + " KB");
    } finally {
      server.stop();
    }
  }

  /**
   * Calls in flight hold memory: 400 runs whose first three steps bring 64 KB outputs each, then wait
   * on a tool that hangs, would hold about 450 KB each in flight (the run, a request carrying the
   * outputs, room for the answer): 180 MB, more than the heap. Calls in flight are bounded by the
   * memory they hold too, so the server stays up and ready, and only some of them wait at once.
   */
  @Test
  void four_hundred_runs_with_large_outputs_waiting_on_a_hanging_tool_leave_the_server_up() throws Exception {
    try (ToolServer tool = ToolServer.start()) {
      tool.script("/big", ToolServer.Reply.json(200, "{\"blob\":\"" + "b".repeat(64_000) + "\"}"));
      tool.script("/hang", ToolServer.Reply.json(200, "{}").after(Duration.ofSeconds(20)));
      RunwayProcess server = RunwayProcess.onFreshDatabase(TestDatabase.H2, Map.of(
          "RUNWAY_RATELIMIT_PER_KEY_PER_SECOND", "0", "RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS", "true"),
          "runway-heap-calls-");
      String key = server.command("keys", "create", "--workspace", "default", "--name", "heavy").trim();
      Http api = server.http(key);
      try {
        server.start();
        String step = "{\"type\":\"http\",\"url\":\"" + tool.url("/big") + "\",\"max_attempts\":1}";
        String hang = "{\"type\":\"http\",\"url\":\"" + tool.url("/hang") + "\",\"timeout_ms\":60000}";
        Http.Reply put = api.put("/v1/workflows/heavy", "{\"steps\":[" + step + "," + step + "," + step + "," + hang + "]}");
        assertEquals(201, put.status(), put.body());
        long before = liveHeapKb(server);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        List<Future<Integer>> starts = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
          starts.add(pool.submit(() -> api.post("/v1/workflows/heavy/runs", "{\"project\":\"p\"}").status()));
        }
        for (Future<Integer> f : starts) {
          assertEquals(200, f.get(60, TimeUnit.SECONDS));
        }
        pool.shutdown();
        // Until as many calls wait as will (no new one for two seconds), 15 s at most.
        long until = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        long quietSince = System.nanoTime();
        for (int seen = 0; System.nanoTime() < until && System.nanoTime() - quietSince < 2_000_000_000L; ) {
          Thread.sleep(100);
          if (tool.peakConcurrency() != seen || seen == 0) {
            seen = tool.peakConcurrency();
            quietSince = System.nanoTime();
          }
        }
        long during = liveHeapKb(server);
        int waiting = tool.peakConcurrency();
        System.out.printf("400 runs with 3 x 64 KB outputs waiting on a hanging tool: %d calls waiting at most, "
            + "%d of 1200 large steps done, live heap %d KB before, %d KB while they wait%n", waiting,
            tool.calls("/big").size(), before, during);
        Http.Reply ready = api.get("/readyz", null);
        assertEquals(200, ready.status(), ready.body());
        assertFalse(server.logged("OutOfMemoryError"), server.log());
        assertTrue(waiting > 10 && waiting < 150, "calls waiting at once, bounded by their memory: " + waiting);
        // Unbounded, these calls would hold about 180 MB; bounded, the live heap grows by what the
        // calls in flight may hold (16 MB of estimates for one workspace) and what H2 keeps, 25-40 MB.
        assertTrue(during - before < 64 * 1024, "live heap grew from " + before + " KB to " + during + " KB");
      } finally {
        server.stop();
      }
    }
  }

  /** Rounds from..to on THREADS threads; each must answer 200 (put) then 200 (start). */
  private static void rounds(Http api, int from, int to) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    AtomicInteger next = new AtomicInteger(from);
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      workers.add(pool.submit(() -> {
        for (int i = next.getAndIncrement(); i < to; i = next.getAndIncrement()) {
          String id = "tenant-" + i;
          Http.Reply put = api.put("/v1/workflows/" + id, definition(i));
          assertTrue(put.status() == 201, () -> "put " + id + ": " + put.status() + " " + put.body());
          Http.Reply run = api.post("/v1/workflows/" + id + "/runs", "{\"project\":\"p\"}");
          assertEquals(200, run.status(), () -> "run of " + id + ": " + run.body());
        }
        return null;
      }));
    }
    try {
      for (Future<?> w : workers) {
        w.get();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** A workflow of about 60 KB that differs from every other: 100 http steps with long URLs behind an approval gate. */
  static String definition(int round) {
    StringBuilder steps = new StringBuilder();
    for (int s = 0; s < 100; s++) {
      steps.append(s == 0 ? "" : ",").append("{\"type\":\"http\",\"url\":\"https://tools-").append(round)
          .append(".example.com/").append("p".repeat(550)).append('/').append(s).append("\"}");
    }
    String body = "{\"name\":\"Tenant " + round + "\",\"requires_approval\":true,\"steps\":[" + steps + "]}";
    if (body.length() > 65_000 || body.length() < 58_000) {
      throw new IllegalStateException("definition of " + body.length() + " bytes");
    }
    return body;
  }

  /**
   * The server's live heap in KB: what jcmd's class histogram counts, which it takes right after a
   * full collection of its own. (GC.heap_info after GC.run also counted what the young generation
   * gathered between the two commands, H2's housekeeping allocating all the while: up to 20 MB more.)
   */
  private static long liveHeapKb(RunwayProcess server) throws IOException, InterruptedException {
    String histogram = jcmd(server.pid(), "GC.class_histogram");
    Matcher m = TOTAL.matcher(histogram);
    if (!m.find()) {
      throw new IllegalStateException("cannot read the live heap from jcmd's answer:\n"
          + histogram.substring(Math.max(0, histogram.length() - 2000)));
    }
    return Long.parseLong(m.group(1)) / 1024;
  }

  private static String jcmd(long pid, String command) throws IOException, InterruptedException {
    Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
    Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IllegalStateException("jcmd " + command + " failed: " + out);
    }
    return out;
  }
}
