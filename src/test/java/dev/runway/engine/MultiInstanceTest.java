package dev.runway.engine;

import static dev.runway.support.SharedPostgres.count;
import static dev.runway.support.SharedPostgres.strings;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.runway.Runway;
import dev.runway.auth.Scope;
import dev.runway.config.Settings;
import dev.runway.core.Json;
import dev.runway.support.Http;
import dev.runway.support.SharedPostgres;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Several Runway instances on one PostgreSQL schema share the engine's work: every step of every
 * run is done exactly once, no run is lost or left leased, and a dead instance's leases are taken
 * over once they run out. PostgreSQL only (H2 serves one process).
 */
class MultiInstanceTest {
  private static final int RUNS = 200;

  private final List<AutoCloseable> toClose = new ArrayList<>();
  private Settings settings;

  @BeforeEach
  void requirePostgres() {
    settings = SharedPostgres.freshSchemaOrSkip(getClass(), "the multi-instance engine tests")
        .with("engine.enabled", "true")
        .with("engine.http.allow_private_networks", "true")
        .with("engine.retry_base_ms", "50")
        .with("engine.poll_interval_ms", "100")
        .with("engine.workers", "8");
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      try {
        toClose.get(i).close();
      } catch (RuntimeException e) {
        // already closed by the test
      }
    }
  }

  @Test
  void two_instances_run_200_runs_each_step_exactly_once() throws Exception {
    Tool tool = tool(0, 0.05);
    Runway a = started(Runway.start(settings));
    String key = a.keys().create("multi", "test", List.of(Scope.values()), null, null).key();
    putWorkflow(Http.onPort(a.port(), key), tool, 10_000);
    Runway b = started(Runway.start(settings));
    List<Http> instances = List.of(Http.onPort(a.port(), key), Http.onPort(b.port(), key));

    Set<String> leaseOwners = ConcurrentHashMap.newKeySet();
    long begin = System.nanoTime();
    List<String> runIds = startRuns(instances, RUNS);
    try (Connection db = connect()) {
      waitUntil(Duration.ofSeconds(120), () -> {
        leaseOwners.addAll(strings(db, "SELECT DISTINCT lease_owner FROM run WHERE lease_owner IS NOT NULL"));
        return count(db, "SELECT count(*) FROM run WHERE status NOT IN ('succeeded', 'failed', 'canceled', "
            + "'rejected')") == 0;
      }, () -> "runs not finished: " + strings(db, "SELECT id || ' ' || status || ' step ' || current_step || "
          + "' due ' || coalesce(due_at::text, '-') || ' lease ' || coalesce(lease_owner, '-') FROM run "
          + "WHERE status = 'running'"));
      double seconds = (System.nanoTime() - begin) / 1e9;
      System.out.printf("two instances on PostgreSQL: %d runs (%d http steps) in %.2f s = %.1f runs/s%n",
          RUNS, RUNS * 2, seconds, RUNS / seconds);

      assertEquals(0, count(db, "SELECT count(*) FROM run WHERE due_at IS NOT NULL OR lease_owner IS NOT NULL "
          + "OR lease_until IS NOT NULL"), "no run is left due or leased");
      assertEquals(RUNS, count(db, "SELECT count(*) FROM run WHERE status = 'succeeded'"));
      assertEventsOncePerStep(db, new HashSet<>(runIds));
    }
    assertEquals(2, leaseOwners.size(), "both engines claimed runs: " + leaseOwners);

    // Every run record: each step succeeded with exactly one successful attempt, after as many
    // failed attempts as the tool failed it.
    for (int i = 0; i < runIds.size(); i++) {
      String id = runIds.get(i);
      JsonNode run = getRun(instances.get(i % 2), id);
      assertEquals("succeeded", run.get("status").asText(), run.toString());
      assertEquals(2, run.get("steps").size(), run.toString());
      for (int s = 0; s < 2; s++) {
        JsonNode step = run.get("steps").get(s);
        String callKey = id + ":" + s;
        assertEquals("succeeded", step.get("status").asText(), run.toString());
        int failed = tool.failures(callKey);
        assertAttempts(step.get("attempts"), failed, run);
        assertEquals(s + 1, step.get("output").path("step").asInt(-1), "the step keeps the tool's answer: " + run);
      }
    }

    // The tool's view: each of the 400 Idempotency-Keys answered 2xx exactly once.
    Set<String> expected = new HashSet<>();
    for (String id : runIds) {
      expected.add(id + ":0");
      expected.add(id + ":1");
    }
    assertEquals(expected, tool.calls.keySet(), "the tool saw exactly the run_id:step keys");
    int injected = 0;
    for (String callKey : expected) {
      assertEquals(1, tool.successes(callKey), "successful calls of " + callKey);
      assertEquals(tool.failures(callKey) + 1, tool.calls(callKey), "calls of " + callKey);
      injected += tool.failures(callKey);
    }
    System.out.println("  (" + injected + " injected 500s retried; lease owners seen: " + leaseOwners.size() + ")");
  }

  /**
   * Two instances share 100 runs of a foreach over 5 items whose iterations call the tool and run
   * two-calls as a child: every run succeeds, and each of the 1,500 Idempotency-Keys (per item: its
   * own call, and the child's two) is answered 2xx exactly once.
   */
  @Test
  void two_instances_share_100_runs_with_foreach_and_child_runs_each_call_made_once() throws Exception {
    int parents = 100;
    Tool tool = tool(0, 0.05);
    List<Http> instances = twoInstancesWith(tool, "fan-out", "{\"steps\":[{\"id\":\"each\",\"type\":\"foreach\","
        + "\"items\":\"[0, 1, 2, 3, 4]\",\"concurrency\":3,\"steps\":[{\"id\":\"call\",\"type\":\"http\",\"url\":\""
        + tool.url() + "\",\"max_attempts\":3},{\"id\":\"child\",\"type\":\"workflow\",\"workflow\":\"two-calls\"}]}]}");
    List<String> runIds = SharedPostgres.startRuns(instances, "/v1/workflows/fan-out/runs", "{\"project\":\"multi\"}",
        parents, 8);
    int all = parents * (1 + 5 + 5); // each run, its 5 iterations and their 5 children
    try (Connection db = connect()) {
        waitUntil(Duration.ofSeconds(180), () -> count(db, "SELECT count(*) FROM run WHERE status = 'succeeded'") == all
          || count(db, "SELECT count(*) FROM run WHERE status IN ('failed', 'canceled')") > 0,
          () -> "not every run succeeded: " + count(db, "SELECT count(*) FROM run WHERE status = 'succeeded'") + " of "
              + all + "; " + strings(db, "SELECT id || ' ' || status || ' ' || coalesce(error, '') FROM run "
              + "WHERE status NOT IN ('succeeded', 'running') LIMIT 5"));
      assertEquals(0, count(db, "SELECT count(*) FROM run WHERE status <> 'succeeded'"), () -> strings(db,
          "SELECT id || ' ' || status || ' ' || coalesce(error, '') || ' ' || coalesce(parent_run_id, '-') FROM run "
          + "WHERE status <> 'succeeded' ORDER BY status LIMIT 5")
          .toString());
      assertEquals(0, count(db, "SELECT count(*) FROM run WHERE due_at IS NOT NULL OR lease_owner IS NOT NULL"));
      assertEquals(all, count(db, "SELECT count(*) FROM run"));
    }
    Set<String> expected = new HashSet<>();
    for (int i = 0; i < runIds.size(); i++) {
      JsonNode run = getRun(instances.get(i % 2), runIds.get(i));
      assertEquals("succeeded", run.get("status").asText(), run.toString());
      JsonNode iterations = run.get("steps").get(0).get("iterations");
      for (int item = 0; item < 5; item++) {
        expected.add(runIds.get(i) + ":each[" + item + "].call");
        JsonNode iteration = getRun(instances.get(item % 2), iterations.get(item).get("child_run_id").asText());
        String child = iteration.get("steps").get(1).get("child_run_id").asText();
        expected.add(child + ":0");
        expected.add(child + ":1");
      }
    }
    assertEquals(expected, tool.calls.keySet(), "the tool saw exactly the keys of the iterations' and children's calls");
    for (String callKey : expected) {
      assertEquals(1, tool.successes(callKey), "successful calls of " + callKey);
    }
  }

  /**
   * Two instances share 100 runs whose first step is a child run of two-calls (a workflow step) and
   * whose second step calls the tool: every parent and child succeeds, each child belongs to its
   * parent's step, and each of the 300 Idempotency-Keys is answered 2xx exactly once.
   */
  @Test
  void two_instances_share_100_runs_with_child_runs_each_call_made_once() throws Exception {
    int parents = 100;
    Tool tool = tool(0, 0.05);
    List<Http> instances = twoInstancesWith(tool, "with-child", "{\"steps\":[{\"id\":\"child\",\"type\":\"workflow\","
        + "\"workflow\":\"two-calls\"},{\"type\":\"http\",\"url\":\"" + tool.url() + "\",\"max_attempts\":3}]}");
    List<String> runIds = SharedPostgres.startRuns(instances, "/v1/workflows/with-child/runs", "{\"project\":\"multi\"}",
        parents, 8);
    try (Connection db = connect()) {
      waitUntil(Duration.ofSeconds(120), () -> count(db, "SELECT count(*) FROM run WHERE status = 'succeeded'") == 2L * parents,
          () -> "not every run succeeded: " + strings(db, "SELECT id || ' ' || status FROM run WHERE status <> 'succeeded'"));
      assertEquals(parents, count(db, "SELECT count(*) FROM run WHERE parent_run_id IS NOT NULL"));
      assertEquals(0, count(db, "SELECT count(*) FROM run WHERE due_at IS NOT NULL OR lease_owner IS NOT NULL"));
    }
    Set<String> expected = new HashSet<>();
    for (int i = 0; i < runIds.size(); i++) {
      JsonNode run = getRun(instances.get(i % 2), runIds.get(i));
      assertEquals("succeeded", run.get("status").asText(), run.toString());
      String child = run.get("steps").get(0).get("child_run_id").asText();
      JsonNode childRun = getRun(instances.get((i + 1) % 2), child);
      assertEquals(runIds.get(i), childRun.get("parent_run_id").asText());
      assertEquals("succeeded", childRun.get("status").asText(), childRun.toString());
      expected.add(child + ":0");
      expected.add(child + ":1");
      expected.add(runIds.get(i) + ":1");
    }
    assertEquals(expected, tool.calls.keySet(), "the tool saw exactly the keys of the children's and parents' calls");
    for (String callKey : expected) {
      assertEquals(1, tool.successes(callKey), "successful calls of " + callKey);
    }
  }

  /**
   * Two instances share 200 agent runs (a model answer with two tool calls, then a text answer):
   * every run succeeds, and each tool call is made exactly once per tool_call_id.
   */
  @Test
  void two_instances_share_200_agent_runs_each_tool_call_made_once() throws Exception {
    try (dev.runway.support.FakeModel model = dev.runway.support.FakeModel.start();
        dev.runway.support.ToolServer tools = dev.runway.support.ToolServer.start()) {
      model.respondWith(request -> {
        com.fasterxml.jackson.databind.JsonNode messages = request.get("messages");
        if (messages.get(messages.size() - 1).get("role").asText().equals("tool")) {
          return dev.runway.support.FakeModel.Reply.text("done").after(Duration.ofMillis(20));
        }
        return dev.runway.support.FakeModel.Reply.toolCalls(
            dev.runway.support.FakeModel.ToolCall.of("call_1", "lookup", Map.of("n", 1)),
            dev.runway.support.FakeModel.ToolCall.of("call_2", "lookup", Map.of("n", 2))).after(Duration.ofMillis(20));
      });
      settings = settings.with("agents.model.base_url", model.baseUrl());
      Runway a = started(Runway.start(settings));
      String key = a.keys().create("multi", "test", List.of(Scope.values()), null, null).key();
      Http.Reply put = Http.onPort(a.port(), key).put("/v1/agents/multi", "{\"model\":\"m\",\"tools\":[{"
          + "\"name\":\"lookup\",\"url\":\"" + tools.url("/lookup") + "\"}]}");
      assertEquals(201, put.status(), put.body());
      Runway b = started(Runway.start(settings));
      List<Http> instances = List.of(Http.onPort(a.port(), key), Http.onPort(b.port(), key));

      Set<String> leaseOwners = ConcurrentHashMap.newKeySet();
      List<String> runIds = SharedPostgres.startRuns(instances, "/v1/agents/multi/runs",
          "{\"project\":\"multi\",\"input\":\"go\"}", RUNS, 8);
      try (Connection db = connect()) {
        waitUntil(Duration.ofSeconds(120), () -> {
          leaseOwners.addAll(strings(db, "SELECT DISTINCT lease_owner FROM run WHERE lease_owner IS NOT NULL"));
          return count(db, "SELECT count(*) FROM run WHERE status = 'succeeded'") == RUNS;
        }, () -> "runs not finished: " + strings(db, "SELECT id || ' ' || status FROM run WHERE status <> 'succeeded'"));
        assertEquals(RUNS * 5, count(db, "SELECT count(*) FROM run_message"),
            "each transcript once: user, assistant, tool, tool, assistant (no instructions: no system message)");
      }
      assertEquals(2, leaseOwners.size(), "both engines claimed runs: " + leaseOwners);
      Map<String, Integer> callsByKey = new HashMap<>();
      tools.calls("/lookup").forEach(c -> callsByKey.merge(c.idempotencyKey(), 1, Integer::sum));
      Map<String, Integer> once = new HashMap<>();
      for (String id : runIds) {
        once.put(id + ":call_1", 1);
        once.put(id + ":call_2", 1);
      }
      assertEquals(once, callsByKey, "each tool call made exactly once");
      assertEquals(RUNS * 2, model.requestCount(), "two model calls per run, none twice");
      JsonNode run = getRun(instances.get(1), runIds.get(0));
      assertEquals(Json.tree("{\"model_calls\":2,\"tool_calls\":2,\"prompt_tokens\":20,\"completion_tokens\":10,"
          + "\"total_tokens\":30}"), run.get("usage"));
    }
  }

  @Test
  void closing_an_instance_mid_call_lets_the_other_finish_every_run() throws Exception {
    settings = settings.with("engine.lease_seconds", "2");
    Tool tool = tool(1_000, 0);
    Runway a = started(Runway.start(settings));
    String key = a.keys().create("multi", "test", List.of(Scope.values()), null, null).key();
    putWorkflow(Http.onPort(a.port(), key), tool, 5_000);
    List<String> runIds = startRuns(List.of(Http.onPort(a.port(), key)), 16);
    waitUntil(Duration.ofSeconds(10), () -> tool.inFlight.get() >= 8, () -> "A is calling " + tool.inFlight.get());

    Runway b = started(Runway.start(settings));
    long closing = System.nanoTime();
    a.close(); // stops claiming; its workers finish what they hold, then it is gone
    double closeSeconds = (System.nanoTime() - closing) / 1e9;
    assertTrue(closeSeconds < 16, "close took " + closeSeconds + " s");

    try (Connection db = connect()) {
      waitForTerminal(db, runIds, Duration.ofSeconds(30));
      assertEquals(0, count(db, "SELECT count(*) FROM run WHERE due_at IS NOT NULL OR lease_owner IS NOT NULL "
          + "OR lease_until IS NOT NULL"), "no run is left due or leased");
      assertEventsOncePerStep(db, new HashSet<>(runIds));
    }
    for (String id : runIds) {
      JsonNode run = getRun(Http.onPort(b.port(), key), id);
      assertEquals("succeeded", run.get("status").asText(), run.toString());
      for (int s = 0; s < 2; s++) {
        assertAttempts(run.get("steps").get(s).get("attempts"), 0, run);
        assertEquals(1, tool.calls(id + ":" + s), "a graceful close calls no step twice: " + id + ":" + s);
      }
    }
  }

  @Test
  void a_crashed_instances_leases_are_taken_over_when_they_run_out() throws Exception {
    settings = settings.with("engine.lease_seconds", "2");
    Tool tool = tool(1_000, 0);
    // A runs on a DataSource the test can cut, as if the process died: from then on it can neither
    // save its progress nor give its leases back.
    Killable killable = new Killable(pool(settings));
    toClose.add(killable.pool);
    Runway a = started(Runway.start(settings, killable));
    String key = a.keys().create("multi", "test", List.of(Scope.values()), null, null).key();
    int timeoutMs = 3_000;
    putWorkflow(Http.onPort(a.port(), key), tool, timeoutMs);
    List<String> runIds = startRuns(List.of(Http.onPort(a.port(), key)), 12);
    waitUntil(Duration.ofSeconds(10), () -> tool.inFlight.get() >= 8, () -> "A is calling " + tool.inFlight.get());

    // A's leases as the kill left them (read after it: A could still take a run between a read before
    // it and the kill).
    killable.kill();
    // A write A had begun before the kill may still commit (a lease taken, say): read once none is open
    // but the one holding A's liveness lock, which stays open as a paused process's would: B takes
    // A's runs over when their leases lapse, not at once.
    waitUntil(Duration.ofSeconds(30), () -> killable.pool.getHikariPoolMXBean().getActiveConnections() <= 1,
        () -> "A still has " + killable.pool.getHikariPoolMXBean().getActiveConnections() + " connections open");
    Map<String, Instant> heldByA = new HashMap<>();
    try (Connection db = connect(); Statement s = db.createStatement();
         ResultSet rs = s.executeQuery("SELECT id, lease_owner, lease_until FROM run WHERE lease_owner IS NOT NULL")) {
      Set<String> owners = new HashSet<>();
      while (rs.next()) {
        owners.add(rs.getString(2));
        heldByA.put(rs.getString(1), rs.getTimestamp(3).toInstant());
      }
      assertEquals(1, owners.size(), "only A runs so far");
    }
    assertTrue(heldByA.size() >= 8, "A holds the runs it is calling the tool for: " + heldByA.keySet());

    Runway b = started(Runway.start(settings));
    long killed = System.nanoTime();
    a.close();

    try (Connection db = connect()) {
      waitForTerminal(db, runIds, Duration.ofSeconds(30));
      System.out.printf("crashed instance: B finished all %d runs %.1f s after A died (%d were leased by A)%n",
          runIds.size(), (System.nanoTime() - killed) / 1e9, heldByA.size());
      assertEquals(0, count(db, "SELECT count(*) FROM run WHERE due_at IS NOT NULL OR lease_owner IS NOT NULL "
          + "OR lease_until IS NOT NULL"), "no run is left due or leased");
    }
    for (String id : runIds) {
      JsonNode run = getRun(Http.onPort(b.port(), key), id);
      assertEquals("succeeded", run.get("status").asText(), run.toString());
      assertAttempts(run.get("steps").get(1).get("attempts"), 0, run);
      if (heldByA.containsKey(id)) {
        // A's call went out but its outcome was never saved: its attempt counts (it was recorded when
        // it started), B closed it as interrupted and called again once A was gone (its lease lapsed,
        // or A's close released its liveness lock, as a dead process's is released at once).
        assertEquals(2, tool.calls(id + ":0"), "A's lost call and B's call of " + id + ":0");
        JsonNode attempts = run.get("steps").get(0).get("attempts");
        assertEquals(2, attempts.size(), run.toString());
        assertEquals("interrupted", attempts.get(0).get("outcome").asText(), run.toString());
        assertTrue(attempts.get(0).get("http_status").isNull(), run.toString());
        assertEquals("succeeded", attempts.get(1).get("outcome").asText(), run.toString());
        assertEquals(2, attempts.get(1).get("attempt").asInt(), run.toString());
      } else {
        assertAttempts(run.get("steps").get(0).get("attempts"), 0, run);
        assertEquals(1, tool.calls(id + ":0"), id + ":0");
      }
      assertEquals(1, tool.calls(id + ":1"), id + ":1");
    }
  }

  // ---- the tool ----

  /** Counts calls per Idempotency-Key; optionally slow, and failing some first calls with 500. */
  private static final class Tool implements AutoCloseable {
    final HttpServer server;
    final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    final Map<String, AtomicInteger> successes = new ConcurrentHashMap<>();
    final Map<String, AtomicInteger> failures = new ConcurrentHashMap<>();
    final AtomicInteger inFlight = new AtomicInteger();
    final ExecutorService executor = Executors.newFixedThreadPool(32);

    Tool(long sleepMs, double failFirst) throws IOException {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 100);
      server.setExecutor(executor);
      server.createContext("/tool", exchange -> {
        inFlight.incrementAndGet();
        try {
          exchange.getRequestBody().readAllBytes();
          String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
          String k = key == null ? "(none)" : key;
          int n = calls.computeIfAbsent(k, x -> new AtomicInteger()).incrementAndGet();
          if (sleepMs > 0) {
            Thread.sleep(sleepMs);
          }
          boolean fail = n == 1 && ThreadLocalRandom.current().nextDouble() < failFirst;
          String tail = key == null ? "" : key.substring(key.lastIndexOf(':') + 1);
          int step = tail.matches("[0-9]+") ? Integer.parseInt(tail) : -1; // a step path (each[2].call) has no index
          byte[] body = (fail ? "{\"ok\":false}" : "{\"ok\":true,\"step\":" + (step + 1) + "}")
              .getBytes(StandardCharsets.UTF_8);
          (fail ? failures : successes).computeIfAbsent(k, x -> new AtomicInteger()).incrementAndGet();
          exchange.getResponseHeaders().add("Content-Type", "application/json");
          exchange.sendResponseHeaders(fail ? 500 : 200, body.length);
          exchange.getResponseBody().write(body);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } finally {
          inFlight.decrementAndGet();
          exchange.close();
        }
      });
      server.start();
    }

    String url() {
      return "http://127.0.0.1:" + server.getAddress().getPort() + "/tool";
    }

    int calls(String key) {
      AtomicInteger n = calls.get(key);
      return n == null ? 0 : n.get();
    }

    int successes(String key) {
      AtomicInteger n = successes.get(key);
      return n == null ? 0 : n.get();
    }

    int failures(String key) {
      AtomicInteger n = failures.get(key);
      return n == null ? 0 : n.get();
    }

    @Override
    public void close() {
      server.stop(0);
      executor.shutdownNow();
    }
  }

  private Tool tool(long sleepMs, double failFirst) throws IOException {
    Tool tool = new Tool(sleepMs, failFirst);
    toClose.add(tool);
    return tool;
  }

  // ---- a DataSource that can die ----

  private static HikariDataSource pool(Settings settings) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(settings.asMap().get("db.url"));
    config.setUsername(settings.asMap().get("db.user"));
    config.setPassword(settings.asMap().get("db.password"));
    config.setMaximumPoolSize(10);
    config.setConnectionTimeout(2_000);
    return new HikariDataSource(config);
  }

  /** Hands out connections until killed; then every new one fails, as if the process were gone. */
  private static final class Killable implements DataSource {
    final HikariDataSource pool;
    final AtomicBoolean dead = new AtomicBoolean();

    Killable(HikariDataSource pool) {
      this.pool = pool;
    }

    void kill() {
      dead.set(true);
    }

    @Override
    public Connection getConnection() throws SQLException {
      if (dead.get()) {
        throw new SQLException("this instance is dead");
      }
      return pool.getConnection();
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      return getConnection();
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
      return pool.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
      pool.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
      pool.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
      return pool.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }

  // ---- helpers ----

  private Runway started(Runway runway) {
    toClose.add(runway);
    return runway;
  }

  /**
   * Two instances on the test's schema, the first with two-calls and workflow {@code id} put
   * ({@code definition}); a client of each, with one key, in that order.
   */
  private List<Http> twoInstancesWith(Tool tool, String id, String definition) {
    Runway a = started(Runway.start(settings));
    String key = a.keys().create("multi", "test", List.of(Scope.values()), null, null).key();
    Http first = Http.onPort(a.port(), key);
    putWorkflow(first, tool, 10_000);
    Http.Reply put = first.put("/v1/workflows/" + id, definition);
    assertEquals(201, put.status(), put.body());
    Runway b = started(Runway.start(settings));
    return List.of(first, Http.onPort(b.port(), key));
  }

  private void putWorkflow(Http instance, Tool tool, int timeoutMs) {
    String step = "{\"type\":\"http\",\"url\":\"" + tool.url() + "\",\"timeout_ms\":" + timeoutMs + ",\"max_attempts\":3}";
    Http.Reply put = instance.put("/v1/workflows/two-calls", "{\"name\":\"Two calls\",\"steps\":[" + step + "," + step + "]}");
    assertEquals(201, put.status(), put.body());
  }

  /** Starts n runs of two-calls, POSTing to the instances in turn, a few at a time; the ids in order. */
  private static List<String> startRuns(List<Http> instances, int n) throws Exception {
    return SharedPostgres.startRuns(instances, "/v1/workflows/two-calls/runs", "{\"project\":\"multi\"}", n, 8);
  }

  private void waitForTerminal(Connection db, List<String> runIds, Duration limit) throws Exception {
    waitUntil(limit, () -> count(db, "SELECT count(*) FROM run WHERE status IN ('succeeded', 'failed', "
        + "'canceled', 'rejected')") == runIds.size(),
        () -> "runs not finished: " + strings(db, "SELECT id || ' ' || status || ' step ' || current_step || "
            + "' lease ' || coalesce(lease_owner, '-') || ' until ' || coalesce(lease_until::text, '-') FROM run "
            + "WHERE status = 'running'"));
  }

  /** The event table: one run.succeeded per run, and one step.succeeded per step. */
  private static void assertEventsOncePerStep(Connection db, Set<String> runIds) throws SQLException {
    Map<String, Integer> counts = new HashMap<>();
    try (Statement s = db.createStatement();
         ResultSet rs = s.executeQuery("SELECT run_id, type, step_index, count(*) FROM event "
             + "WHERE type IN ('run.succeeded', 'step.succeeded') GROUP BY run_id, type, step_index")) {
      while (rs.next()) {
        counts.put(rs.getString(1) + " " + rs.getString(2) + " " + rs.getString(3), rs.getInt(4));
      }
    }
    Map<String, Integer> expected = new HashMap<>();
    for (String id : runIds) {
      expected.put(id + " run.succeeded null", 1);
      expected.put(id + " step.succeeded 0", 1);
      expected.put(id + " step.succeeded 1", 1);
    }
    assertEquals(expected, counts, "each run and step succeeded once in the event table");
  }

  /** {@code failed} failed attempts, then one succeeded; numbered 1, 2, ... */
  private static void assertAttempts(JsonNode attempts, int failed, JsonNode run) {
    assertEquals(failed + 1, attempts.size(), "attempts: " + run);
    for (int i = 0; i < attempts.size(); i++) {
      JsonNode attempt = attempts.get(i);
      assertEquals(i + 1, attempt.get("attempt").asInt(), run.toString());
      assertEquals(i == failed ? "succeeded" : "failed", attempt.get("outcome").asText(), run.toString());
      assertEquals(i == failed ? 200 : 500, attempt.get("http_status").asInt(), run.toString());
    }
  }

  private JsonNode getRun(Http instance, String id) {
    Http.Reply r = instance.get("/v1/runs/" + id);
    assertEquals(200, r.status(), r.body());
    return Json.tree(r.body());
  }

  private Connection connect() throws SQLException {
    return SharedPostgres.connect(settings);
  }

  private interface Check {
    boolean ok() throws Exception;
  }

  private interface Why {
    Object get() throws Exception;
  }

  private static void waitUntil(Duration limit, Check check, Why why) throws Exception {
    long deadline = System.nanoTime() + limit.toNanos();
    while (!check.ok()) {
      if (System.nanoTime() > deadline) {
        fail("not done within " + limit.toSeconds() + " s: " + why.get());
      }
      Thread.sleep(20);
    }
  }
}
