package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.config.Settings;
import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * A 200 means committed: the packaged jar is killed with SIGKILL in the middle of a load of
 * run starts, restarted, and every acknowledged run must be there.
 */
class KillNineIT {
  private static final int THREADS = 8;

  @BothDatabases
  void every_acknowledged_run_survives_kill_9(TestDatabase db) throws Exception {
    Settings fresh = db.settingsForFreshDatabase();
    String url = fresh.asMap().get("db.url") + (db == TestDatabase.H2 ? ";AUTO_SERVER=TRUE" : "");
    Path workDir = Files.createTempDirectory("runway-kill9-");
    Map<String, String> env = Map.of(
        "RUNWAY_DB_URL", url,
        "RUNWAY_DB_USER", fresh.asMap().get("db.user"),
        "RUNWAY_DB_PASSWORD", fresh.asMap().get("db.password"),
        "RUNWAY_WORKFLOWS_DIR", Path.of("config/workflows").toAbsolutePath().toString());
    RunwayProcess server = new RunwayProcess(env, workDir);
    // The keys command works on the database before the server has ever run.
    String key = server.command("keys", "create", "--workspace", "default", "--scopes", "runs:write,runs:read",
        "--name", "kill9").trim();
    assertTrue(key.matches("wsk_[0-9A-Za-z]{40}"), key);

    List<String> acked = Collections.synchronizedList(new ArrayList<>());
    try {
      server.start();
      HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
      ExecutorService load = Executors.newFixedThreadPool(THREADS);
      long stopAt = System.nanoTime() + Duration.ofSeconds(6).toNanos();
      for (int t = 0; t < THREADS; t++) {
        int thread = t;
        load.submit(() -> post(client, server.base(), key, thread, stopAt, acked));
      }
      Thread.sleep(ThreadLocalRandom.current().nextLong(1500, 3000));
      int ackedBeforeKill = acked.size();
      server.kill9();
      load.shutdown();
      assertTrue(load.awaitTermination(30, TimeUnit.SECONDS));
      assertTrue(ackedBeforeKill > 50, "the load was running when the kill came: " + ackedBeforeKill);

      server.start();
      List<String> missing = new ArrayList<>();
      for (String id : acked) {
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(server.base() + "/v1/runs/" + id))
            .header("Authorization", "Bearer " + key).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
          missing.add(id + " (" + r.statusCode() + ")");
        } else {
          assertEquals(id, Json.tree(r.body()).get("id").asText());
        }
      }
      System.out.printf("kill -9 on %s: %d runs acknowledged, %d missing after restart%n",
          db.label(), acked.size(), missing.size());
      assertEquals(List.of(), missing, "acknowledged runs lost by kill -9");
    } finally {
      server.stop();
    }
  }

  private static void post(HttpClient client, String base, String key, int thread, long stopAt, List<String> acked) {
    HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/v1/workflows/hello/runs"))
        .timeout(Duration.ofSeconds(5))
        .header("Authorization", "Bearer " + key)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"project\":\"load-" + thread + "\"}"))
        .build();
    while (System.nanoTime() < stopAt) {
      try {
        HttpResponse<String> r = client.send(request, HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200) {
          acked.add(Json.tree(r.body()).get("id").asText());
        }
      } catch (Exception serverGone) {
        return;
      }
    }
  }
}
