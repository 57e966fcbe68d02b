package dev.runway.it;

import dev.runway.support.TempFiles;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.runway.config.Settings;
import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The engine's state is in the database: the packaged jar is killed with SIGKILL in the middle of
 * a run (during a durable delay, and during an http call), restarted, and the run finishes.
 */
class EngineRestartIT {
  @BothDatabases
  void run_goes_on_after_kill_9_during_a_delay_and_during_a_call(TestDatabase db) throws Exception {
    List<String> calls = new CopyOnWriteArrayList<>();
    HttpServer tool = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    tool.setExecutor(Executors.newFixedThreadPool(4));
    tool.createContext("/", exchange -> {
      String path = exchange.getRequestURI().getPath();
      calls.add(path + " " + exchange.getRequestHeaders().getFirst("Idempotency-Key"));
      if (path.equals("/slow") && calls.stream().filter(c -> c.startsWith("/slow")).count() == 1) {
        sleep(30_000); // the first call hangs until the server that made it is killed
      }
      answerOk(exchange);
    });
    tool.start();
    String toolBase = "http://127.0.0.1:" + tool.getAddress().getPort();

    RunwayProcess server = engineServer(db.settingsForFreshDatabase(), "runway-engine-restart-");
    String key = server.command("keys", "create", "--workspace", "ops", "--name", "restart").trim();
    Http api = server.http(key);
    try {
      server.start();
      put(api, "timer", "[{\"type\":\"delay\",\"seconds\":3},{\"type\":\"http\",\"url\":\"" + toolBase + "/after-delay\"}]");
      put(api, "hang", "[{\"type\":\"http\",\"url\":\"" + toolBase + "/slow\",\"timeout_ms\":2000,\"max_attempts\":3}]");
      String timerRun = start(api, "timer");
      String hangRun = start(api, "hang");
      awaitStep(api, timerRun, 0, "waiting");
      awaitStep(api, hangRun, 0, "running");

      server.kill9();
      server.start();

      JsonNode timer = awaitTerminal(server, api, timerRun);
      assertEquals("succeeded", timer.get("status").asText(), timer::toString);
      assertTrue(calls.contains("/after-delay " + timerRun + ":1"), calls::toString);
      JsonNode hang = awaitTerminal(server, api, hangRun);
      assertEquals("succeeded", hang.get("status").asText(), hang::toString);
      long slowCalls = calls.stream().filter(c -> c.equals("/slow " + hangRun + ":0")).count();
      assertTrue(slowCalls >= 2, "the call cut off by the kill was made again with the same key: " + calls);
    } finally {
      server.stop();
      tool.stop(0);
    }
  }

  /**
   * A child run across a SIGKILL: the jar is killed while the child's call is out; after the restart
   * the child's call is made again with its key, the parent's step completes in the child's final
   * commit, and the parent's next call is made once. One child run exists.
   */
  @BothDatabases
  void a_child_run_and_its_parent_go_on_after_kill_9_during_the_childs_call(TestDatabase db) throws Exception {
    List<String> calls = new CopyOnWriteArrayList<>();
    HttpServer tool = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    tool.setExecutor(Executors.newFixedThreadPool(4));
    tool.createContext("/", exchange -> {
      String path = exchange.getRequestURI().getPath();
      calls.add(path + " " + exchange.getRequestHeaders().getFirst("Idempotency-Key"));
      if (path.equals("/child") && calls.stream().filter(c -> c.startsWith("/child")).count() == 1) {
        sleep(30_000); // the first call hangs until the server that made it is killed
      }
      answerOk(exchange);
    });
    tool.start();
    String toolBase = "http://127.0.0.1:" + tool.getAddress().getPort();
    RunwayProcess server = engineServer(db.settingsForFreshDatabase(), "runway-child-restart-");
    String key = server.command("keys", "create", "--workspace", "ops", "--name", "children").trim();
    Http api = server.http(key);
    try {
      server.start();
      put(api, "inner", "[{\"type\":\"http\",\"url\":\"" + toolBase + "/child\",\"timeout_ms\":2000,\"max_attempts\":3}]");
      put(api, "outer", "[{\"type\":\"workflow\",\"workflow\":\"inner\"},{\"type\":\"http\",\"url\":\"" + toolBase
          + "/after\"}]");
      String parent = start(api, "outer");
      awaitStep(api, parent, 0, "running");
      String child = get(api, parent).get("steps").get(0).get("child_run_id").asText();
      awaitStep(api, child, 0, "running");

      server.kill9();
      server.start();

      JsonNode done = awaitTerminal(server, api, parent);
      assertEquals("succeeded", done.get("status").asText(), done::toString);
      assertEquals("succeeded", get(api, child).get("status").asText());
      assertTrue(calls.stream().filter(c -> c.equals("/child " + child + ":0")).count() >= 2,
          "the child's call cut off by the kill was made again with the same key: " + calls);
      assertEquals(1, calls.stream().filter(c -> c.equals("/after " + parent + ":1")).count(), calls::toString);
      assertEquals(1, Json.tree(api.get("/v1/runs?parent_run_id=" + parent).body()).get("data").size());
    } finally {
      server.stop();
      tool.stop(0);
    }
  }

  /**
   * A foreach across a SIGKILL: the jar is killed while 5 of its 20 iterations have their calls out
   * (the tool holds every call until then); after the restart every iteration's call is made once
   * per Idempotency-Key (those cut off again, with their key), and the step's output is in item order.
   */
  @BothDatabases
  void a_foreach_goes_on_after_kill_9_with_each_iterations_call_made_once_per_key(TestDatabase db) throws Exception {
    List<String> after = new CopyOnWriteArrayList<>();
    java.util.concurrent.atomic.AtomicBoolean killed = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.atomic.AtomicInteger held = new java.util.concurrent.atomic.AtomicInteger();
    HttpServer tool = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    tool.setExecutor(Executors.newFixedThreadPool(16));
    tool.createContext("/", exchange -> {
      String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
      if (!killed.get()) {
        held.incrementAndGet();
        sleep(30_000); // held until the server that made the call is killed
        exchange.close();
        return;
      }
      after.add(key);
      byte[] body = ("{\"key\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    tool.start();
    String toolUrl = "http://127.0.0.1:" + tool.getAddress().getPort() + "/item";
    RunwayProcess server = engineServer(db.settingsForFreshDatabase(), "runway-foreach-restart-");
    String key = server.command("keys", "create", "--workspace", "ops", "--name", "foreach").trim();
    Http api = server.http(key);
    try {
      server.start();
      Http.Reply put = api.put("/v1/workflows/each", "{\"steps\":[{\"id\":\"each\",\"type\":\"foreach\","
          + "\"items\":\"inputs.items\",\"concurrency\":5,\"steps\":[{\"id\":\"call\",\"type\":\"http\",\"url\":\""
          + toolUrl + "\",\"timeout_ms\":60000,\"max_attempts\":3,\"body\":{\"n\":\"{{ item }}\"}}]}]}");
      assertEquals(201, put.status(), put.body());
      StringBuilder items = new StringBuilder();
      for (int i = 0; i < 20; i++) {
        items.append(i == 0 ? "" : ",").append(i);
      }
      Http.Reply started = api.post("/v1/workflows/each/runs", "{\"project\":\"p\",\"inputs\":{\"items\":[" + items + "]}}");
      assertEquals(200, started.status(), started.body());
      String run = Json.tree(started.body()).get("id").asText();
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (held.get() < 5 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(5, held.get(), "5 calls out at once (concurrency 5)");

      server.kill9();
      killed.set(true);
      server.start();

      JsonNode done = awaitTerminal(server, api, run);
      assertEquals("succeeded", done.get("status").asText(), done::toString);
      JsonNode output = done.get("steps").get(0).get("output");
      assertEquals(20, output.size());
      java.util.Set<String> expected = new java.util.HashSet<>();
      for (int i = 0; i < 20; i++) {
        expected.add(run + ":each[" + i + "].call");
        assertEquals(run + ":each[" + i + "].call", output.get(i).get("key").asText(), "outputs in item order");
      }
      assertEquals(expected, new java.util.HashSet<>(after), after::toString);
      assertEquals(20, after.size(), "each iteration's call made once per key after the restart: " + after);
    } finally {
      killed.set(true);
      server.stop();
      tool.stop(0);
    }
  }

  /**
   * SIGTERM while a step is running: the stop waits for the step, records its outcome, closes the
   * database and only then exits 0. The JVM runs a signal handler on a daemon thread and Runway's
   * threads are daemons too, so once the HTTP server had stopped, the JVM used to exit in the middle
   * of the stop. (Javalin keeps one thread that is not a daemon for its first 5 s, to warn about an
   * app never started, which hid this from a SIGTERM that came early.)
   */
  @BothDatabases
  void sigterm_lets_a_running_step_finish_and_closes_the_database_before_exit(TestDatabase db) throws Exception {
    List<String> calls = new CopyOnWriteArrayList<>();
    CountDownLatch answer = new CountDownLatch(1);
    HttpServer tool = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    tool.setExecutor(Executors.newFixedThreadPool(2));
    tool.createContext("/", exchange -> {
      calls.add(exchange.getRequestURI().getPath());
      try {
        answer.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      answerOk(exchange);
    });
    tool.start();
    Settings fresh = db.settingsForFreshDatabase();
    RunwayProcess server = engineServer(fresh, "runway-engine-sigterm-");
    String key = server.command("keys", "create", "--workspace", "ops", "--name", "sigterm").trim();
    Http api = server.http(key);
    try {
      server.start();
      long started = System.nanoTime();
      put(api, "slow", "[{\"type\":\"http\",\"url\":\"http://127.0.0.1:" + tool.getAddress().getPort()
          + "/slow\",\"timeout_ms\":30000}]");
      String run = start(api, "slow");
      awaitStep(api, run, 0, "running");
      Thread.sleep(Math.max(0, 6_000 - (System.nanoTime() - started) / 1_000_000)); // past Javalin's first 5 s

      // Two SIGTERMs; the step's call answers a second after them.
      server.sigterm();
      CompletableFuture.delayedExecutor(1, TimeUnit.SECONDS).execute(answer::countDown);
      Thread.sleep(200); // two signals sent at once may reach the JVM as one
      assertEquals(0, server.terminate(30), "exit code after SIGTERM (-1: still running after 30 s)\n" + server.log());
      String log = server.log();
      assertTrue(log.contains("stopped cleanly"), "the stop ran to its end:\n" + log);
      assertTrue(log.contains("SIGTERM: already stopping"), "the second SIGTERM started no second stop:\n" + log);
      assertEquals(1, log.split("SIGTERM: stopping", -1).length - 1, log);
      if (db == TestDatabase.H2) {
        Path lockFile = Path.of(fresh.asMap().get("db.url").substring("jdbc:h2:file:".length()) + ".lock.db");
        assertFalse(Files.exists(lockFile), "H2 was closed: its lock file is gone");
      }
      server.start();
      JsonNode done = get(api, run);
      assertEquals("succeeded", done.get("status").asText(), done::toString);
      assertEquals(List.of("/slow"), calls, "the step finished before the exit and was not made again");
    } finally {
      answer.countDown();
      server.stop();
      tool.stop(0);
    }
  }

  /** The packaged jar on a fresh database, no workflow files, engine leases of 1 s, calls to loopback allowed. */
  private static RunwayProcess engineServer(Settings fresh, String dirPrefix) throws IOException {
    return new RunwayProcess(Map.of(
        "RUNWAY_DB_URL", fresh.asMap().get("db.url"),
        "RUNWAY_DB_USER", fresh.asMap().get("db.user"),
        "RUNWAY_DB_PASSWORD", fresh.asMap().get("db.password"),
        "RUNWAY_WORKFLOWS_DIR", "",
        "RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS", "true",
        "RUNWAY_ENGINE_LEASE_SECONDS", "1",
        "RUNWAY_ENGINE_POLL_INTERVAL_MS", "100"), TempFiles.dir(dirPrefix));
  }

  /** A tool's answer: 200 with {"ok":true}. */
  private static void answerOk(HttpExchange exchange) throws IOException {
    byte[] body = "{\"ok\":true}".getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().add("Content-Type", "application/json");
    exchange.sendResponseHeaders(200, body.length);
    exchange.getResponseBody().write(body);
    exchange.close();
  }

  private static void put(Http api, String id, String steps) {
    Http.Reply r = api.put("/v1/workflows/" + id, "{\"steps\":" + steps + "}");
    assertEquals(201, r.status(), r.body());
  }

  private static String start(Http api, String workflow) {
    Http.Reply r = api.post("/v1/workflows/" + workflow + "/runs", "{\"project\":\"p\"}");
    assertEquals(200, r.status(), r.body());
    return Json.tree(r.body()).get("id").asText();
  }

  private static JsonNode get(Http api, String runId) {
    return Json.tree(api.get("/v1/runs/" + runId).body());
  }

  private static void awaitStep(Http api, String runId, int step, String status) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    JsonNode run = null;
    while (System.nanoTime() < deadline) {
      run = get(api, runId);
      if (run.get("steps").get(step).get("status").asText().equals(status)) {
        return;
      }
      Thread.sleep(50);
    }
    throw new AssertionError("step " + step + " never became " + status + ": " + run);
  }

  private static JsonNode awaitTerminal(RunwayProcess server, Http api, String runId) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    JsonNode run = null;
    while (System.nanoTime() < deadline) {
      run = get(api, runId);
      if (!run.get("status").asText().equals("running")) {
        return run;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("run never finished: " + run + "\n" + server.log());
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
