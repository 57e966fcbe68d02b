package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.LoadUntilKilled;
import dev.runway.support.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * A 200 means committed: the packaged jar is stopped in the middle of a load of run starts (group
 * commits in flight), by SIGKILL five times over and by SIGTERM, restarted, and every acknowledged
 * run must be there.
 */
class KillNineIT {
  private static final int THREADS = 8;
  private static final int MIN_RUNS_PER_ROUND = 20;

  @BothDatabases
  void every_acknowledged_run_survives_kill_9_five_times_over(TestDatabase db) throws Exception {
    Server s = server(db);
    List<String> acked = Collections.synchronizedList(new ArrayList<>());
    try {
      for (int round = 1; round <= 5; round++) {
        s.process.start();
        int atStart = acked.size();
        LoadUntilKilled load = load(s, acked);
        load.runUntil(() -> acked.size() >= atStart + MIN_RUNS_PER_ROUND, 300, 1500);
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
      LoadUntilKilled load = load(s, acked);
      load.runUntil(() -> acked.size() > 20, 500, 500);
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
    return new Server(process, process.createKey("runs:write,runs:read", "stop-test"));
  }

  /**
   * The acknowledged runs that cannot be read back. The reads go as fast as one client goes, past
   * the key's rate limit (1,000/s, bursts of 2,000) when there are thousands: a 429 is waited out as
   * its Retry-After says and the read made again.
   */
  private List<String> missing(Server s, List<String> acked) throws Exception {
    List<String> missing = new ArrayList<>();
    Http http = s.process.http(s.key);
    for (String id : List.copyOf(acked)) {
      Http.Reply r = http.get("/v1/runs/" + id);
      for (int tries = 0; r.status() == 429 && tries < 30; tries++) {
        String retryAfter = r.header("Retry-After");
        Thread.sleep(1000L * Long.parseLong(retryAfter == null ? "1" : retryAfter));
        r = http.get("/v1/runs/" + id);
      }
      if (r.status() != 200) {
        missing.add(id + " (" + r.status() + ")");
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
  private static LoadUntilKilled load(Server s, List<String> acked) {
    Http http = s.process.http(s.key).timeout(Duration.ofSeconds(5));
    return new LoadUntilKilled(THREADS, client -> {
      try {
        Http.Reply r = http.post("/v1/workflows/hello/runs", "{\"project\":\"load-" + client + "\"}");
        if (r.status() == 200) {
          acked.add(Json.tree(r.body()).get("id").asText());
        }
      } catch (RuntimeException failed) {
        Thread.sleep(20);
      }
    });
  }
}
