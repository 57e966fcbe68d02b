package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.TestDatabase;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
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
  /** What caches bounded by weight may hold at most (about 12 MB in all), plus slack. */
  private static final long ALLOWED_GROWTH_KB = 24 * 1024;
  private static final Pattern USED = Pattern.compile("(def new generation|tenured generation)\\s+total \\d+K, used (\\d+)K");

  private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @Test
  void five_thousand_new_60_kb_workflows_each_with_a_run_leave_the_heap_as_it_was() throws Exception {
    RunwayProcess server = RunwayProcess.onFreshDatabase(TestDatabase.H2,
        Map.of("RUNWAY_RATELIMIT_PER_KEY_PER_SECOND", "0", "RUNWAY_ENGINE_ENABLED", "false"), "runway-heap-");
    String key = server.command("keys", "create", "--workspace", "default", "--name", "tenant").trim();
    try {
      server.start();
      rounds(server, key, 0, 200); // classes loaded, code compiled, pools filled
      long before = liveHeapKb(server);
      long t0 = System.nanoTime();
      rounds(server, key, 200, 200 + ROUNDS);
      long seconds = (System.nanoTime() - t0) / 1_000_000_000L;
      long after = liveHeapKb(server);
      System.out.printf("%d rounds of a new 60 KB workflow and a run in %d s: live heap %d KB before, %d KB after%n",
          ROUNDS, seconds, before, after);
      HttpResponse<String> ready = client.send(HttpRequest.newBuilder(URI.create(server.base() + "/readyz")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(200, ready.statusCode(), ready.body());
      assertTrue(after - before < ALLOWED_GROWTH_KB, "live heap grew from " + before + " KB to " + after + " KB");
    } finally {
      server.stop();
    }
  }

  /** Rounds from..to on THREADS threads; each must answer 200 (put) then 200 (start). */
  private void rounds(RunwayProcess server, String key, int from, int to) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    AtomicInteger next = new AtomicInteger(from);
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      workers.add(pool.submit(() -> {
        for (int i = next.getAndIncrement(); i < to; i = next.getAndIncrement()) {
          String id = "tenant-" + i;
          HttpResponse<String> put = send(server, key, "PUT", "/v1/workflows/" + id, definition(i));
          assertTrue(put.statusCode() == 201, () -> "put " + id + ": " + put.statusCode() + " " + put.body());
          HttpResponse<String> run = send(server, key, "POST", "/v1/workflows/" + id + "/runs", "{\"project\":\"p\"}");
          assertEquals(200, run.statusCode(), () -> "run of " + id + ": " + run.body());
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

  private HttpResponse<String> send(RunwayProcess server, String key, String method, String path, String body)
      throws IOException, InterruptedException {
    HttpRequest request = HttpRequest.newBuilder(URI.create(server.base() + path))
        .header("Authorization", "Bearer " + key).header("Content-Type", "application/json")
        .method(method, HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8))
        .timeout(Duration.ofSeconds(30)).build();
    return client.send(request, HttpResponse.BodyHandlers.ofString());
  }

  /** The server's heap in use right after a full collection (jcmd GC.run, then GC.heap_info), in KB. */
  private static long liveHeapKb(RunwayProcess server) throws IOException, InterruptedException {
    jcmd(server.pid(), "GC.run");
    String info = jcmd(server.pid(), "GC.heap_info");
    Matcher m = USED.matcher(info);
    long used = 0;
    int found = 0;
    while (m.find()) {
      used += Long.parseLong(m.group(2));
      found++;
    }
    if (found != 2) {
      throw new IllegalStateException("cannot read the heap from jcmd's answer:\n" + info);
    }
    return used;
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
