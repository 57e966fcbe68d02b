package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.runway.config.Settings;
import dev.runway.core.Json;
import dev.runway.support.Http;
import dev.runway.support.SharedPostgres;
import dev.runway.support.TempFiles;
import dev.runway.support.TestDatabase;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/**
 * Issue 36: the work an instance holds comes back in seconds when it dies (kill -9), is paused
 * (kill -STOP) or stops (SIGTERM), whatever the length of its calls. Instance A (the packaged jar)
 * holds agent runs whose model call hangs, workflow runs whose http step hangs and webhook
 * deliveries whose attempt hangs; B starts after A made every first call, so A alone holds the
 * work. Each case measures how long after the fault every call was made again (with the same
 * Idempotency-Key or webhook-id), prints it as {@code TAKEOVER <case> round=<n> seconds=<s>} for
 * bench/takeover.sh, then lets the calls answer and checks that every run finished once.
 *
 * <p>Sized by -Dtakeover.runs (runs of each kind, 10) and -Dtakeover.rounds (1);
 * -Dtakeover.defaults=true (the bench) pauses with the default lease for 30 s instead of a 2 s
 * lease for 8 s. Timing bounds are checked after the last round, so the bench reports every round.
 */
class TakeoverIT {
  private static final int RUNS = Integer.getInteger("takeover.runs", 10);
  private static final int ROUNDS = Integer.getInteger("takeover.rounds", 1);
  private static final boolean DEFAULTS = Boolean.getBoolean("takeover.defaults");
  private static final String WHICH = "the takeover tests (two instances on one database)";

  @Test
  void kill_9_of_a_holds_every_call_on_b_within_15_s_and_a_shares_new_work_after_its_restart() throws Exception {
    inRounds((round, late) -> {
      Settings db = SharedPostgres.freshSchemaOrSkip(TakeoverIT.class, WHICH);
      try (Fakes fakes = new Fakes()) {
        Map<String, String> env = env(db, fakes);
        RunwayProcess a = new RunwayProcess(env, TempFiles.dir("runway-takeover-a-"));
        RunwayProcess b = new RunwayProcess(env, TempFiles.dir("runway-takeover-b-"));
        try {
          a.start();
          String key = firstAdminKey(a);
          Work work = Work.putOn(a.http(key), fakes, RUNS);
          fakes.awaitFirstCalls(work);
          b.start();

          Instant killed = Instant.now();
          a.kill9();
          Http onB = b.http(key);
          double held = secondsUntilHeld(onB, b.pid(), work, killed, Duration.ofSeconds(35));
          Figure figure = fakes.awaitSecondCalls(work, killed, Duration.ofSeconds(35)).held(held);
          figure.print("kill_9", round);
          figure.checkWithin(15, "kill -9", late);
          assertTrue(b.logged("is gone"), "B logged that A is gone:\n" + b.log());

          fakes.answerSecondCalls();
          work.checkFinishedOnce(onB, fakes);

          // A, restarted, takes its share of new work again.
          a.start();
          Http onA = a.http(key);
          List<String> more = work.startWorkflowRuns(onA, RUNS);
          assertTrue(await(Duration.ofSeconds(20), () -> held(onA, a.pid()).path("runs").asInt() > 0),
              "A holds some of " + more.size() + " new runs started through it: " + onA.get("/v1/admin/instances").body());
        } finally {
          end(a);
          end(b);
        }
      }
    });
  }

  @Test
  void kill_stop_of_a_lets_b_take_over_when_the_leases_lapse_and_a_commits_nothing_when_it_wakes() throws Exception {
    // 3 s, not 2: B must keep its leases while A sleeps and wakes. With 2 s (a beat every 667 ms), B's
    // beats stalled past its lease now and then on a loaded machine (CI beside other builds), and its
    // runs were taken up once more, their calls made a third time.
    int leaseSeconds = DEFAULTS ? 10 : 3;
    Duration paused = Duration.ofSeconds(DEFAULTS ? 30 : 10);
    inRounds((round, late) -> {
      Settings db = SharedPostgres.freshSchemaOrSkip(TakeoverIT.class, WHICH);
      try (Fakes fakes = new Fakes()) {
        Map<String, String> env = new HashMap<>(env(db, fakes));
        if (!DEFAULTS) {
          env.put("RUNWAY_ENGINE_LEASE_SECONDS", Integer.toString(leaseSeconds)); // the beat follows
        }
        RunwayProcess a = new RunwayProcess(env, TempFiles.dir("runway-takeover-a-"));
        RunwayProcess b = new RunwayProcess(env, TempFiles.dir("runway-takeover-b-"));
        try {
          a.start();
          String key = firstAdminKey(a);
          Work work = Work.putOn(a.http(key), fakes, RUNS);
          fakes.awaitFirstCalls(work);
          b.start();

          Instant stopped = Instant.now();
          a.pause();
          double held = secondsUntilHeld(b.http(key), b.pid(), work, stopped, paused);
          Figure figure = fakes.awaitSecondCalls(work, stopped, paused).held(held);
          figure.print("kill_stop", round);
          figure.checkWithin(leaseSeconds + 5, "kill -STOP", late);
          long left = paused.toMillis() - Duration.between(stopped, Instant.now()).toMillis();
          if (left > 0) {
            Thread.sleep(left);
          }

          // A wakes and gets its (stale) answers first: it must commit none of them; then B's answers.
          a.resume();
          fakes.answerFirstCalls();
          Thread.sleep(2_000);
          fakes.answerSecondCalls();
          work.checkFinishedOnce(b.http(key), fakes);
        } finally {
          end(a);
          end(b);
        }
      }
    });
  }

  @Test
  void sigterm_of_a_hands_its_work_to_b_at_once_after_the_grace() throws Exception {
    inRounds((round, late) -> {
      Settings db = SharedPostgres.freshSchemaOrSkip(TakeoverIT.class, WHICH);
      try (Fakes fakes = new Fakes()) {
        Map<String, String> env = env(db, fakes);
        Map<String, String> envA = new HashMap<>(env);
        envA.put("RUNWAY_SHUTDOWN_GRACE_SECONDS", "2"); // the calls hang far longer
        RunwayProcess a = new RunwayProcess(envA, TempFiles.dir("runway-takeover-a-"));
        RunwayProcess b = new RunwayProcess(env, TempFiles.dir("runway-takeover-b-"));
        try {
          a.start();
          String key = firstAdminKey(a);
          long aPid = a.pid();
          Work work = Work.putOn(a.http(key), fakes, RUNS);
          fakes.awaitFirstCalls(work);
          b.start();

          var exit = a.exitInstant();
          a.sigterm();
          Instant exited = exit.get(60, TimeUnit.SECONDS);
          assertEquals(0, a.exitCode(), "A's exit code after SIGTERM\n" + a.log());
          Http onB = b.http(key);
          double held = secondsUntilHeld(onB, b.pid(), work, exited, Duration.ofSeconds(30));
          Figure figure = fakes.awaitSecondCalls(work, exited, Duration.ofSeconds(30)).held(held);
          figure.print("sigterm", round);
          figure.checkWithin(5, "SIGTERM", late);

          JsonNode instanceA = instance(onB, aPid);
          assertEquals("stopped", instanceA.path("status").asText(), instanceA::toString);
          assertEquals(Map.of("runs", 0, "webhook_deliveries", 0, "run_requests", 0),
              Json.MAPPER.convertValue(instanceA.path("held"), Map.class), instanceA::toString);

          fakes.answerSecondCalls();
          work.checkFinishedOnce(onB, fakes);
        } finally {
          end(a);
          end(b);
        }
      }
    });
  }

  @Test
  void h2_instance_killed_and_restarted_in_place_makes_every_call_again_at_once() throws Exception {
    inRounds((round, late) -> {
      try (Fakes fakes = new Fakes()) {
        RunwayProcess server = RunwayProcess.onFreshDatabase(TestDatabase.H2, fakes.env(), "runway-takeover-h2-");
        try {
          server.start();
          String key = firstAdminKey(server);
          Work work = Work.putOn(server.http(key), fakes, RUNS);
          fakes.awaitFirstCalls(work);

          server.kill9();
          server.start();
          Instant ready = Instant.now();
          double held = secondsUntilHeld(server.http(key), server.pid(), work, ready, Duration.ofSeconds(30));
          Figure figure = fakes.awaitSecondCalls(work, ready, Duration.ofSeconds(30)).held(held);
          figure.print("h2_restart", round);
          figure.checkWithin(5, "restart in place on H2", late);

          fakes.answerSecondCalls();
          work.checkFinishedOnce(server.http(key), fakes);
        } finally {
          end(server);
        }
      }
    });
  }

  /** One round of a case: {@code late} collects takeovers past their bound. */
  interface Round {
    void run(int round, List<String> late) throws Exception;
  }

  /**
   * The rounds of a case, each on a fresh database; a round that fails does not stop the next ones
   * (the bench reports them all), and the case fails at the end with every round's faults.
   */
  private static void inRounds(Round round) throws Exception {
    List<String> faults = new ArrayList<>();
    for (int n = 1; n <= ROUNDS; n++) {
      List<String> late = new ArrayList<>();
      try {
        round.run(n, late);
      } catch (AssertionError e) {
        faults.add("round " + n + ": " + e.getMessage());
      }
      for (String l : late) {
        faults.add("round " + n + " late: " + l);
      }
    }
    assertEquals(List.of(), faults, "faults of " + ROUNDS + " rounds");
  }

  /** The admin key the first start printed (one start of the jar less than the keys command). */
  private static String firstAdminKey(RunwayProcess server) throws Exception {
    java.util.regex.Pattern key = java.util.regex.Pattern.compile("^\\s+(wsk_[A-Za-z0-9]{40,})\\s*$",
        java.util.regex.Pattern.MULTILINE);
    String[] found = new String[1];
    assertTrue(await(Duration.ofSeconds(20), () -> {
      try {
        java.util.regex.Matcher m = key.matcher(server.stdout());
        found[0] = m.find() ? m.group(1) : null;
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      return found[0] != null;
    }), "the first start printed an admin key");
    return found[0];
  }

  /**
   * kill -9 at the end of a test: a stop would wait out the grace for calls that hang on purpose.
   * With -Dtakeover.logs=DIR the server's log is kept there (the work folder goes with the JVM).
   */
  private static void end(RunwayProcess server) throws InterruptedException, IOException {
    if (server.alive()) {
      server.kill9();
    }
    String logs = System.getProperty("takeover.logs", "");
    java.nio.file.Path log = server.workDir().resolve("server.err");
    if (!logs.isEmpty() && java.nio.file.Files.exists(log)) {
      java.nio.file.Path dir = java.nio.file.Files.createDirectories(java.nio.file.Path.of(logs));
      java.nio.file.Files.copy(log, dir.resolve(server.workDir().getFileName() + ".log"),
          java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
  }

  /** The variables of every instance on this PostgreSQL schema, calling these fakes. */
  private static Map<String, String> env(Settings db, Fakes fakes) {
    Map<String, String> env = new HashMap<>(fakes.env());
    env.put("RUNWAY_DB_URL", db.asMap().get("db.url"));
    env.put("RUNWAY_DB_USER", db.asMap().get("db.user"));
    env.put("RUNWAY_DB_PASSWORD", db.asMap().get("db.password"));
    // One key file for both: B must decrypt the endpoint secret A stored to sign A's deliveries.
    env.put("RUNWAY_SECRETS_KEY_FILE", db.asMap().get("secrets.key_file"));
    return env;
  }

  /** What GET /v1/admin/instances shows of the instance with this process id. */
  private static JsonNode instance(Http api, long pid) {
    Http.Reply r = api.get("/v1/admin/instances");
    assertEquals(200, r.status(), r.body());
    for (JsonNode i : r.json().get("data")) {
      if (i.path("pid").asLong() == pid) {
        return i;
      }
    }
    throw new AssertionError("no instance with pid " + pid + ": " + r.body());
  }

  private static JsonNode held(Http api, long pid) {
    return instance(api, pid).path("held");
  }

  /** Whether {@code done} became true within {@code wait}, asked every 200 ms. */
  private static boolean await(Duration wait, java.util.function.BooleanSupplier done) throws InterruptedException {
    long deadline = System.nanoTime() + wait.toNanos();
    while (System.nanoTime() < deadline) {
      if (done.getAsBoolean()) {
        return true;
      }
      Thread.sleep(200);
    }
    return done.getAsBoolean();
  }

  /**
   * Seconds from {@code from} until the instance of {@code pid} held every run of {@code work} and
   * every delivery of its run.started events (GET /v1/admin/instances, asked every 50 ms); NaN if
   * not within {@code wait}. The calls go out after the holds are committed: see {@link Figure}.
   */
  private static double secondsUntilHeld(Http api, long pid, Work work, Instant from, Duration wait)
      throws InterruptedException {
    int runs = work.workflowRuns().size() + work.agentRuns().size();
    long deadline = System.nanoTime() + wait.toNanos();
    while (System.nanoTime() < deadline) {
      JsonNode held = held(api, pid);
      if (held.path("runs").asInt() >= runs && held.path("webhook_deliveries").asInt() >= work.startedEvents().size()) {
        return Math.max(0, Duration.between(from, Instant.now()).toMillis() / 1000.0);
      }
      Thread.sleep(50);
    }
    return Double.NaN;
  }

  /**
   * How long after a fault the work was taken over: {@code held}, the seconds until the taking
   * instance held every run and delivery (NaN when not measured), and the seconds from the fault to
   * the last second call, overall and per kind (NaN where some call was not made again in time).
   */
  record Figure(double held, double seconds, double steps, double model, double webhooks, int missing) {
    /** This figure with the seconds until every run and delivery was held. */
    Figure held(double seconds) {
      return new Figure(seconds, this.seconds, steps, model, webhooks, missing);
    }

    void print(String which, int round) {
      System.out.printf(java.util.Locale.ROOT,
          "TAKEOVER %s round=%d held=%.2f seconds=%.2f steps=%.2f model=%.2f webhooks=%.2f runs=%d missing=%d%n",
          which, round, held, seconds, steps, model, webhooks, RUNS, missing);
    }

    /** Adds to {@code late} when not every call was made again within {@code bound} seconds. */
    void checkWithin(int bound, String fault, List<String> late) {
      if (missing > 0 || !(seconds <= bound)) {
        late.add(String.format(java.util.Locale.ROOT, "%s: %d calls not made again; the last one %.2f s after it"
            + " (bound %d s; steps %.2f, model %.2f, webhooks %.2f)", fault, missing, seconds, bound, steps, model,
            webhooks));
      }
    }
  }

  /** The work put on an instance: the runs of each kind and the events whose deliveries hang. */
  record Work(String endpoint, List<String> workflowRuns, Map<String, String> agentRuns, List<String> startedEvents) {
    /** A hanging workflow, a hanging agent and an endpoint for run.started; {@code n} runs of each. */
    static Work putOn(Http api, Fakes fakes, int n) throws Exception {
      Http.Reply workflow = api.put("/v1/workflows/hang", "{\"steps\":[{\"type\":\"http\",\"url\":\""
          + fakes.tool.url("/step") + "\",\"timeout_ms\":300000,\"max_attempts\":3}]}");
      assertEquals(201, workflow.status(), workflow.body());
      Http.Reply agent = api.put("/v1/agents/hang", "{\"model\":\"m\"}");
      assertEquals(201, agent.status(), agent.body());
      Http.Reply endpoint = api.post("/v1/webhook_endpoints",
          "{\"url\":\"" + fakes.hooks.url("/hook") + "\",\"event_types\":[\"run.started\"]}");
      assertEquals(201, endpoint.status(), endpoint.body());

      List<String> workflowRuns = startWorkflowRuns(api, n);
      List<String> agentIds = startAll(n, i -> api.post("/v1/agents/hang/runs",
          "{\"project\":\"p\",\"input\":\"agent-" + i + "\"}"));
      Map<String, String> agentRuns = new LinkedHashMap<>();
      for (int i = 0; i < n; i++) {
        agentRuns.put(agentIds.get(i), "agent-" + i);
      }
      List<String> started = new ArrayList<>();
      for (JsonNode e : api.all("/v1/events?limit=1000")) {
        if (e.get("type").asText().equals("run.started")) {
          started.add(e.get("id").asText());
        }
      }
      assertEquals(2 * n, started.size(), "one run.started per run");
      return new Work(endpoint.json().get("id").asText(), workflowRuns, agentRuns, started);
    }

    static List<String> startWorkflowRuns(Http api, int n) throws Exception {
      return startAll(n, i -> api.post("/v1/workflows/hang/runs", "{\"project\":\"p\"}"));
    }

    Set<String> stepKeys() {
      Set<String> keys = new java.util.HashSet<>();
      workflowRuns.forEach(run -> keys.add(run + ":0"));
      return keys;
    }

    Set<String> modelKeys() {
      return Set.copyOf(agentRuns.values());
    }

    Set<String> hookKeys() {
      return Set.copyOf(startedEvents);
    }

    /**
     * Every run succeeded with the answer of the call made again (from B), its step or model call
     * recorded once, its run events in order (started, then succeeded: none moved back); every
     * delivery succeeded; no call made more than twice.
     */
    void checkFinishedOnce(Http api, Fakes fakes) throws Exception {
      List<String> faults = new ArrayList<>();
      for (String id : workflowRuns) {
        JsonNode run = awaitEnd(api, id);
        JsonNode step = run.get("steps").get(0);
        if (!run.get("status").asText().equals("succeeded") || !step.path("output").path("from").asText().equals("B")) {
          faults.add(id + " ended " + run.get("status").asText() + " with step output " + step.path("output"));
        }
        List<JsonNode> events = api.all("/v1/runs/" + id + "/events?limit=1000");
        checkEvents(id, events, "step.succeeded", e -> true, faults);
      }
      for (Map.Entry<String, String> entry : agentRuns.entrySet()) {
        String id = entry.getKey();
        JsonNode run = awaitEnd(api, id);
        if (!run.get("status").asText().equals("succeeded") || !run.path("output").asText().equals("from-B")) {
          faults.add(id + " ended " + run.get("status").asText() + " with output " + run.path("output"));
        }
        List<JsonNode> events = api.all("/v1/runs/" + id + "/events?limit=1000");
        checkEvents(id, events, "model_call.finished", e -> e.path("data").path("outcome").asText().equals("succeeded"),
            faults);
        List<String> roles = new ArrayList<>();
        api.all("/v1/runs/" + id + "/messages?limit=1000").forEach(m -> roles.add(m.get("role").asText()));
        if (!roles.equals(List.of("user", "assistant"))) {
          faults.add(id + " has the messages " + roles);
        }
      }
      assertTrue(await(Duration.ofSeconds(60), () -> api.get("/v1/webhook_endpoints/" + endpoint
          + "/deliveries?status=pending&limit=1").json().get("data").isEmpty()), "every delivery ended");
      List<JsonNode> deliveries = api.all("/v1/webhook_endpoints/" + endpoint + "/deliveries?limit=100");
      Set<String> delivered = new java.util.HashSet<>();
      for (JsonNode d : deliveries) {
        if (d.get("status").asText().equals("succeeded")) {
          delivered.add(d.get("event_id").asText());
        } else {
          faults.add("delivery " + d);
        }
      }
      if (!delivered.equals(hookKeys())) {
        faults.add("delivered " + delivered.size() + " of the " + startedEvents.size() + " run.started events");
      }
      faults.addAll(fakes.madeMoreThanTwice());
      assertEquals(List.of(), faults.size() > 20 ? faults.subList(0, 20) : faults,
          faults.size() + " faults in " + (2 * workflowRuns.size()) + " runs");
    }

    /** Exactly one {@code completion} event (that {@code counts}); run events started then succeeded; ids ascending. */
    private static void checkEvents(String run, List<JsonNode> events, String completion,
        java.util.function.Predicate<JsonNode> counts, List<String> faults) {
      long completions = events.stream().filter(e -> e.get("type").asText().equals(completion)).filter(counts).count();
      List<String> runEvents = new ArrayList<>();
      String last = "";
      for (JsonNode e : events) {
        String type = e.get("type").asText();
        if (type.startsWith("run.")) {
          runEvents.add(type);
        }
        if (e.get("id").asText().compareTo(last) <= 0) {
          faults.add(run + ": events out of order at " + e);
        }
        last = e.get("id").asText();
      }
      if (completions != 1) {
        faults.add(run + ": " + completions + " " + completion + " events");
      }
      if (!runEvents.equals(List.of("run.started", "run.succeeded"))) {
        faults.add(run + ": run events " + runEvents);
      }
    }

    private static JsonNode awaitEnd(Http api, String id) throws InterruptedException {
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      JsonNode run;
      do {
        run = api.get("/v1/runs/" + id).json();
        if (!Set.of("running", "awaiting_approval").contains(run.get("status").asText())) {
          return run;
        }
        Thread.sleep(100);
      } while (System.nanoTime() < deadline);
      throw new AssertionError("run never ended: " + run);
    }

    /** {@code n} starts, eight at a time, each answered 200; the run ids in order. */
    private static List<String> startAll(int n, IntFunction<Http.Reply> start) throws Exception {
      ExecutorService posters = Executors.newFixedThreadPool(8);
      try {
        List<Future<String>> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          int number = i;
          ids.add(posters.submit(() -> {
            Http.Reply r = start.apply(number);
            assertEquals(200, r.status(), r.body());
            return r.json().get("id").asText();
          }));
        }
        List<String> out = new ArrayList<>();
        for (Future<String> id : ids) {
          out.add(id.get(60, TimeUnit.SECONDS));
        }
        return out;
      } finally {
        posters.shutdownNow();
      }
    }
  }

  /** The model, the tool of the http steps and the webhook receiver, each holding its calls. */
  static final class Fakes implements AutoCloseable {
    final HeldCalls model = new HeldCalls(Fakes::modelKey, attempt -> completion(attempt == 1 ? "from-A" : "from-B"));
    final HeldCalls tool = new HeldCalls(r -> r.header("Idempotency-Key"),
        attempt -> attempt == 1 ? "{\"from\":\"A\"}" : "{\"from\":\"B\"}");
    final HeldCalls hooks = new HeldCalls(r -> r.header("webhook-id"), attempt -> "{}");

    /**
     * Every instance calls these fakes; the calls' own time-outs are far longer than any test, so
     * that only a takeover makes a call again; the webhook bounds leave room for every delivery at once.
     */
    Map<String, String> env() {
      return Map.of(
          "RUNWAY_WORKFLOWS_DIR", "",
          "RUNWAY_AGENTS_DIR", "",
          "RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS", "true",
          "RUNWAY_AGENTS_MODEL_BASE_URL", model.url("/v1"),
          "RUNWAY_AGENTS_MODEL_TIMEOUT_MS", "300000",
          "RUNWAY_WEBHOOKS_TIMEOUT_MS", "300000",
          "RUNWAY_WEBHOOKS_MAX_IN_FLIGHT", "10000",
          "RUNWAY_WEBHOOKS_MAX_IN_FLIGHT_PER_ENDPOINT", "10000");
    }

    void awaitFirstCalls(Work work) throws InterruptedException {
      Duration wait = Duration.ofSeconds(30 + RUNS / 2);
      assertTrue(await(wait, () -> tool.calledAll(work.stepKeys(), 1) && model.calledAll(work.modelKeys(), 1)
          && hooks.calledAll(work.hookKeys(), 1)), "the first instance made every first call: " + counts(work, 1));
    }

    /** Waits up to {@code wait} until every call was made a second time; how long after {@code fault}. */
    Figure awaitSecondCalls(Work work, Instant fault, Duration wait) throws InterruptedException {
      await(wait, () -> tool.calledAll(work.stepKeys(), 2) && model.calledAll(work.modelKeys(), 2)
          && hooks.calledAll(work.hookKeys(), 2));
      int missing = tool.missing(work.stepKeys(), 2) + model.missing(work.modelKeys(), 2)
          + hooks.missing(work.hookKeys(), 2);
      double steps = tool.secondsToLast(work.stepKeys(), 2, fault);
      double models = model.secondsToLast(work.modelKeys(), 2, fault);
      double webhooks = hooks.secondsToLast(work.hookKeys(), 2, fault);
      return new Figure(Double.NaN, Math.max(steps, Math.max(models, webhooks)), steps, models, webhooks, missing);
    }

    void answerFirstCalls() {
      model.answer(1);
      tool.answer(1);
      hooks.answer(1);
    }

    void answerSecondCalls() {
      model.answer(2);
      tool.answer(2);
      hooks.answer(2);
    }

    List<String> madeMoreThanTwice() {
      List<String> faults = new ArrayList<>();
      faults.addAll(tool.calledMoreThan(2, "step call"));
      faults.addAll(model.calledMoreThan(2, "model call"));
      faults.addAll(hooks.calledMoreThan(2, "delivery"));
      return faults;
    }

    private String counts(Work work, int attempt) {
      return "steps " + (work.stepKeys().size() - tool.missing(work.stepKeys(), attempt)) + "/" + work.stepKeys().size()
          + ", model " + (work.modelKeys().size() - model.missing(work.modelKeys(), attempt)) + "/"
          + work.modelKeys().size() + ", deliveries " + (work.hookKeys().size() - hooks.missing(work.hookKeys(), attempt))
          + "/" + work.hookKeys().size();
    }

    /** A model call is known by its run's input (agent-3): model calls carry no key of their own. */
    private static String modelKey(HeldCalls.Request r) {
      for (JsonNode m : Json.tree(r.body()).path("messages")) {
        if (m.path("role").asText().equals("user")) {
          return m.path("content").asText();
        }
      }
      return "(no user message)";
    }

    /** A Chat Completions answer (OpenAI's wire format) with this text. */
    private static String completion(String text) {
      return "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"m\",\"choices\":[{"
          + "\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"" + text + "\"},\"finish_reason\":\"stop\"}],"
          + "\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}";
    }

    @Override
    public void close() {
      model.close();
      tool.close();
      hooks.close();
    }
  }

  /**
   * A server that holds every request open until the test answers it: the first request of each key
   * until {@link #answer answer(1)}, the later ones until {@code answer(2)}. It records each
   * request's key and arrival; the first is the instance that held the work, the second the taker.
   */
  static final class HeldCalls implements AutoCloseable {
    /** A request as the key function sees it. */
    record Request(com.sun.net.httpserver.Headers headers, String body) {
      String header(String name) {
        return headers.getFirst(name);
      }
    }

    /** The {@code attempt}-th request with {@code key}, arriving {@code at}. */
    record Call(String key, int attempt, Instant at) {}

    private final HttpServer server;
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private final Function<Request, String> keyOf;
    private final IntFunction<String> answers;
    private final Map<String, List<Call>> calls = new HashMap<>();
    private final CountDownLatch first = new CountDownLatch(1);
    private final CountDownLatch later = new CountDownLatch(1);
    private final CountDownLatch closed = new CountDownLatch(1);

    HeldCalls(Function<Request, String> keyOf, IntFunction<String> answers) {
      this.keyOf = keyOf;
      this.answers = answers;
      try {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 1000);
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
      server.setExecutor(threads);
      server.createContext("/", this::handle);
      server.start();
    }

    String url(String path) {
      return "http://127.0.0.1:" + server.getAddress().getPort() + path;
    }

    /** Answers the held and coming requests: 1 the first of each key, 2 the later ones. */
    void answer(int attempt) {
      (attempt == 1 ? first : later).countDown();
    }

    synchronized boolean calledAll(Set<String> keys, int times) {
      return missing(keys, times) == 0;
    }

    synchronized int missing(Set<String> keys, int times) {
      return (int) keys.stream().filter(k -> calls.getOrDefault(k, List.of()).size() < times).count();
    }

    /** Seconds from {@code from} to the last arrival of an {@code attempt}-th request of these keys; NaN if one is missing. */
    synchronized double secondsToLast(Set<String> keys, int attempt, Instant from) {
      Instant last = from;
      for (String key : keys) {
        List<Call> made = calls.getOrDefault(key, List.of());
        if (made.size() < attempt) {
          return Double.NaN;
        }
        Instant at = made.get(attempt - 1).at();
        last = at.isAfter(last) ? at : last;
      }
      return Duration.between(from, last).toMillis() / 1000.0;
    }

    synchronized List<String> calledMoreThan(int times, String what) {
      List<String> faults = new ArrayList<>();
      calls.forEach((key, made) -> {
        if (made.size() > times) {
          Instant first = made.get(0).at();
          faults.add(what + " " + key + " made " + made.size() + " times, at +" + made.stream()
              .map(c -> Duration.between(first, c.at()).toMillis() / 1000.0 + " s").toList());
        }
      });
      return faults;
    }

    private void handle(HttpExchange exchange) throws IOException {
      try (exchange) {
        String body;
        try (InputStream in = exchange.getRequestBody()) {
          body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        String key = keyOf.apply(new Request(exchange.getRequestHeaders(), body));
        int attempt;
        synchronized (this) {
          List<Call> made = calls.computeIfAbsent(key, k -> new ArrayList<>());
          attempt = made.size() + 1;
          made.add(new Call(key, attempt, Instant.now()));
        }
        CountDownLatch gate = attempt == 1 ? first : later;
        while (gate.getCount() > 0 && closed.getCount() > 0) {
          gate.await(100, TimeUnit.MILLISECONDS);
        }
        if (closed.getCount() == 0) {
          return;
        }
        byte[] out = answers.apply(attempt).getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(200, out.length);
        try (OutputStream os = exchange.getResponseBody()) {
          os.write(out);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (IOException hungUp) {
        // the caller is gone (killed, or it gave the call up): nothing to answer
      }
    }

    @Override
    public void close() {
      closed.countDown();
      server.stop(0);
      threads.shutdownNow();
    }
  }
}
