package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A 200 means committed: the packaged jar is stopped in the middle of a load of run starts (group
 * commits in flight), by SIGKILL five times over and by SIGTERM, restarted, and every acknowledged
 * run must be there.
 */
class KillNineIT {
  private static final int THREADS = 8;
  private static final int MIN_RUNS_PER_ROUND = 20;
  private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  @BothDatabases
  void every_acknowledged_run_survives_kill_9_five_times_over(TestDatabase db) throws Exception {
    Server s = server(db);
    List<String> acked = Collections.synchronizedList(new ArrayList<>());
    try {
      for (int round = 1; round <= 5; round++) {
        s.process.start();
        int atStart = acked.size();
        Load load = new Load(s.process.base(), s.key, acked);
        // Until the load runs (a loaded machine may take longer than the usual second), then a while.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (acked.size() < atStart + MIN_RUNS_PER_ROUND && System.nanoTime() < deadline) {
          Thread.sleep(20);
        }
        Thread.sleep(ThreadLocalRandom.current().nextLong(300, 1500));
        int beforeKill = acked.size();
        s.process.kill9();
        load.stop();
        assertTrue(beforeKill >= atStart + MIN_RUNS_PER_ROUND, "round " + round + ": " + (beforeKill - atStart)
            + " runs acknowledged before the kill came");
      }
      s.process.start();
      List<String> missing = missing(s, acked);
      System.out.printf("kill -9 x5 on %s: %d runs acknowledged, %d missing after restart%n",
          db.label(), acked.size(), missing.size());
      assertTrue(acked.size() > 100, "enough load to mean something: " + acked.size());
      assertEquals(List.of(), missing, "acknowledged runs lost by kill -9");
    } finally {
      s.process.stop();
    }
  }

  @BothDatabases
  void sigterm_under_load_exits_0_in_time_and_loses_nothing(TestDatabase db) throws Exception {
    Server s = server(db);
    List<String> acked = Collections.synchronizedList(new ArrayList<>());
    try {
      s.process.start();
      Load load = new Load(s.process.base(), s.key, acked);
      // Until the load runs (a loaded machine may take longer than the usual second and a half).
      long loadDeadline = System.nanoTime() + java.time.Duration.ofSeconds(30).toNanos();
      while (acked.size() <= 20 && System.nanoTime() < loadDeadline) {
        Thread.sleep(100);
      }
      Thread.sleep(500);
      long t0 = System.nanoTime();
      int exit = s.process.terminate(20);
      long ms = (System.nanoTime() - t0) / 1_000_000;
      load.stop();
      assertEquals(0, exit, "exit code after SIGTERM (-1: still running after 20 s)\n" + s.process.log());
      assertTrue(s.process.log().contains("stopped cleanly"), "the stop ran to its end:\n" + s.process.log());
      assertTrue(ms < 15_000, "stopped in " + ms + " ms");
      s.process.start();
      List<String> missing = missing(s, acked);
      System.out.printf("SIGTERM on %s: stopped in %d ms with exit 0; %d runs acknowledged, %d missing%n",
          db.label(), ms, acked.size(), missing.size());
      assertTrue(acked.size() > 20, "the load was running: " + acked.size());
      assertEquals(List.of(), missing, "acknowledged runs lost by SIGTERM");
    } finally {
      s.process.stop();
    }
  }

  private record Server(RunwayProcess process, String key) {}

  private static Server server(TestDatabase db) throws Exception {
    RunwayProcess process = RunwayProcess.onFreshDatabase(db, Map.of(), "runway-stop-");
    // The keys command works on the database before the server has ever run.
    String key = process.command("keys", "create", "--workspace", "default", "--scopes", "runs:write,runs:read",
        "--name", "stop-test").trim();
    assertTrue(key.matches("wsk_[0-9A-Za-z]{40}"), key);
    return new Server(process, key);
  }

  /**
   * The acknowledged runs that cannot be read back. The reads go as fast as one client goes, past
   * the key's rate limit (1,000/s, bursts of 2,000) when there are thousands: a 429 is waited out as
   * its Retry-After says and the read made again.
   */
  private List<String> missing(Server s, List<String> acked) throws Exception {
    List<String> missing = new ArrayList<>();
    for (String id : List.copyOf(acked)) {
      HttpRequest read = HttpRequest.newBuilder(URI.create(s.process.base() + "/v1/runs/" + id))
          .header("Authorization", "Bearer " + s.key).build();
      HttpResponse<String> r = client.send(read, HttpResponse.BodyHandlers.ofString());
      for (int tries = 0; r.statusCode() == 429 && tries < 30; tries++) {
        Thread.sleep(1000L * Long.parseLong(r.headers().firstValue("Retry-After").orElse("1")));
        r = client.send(read, HttpResponse.BodyHandlers.ofString());
      }
      if (r.statusCode() != 200) {
        missing.add(id + " (" + r.statusCode() + ")");
      } else {
        assertEquals(id, Json.tree(r.body()).get("id").asText());
      }
    }
    return missing;
  }

  /**
   * THREADS clients starting runs until stopped, recording every 200's run id. A failed request (the
   * server gone, or a timeout on a loaded machine) is tried again after a moment until stopped.
   */
  private final class Load {
    private final ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    private volatile boolean running = true;

    Load(String base, String key, List<String> acked) {
      for (int t = 0; t < THREADS; t++) {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/v1/workflows/hello/runs"))
            .timeout(Duration.ofSeconds(5))
            .header("Authorization", "Bearer " + key)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString("{\"project\":\"load-" + t + "\"}"))
            .build();
        pool.submit(() -> {
          while (running) {
            try {
              HttpResponse<String> r = client.send(request, HttpResponse.BodyHandlers.ofString());
              if (r.statusCode() == 200) {
                acked.add(Json.tree(r.body()).get("id").asText());
              }
            } catch (Exception e) {
              try {
                Thread.sleep(20);
              } catch (InterruptedException interrupted) {
                return;
              }
            }
          }
        });
      }
    }

    void stop() throws InterruptedException {
      running = false;
      pool.shutdown();
      assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
    }
  }
}
