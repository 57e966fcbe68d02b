package dev.runway.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Ids;
import dev.runway.db.Database;
import dev.runway.instance.Leases;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import dev.runway.support.TestDatabase;
import dev.runway.trigger.TriggerProcessor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Every way a run starts obeys its workflow's concurrency key: runs started by CRM triggers, child
 * runs of a workflow step, reruns; and two instances on one PostgreSQL never let more than
 * {@code limit} runs of a key be active, however their starts and cancels interleave. The runs stop
 * at their approval gate, so that the tests decide when an active run ends.
 */
class ConcurrencyKeyStartsTest {
  private static final String ONE_AT_A_TIME = "\"concurrency\": {\"key\": \"{{inputs.customer}}\"}";

  private static String status(Http http, String run) {
    return http.get("/v1/runs/" + run).json().get("status").asText();
  }

  /** The workflow's runs, oldest first, each as "id status". */
  private static List<String> runs(Api api, String workflow) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT id, status FROM run WHERE workspace_id = :ws "
        + "AND workflow_id = :wf ORDER BY id").bind("ws", api.workspace).bind("wf", workflow)
        .map((rs, ctx) -> rs.getString("id") + " " + rs.getString("status")).list());
  }

  private static List<String> statuses(Api api, String workflow) {
    return runs(api, workflow).stream().map(r -> r.split(" ")[1]).toList();
  }

  @BothDatabases
  void runs_started_by_a_crm_trigger_wait_for_the_key_as_others_do(Api api) throws Exception {
    api.test(http -> {
      Http.Reply put = http.put("/v1/workflows/on-contact", "{\"requires_approval\": true, \"triggers\": "
          + "[{\"crm\": \"contacts\", \"on\": [\"created\"]}], \"concurrency\": {\"key\": \"{{inputs.change}}\"}}");
      assertEquals(201, put.status(), put::toString);
      Database db = api.services().database();
      Leases leases = new Leases(Ids.newId("ins"), Duration.ofHours(1), Duration.ofSeconds(1), System::nanoTime);
      try (TriggerProcessor processor = TriggerProcessor.start(db.jdbi(), db.committer(), api.services().starts(),
          Duration.ofMillis(20), leases)) {
        Http.Reply sync = http.post("/v1/crm/contacts/records/sync", "{\"records\": ["
            + "{\"external_id\": \"a\", \"properties\": {}}, {\"external_id\": \"b\", \"properties\": {}},"
            + "{\"external_id\": \"c\", \"properties\": {}}]}");
        assertEquals(200, sync.status(), sync::toString);
        long until = System.nanoTime() + Runs.DEADLINE.toNanos();
        while (runs(api, "on-contact").size() < 3) {
          assertTrue(System.nanoTime() < until, "the trigger's runs: " + runs(api, "on-contact"));
          Thread.sleep(20);
        }
      }
      assertEquals(List.of("awaiting_approval", "queued", "queued"), statuses(api, "on-contact"));
      String first = runs(api, "on-contact").get(0).split(" ")[0];
      assertEquals("created", http.get("/v1/runs/" + first).json().get("concurrency_key").asText());
      assertEquals(200, http.post("/v1/runs/" + first + "/cancel", "{}").status());
      assertEquals(List.of("canceled", "awaiting_approval", "queued"), statuses(api, "on-contact"));
    });
  }

  @BothDatabases
  void runs_started_by_a_schedule_wait_for_the_key_their_timeline_beginning_with_the_firing(Api api) {
    api.test(http -> {
      Http.Reply put = http.put("/v1/workflows/hourly", "{\"requires_approval\": true, \"triggers\": "
          + "[{\"schedule\": {\"every\": \"1h\"}}], \"concurrency\": {\"key\": \"one\"}}");
      assertEquals(201, put.status(), put::toString);
      java.time.Instant next = java.time.Instant.parse(put.json().get("triggers").get(0).get("next_run_at").asText());
      Database db = api.services().database();
      dev.runway.trigger.Scheduler scheduler = dev.runway.trigger.Scheduler.idle(db.jdbi(), db.committer(),
          api.services().starts());
      scheduler.round(next.plusMillis(10));
      scheduler.round(next.plus(Duration.ofHours(1)).plusMillis(10));
      List<String> runs = runs(api, "hourly");
      assertEquals(List.of("awaiting_approval", "queued"), statuses(api, "hourly"));
      String queued = runs.get(1).split(" ")[0];
      List<String> types = new ArrayList<>();
      http.get("/v1/runs/" + queued + "/events").json().get("data").forEach(e -> types.add(e.get("type").asText()));
      assertEquals(List.of("schedule.fired", "run.queued"), types);
      assertEquals(200, http.post("/v1/runs/" + runs.get(0).split(" ")[0] + "/cancel", "{}").status());
      assertEquals(List.of("canceled", "awaiting_approval"), statuses(api, "hourly"));
    });
  }

  @BothDatabases
  void child_runs_of_a_workflow_step_wait_for_the_key_and_their_parents_wait_for_them(Api api) throws Exception {
    try (var engine = api.database().startEngine()) {
      api.test(http -> {
        assertEquals(201, http.put("/v1/workflows/per-customer", "{\"requires_approval\": true, " + ONE_AT_A_TIME
            + ", \"output\": \"{{inputs.customer}}\"}").status());
        assertEquals(201, http.put("/v1/workflows/parent", "{\"steps\": [{\"id\": \"child\", \"type\": \"workflow\", "
            + "\"workflow\": \"per-customer\", \"inputs\": {\"customer\": \"acme\"}}]}").status());
        String first = Runs.start(http, "parent", "demo", "{}").get("id").asText();
        String second = Runs.start(http, "parent", "demo", "{}").get("id").asText();
        JsonNode waiting = Runs.await(http, second, "its child started",
            r -> r.get("steps").get(0).hasNonNull("child_run_id"));
        String firstChild = Runs.await(http, first, "its child started",
            r -> r.get("steps").get(0).hasNonNull("child_run_id")).get("steps").get(0).get("child_run_id").asText();
        String secondChild = waiting.get("steps").get(0).get("child_run_id").asText();
        Runs.awaitStatus(http, firstChild, "awaiting_approval");
        assertEquals("queued", status(http, secondChild));
        assertEquals("running", status(http, second), "the parent waits for its queued child");

        assertEquals(200, http.post("/v1/runs/" + firstChild + "/approve", "{}").status());
        Runs.awaitStatus(http, first, "succeeded");
        Runs.awaitStatus(http, secondChild, "awaiting_approval");
        assertEquals(200, http.post("/v1/runs/" + secondChild + "/approve", "{}").status());
        assertEquals("acme", Runs.awaitStatus(http, second, "succeeded").get("steps").get(0).get("output").asText());
      });
    }
  }

  @BothDatabases
  void a_rerun_waits_for_the_key_as_a_new_run_does(Api api) throws Exception {
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/per-customer", "{\"requires_approval\": true, " + ONE_AT_A_TIME + "}")
          .status());
      String ended = Runs.start(http, "per-customer", "demo", "{\"customer\": \"acme\"}").get("id").asText();
      assertEquals(200, http.post("/v1/runs/" + ended + "/cancel", "{}").status());
      String active = Runs.start(http, "per-customer", "demo", "{\"customer\": \"acme\"}").get("id").asText();
      Http.Reply rerun = http.post("/v1/runs/" + ended + "/rerun", "{}");
      assertEquals(200, rerun.status(), rerun::toString);
      assertEquals("running", rerun.json().get("status").asText());
      String again = rerun.json().get("id").asText();
      assertEquals("queued", status(http, again));
      assertEquals(200, http.post("/v1/runs/" + active + "/cancel", "{}").status());
      assertEquals("awaiting_approval", status(http, again));
    });
  }

  /**
   * Two engines on one database (each with its own leases and claims, as two instances' engines)
   * run 40 runs of two keys (limit 1) against a tool that answers after 100 ms: read in commit order
   * (GET /v1/events), no run of a key starts while another is active, and each key's runs start in
   * creation order once they queued.
   */
  @BothDatabases
  void two_engines_on_one_database_run_the_runs_of_a_key_one_at_a_time(Api api) throws Exception {
    try (dev.runway.support.ToolServer tool = dev.runway.support.ToolServer.start();
         var first = api.database().startEngine(); var second = api.database().startEngine()) {
      tool.script("/work", dev.runway.support.ToolServer.Reply.json(200, "{}").after(Duration.ofMillis(100)));
      api.test(http -> {
        assertEquals(201, http.put("/v1/workflows/per-customer", "{" + ONE_AT_A_TIME + ", \"steps\": [{\"type\": "
            + "\"http\", \"url\": \"" + tool.url("/work") + "\"}]}").status());
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<String> ids;
        try {
          List<Future<String>> starts = new ArrayList<>();
          for (int i = 0; i < 40; i++) {
            String customer = i % 2 == 0 ? "acme" : "globex";
            starts.add(pool.submit(() -> Runs.start(http, "per-customer", "demo", "{\"customer\": \"" + customer
                + "\"}").get("id").asText()));
          }
          ids = new ArrayList<>();
          for (Future<String> f : starts) {
            ids.add(f.get());
          }
        } finally {
          pool.shutdownNow();
        }
        for (String id : ids) {
          Runs.await(http, id, "succeeded", r -> r.get("status").asText().equals("succeeded"), Duration.ofSeconds(60));
        }
        java.util.Map<String, String> keys = new java.util.HashMap<>();
        for (String id : ids) {
          keys.put(id, http.get("/v1/runs/" + id).json().get("concurrency_key").asText());
        }
        java.util.Map<String, Integer> active = new java.util.HashMap<>();
        java.util.Map<String, List<String>> started = new java.util.HashMap<>();
        java.util.Map<String, List<String>> queued = new java.util.HashMap<>();
        for (JsonNode e : http.all("/v1/events?limit=1000")) {
          String run = e.get("run_id").asText();
          String key = keys.get(run);
          switch (e.get("type").asText()) {
            case "run.queued" -> queued.computeIfAbsent(key, k -> new ArrayList<>()).add(run);
            case "run.started" -> {
              assertEquals(1, (int) active.merge(key, 1, Integer::sum), "a second run of " + key + " started: " + run);
              started.computeIfAbsent(key, k -> new ArrayList<>()).add(run);
            }
            case "run.succeeded" -> active.merge(key, -1, Integer::sum);
            default -> { }
          }
        }
        assertEquals(20, started.get("acme").size());
        assertEquals(20, started.get("globex").size());
        for (String key : List.of("acme", "globex")) {
          List<String> waited = started.get(key).stream().filter(queued.getOrDefault(key, List.of())::contains).toList();
          assertEquals(waited.stream().sorted().toList(), waited, key + "'s queued runs started in creation order");
          assertFalse(waited.isEmpty(), key + ": none waited");
        }
      });
    }
  }

  /**
   * Two instances on one PostgreSQL, each with its own pool and group commit, start 24 runs of one
   * key at once (limit 2), then cancel the active ones from both sides at once until none is left:
   * at no time are more than 2 active, and the queued ones start in creation order (of starts that
   * race, whichever commits first takes a free place).
   */
  @Test
  void two_instances_on_one_postgresql_never_let_more_than_limit_runs_of_a_key_be_active() {
    Assumptions.assumeTrue(TestDatabase.postgresReachable() || TestDatabase.PG_REQUIRED, "PostgreSQL is not reachable");
    Api api = Api.on(TestDatabase.POSTGRESQL);
    api.testTwoInstances((first, second) -> {
      assertEquals(201, first.put("/v1/workflows/per-customer", "{\"requires_approval\": true, \"concurrency\": "
          + "{\"key\": \"{{inputs.customer}}\", \"limit\": 2}}").status());
      ExecutorService pool = Executors.newFixedThreadPool(8);
      try {
        List<Future<String>> starts = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
          Http http = i % 2 == 0 ? first : second;
          starts.add(pool.submit(() -> Runs.start(http, "per-customer", "demo", "{\"customer\": \"acme\"}")
              .get("id").asText()));
        }
        for (Future<String> f : starts) {
          f.get();
        }
        assertEquals(2, Collections.frequency(statuses(api, "per-customer"), "awaiting_approval"),
            () -> runs(api, "per-customer").toString());
        AtomicInteger rounds = new AtomicInteger();
        List<String> startedInOrder = new ArrayList<>();
        while (statuses(api, "per-customer").stream().anyMatch(s -> s.equals("awaiting_approval"))) {
          assertTrue(rounds.incrementAndGet() < 100, "rounds");
          List<String> active = runs(api, "per-customer").stream().filter(r -> r.endsWith(" awaiting_approval"))
              .map(r -> r.split(" ")[0]).toList();
          assertTrue(active.size() <= 2, active::toString);
          active.stream().filter(id -> !startedInOrder.contains(id)).sorted().forEach(startedInOrder::add);
          // Both instances cancel every active run at once: one of each pair wins, the other gets 409.
          List<Future<Integer>> cancels = new ArrayList<>();
          for (String id : active) {
            cancels.add(pool.submit(() -> first.post("/v1/runs/" + id + "/cancel", "{}").status()));
            cancels.add(pool.submit(() -> second.post("/v1/runs/" + id + "/cancel", "{}").status()));
          }
          for (Future<Integer> c : cancels) {
            int status = c.get();
            assertTrue(status == 200 || status == 409, "cancel: " + status);
          }
        }
        assertEquals(24, Collections.frequency(statuses(api, "per-customer"), "canceled"));
        List<String> ids = runs(api, "per-customer").stream().map(r -> r.split(" ")[0]).toList();
        // The first two are those whose starts committed first; the queued ones start in creation order.
        List<String> queued = ids.stream().filter(id -> !startedInOrder.subList(0, 2).contains(id)).toList();
        assertEquals(queued, startedInOrder.subList(2, 24), "the queued runs started in creation order");
        // From the runs' timelines: when each started and ended; never more than 2 at once.
        List<long[]> moves = new ArrayList<>(); // {time, +1 start or -1 end}, ends first at a tie
        for (String id : ids) {
          for (JsonNode e : first.get("/v1/runs/" + id + "/events").json().get("data")) {
            long at = java.time.Instant.parse(e.get("created_at").asText()).toEpochMilli();
            if (e.get("type").asText().equals("run.started")) {
              moves.add(new long[] {at, 1});
            } else if (e.get("type").asText().equals("run.canceled")) {
              moves.add(new long[] {at, -1});
            }
          }
        }
        moves.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
        int now = 0;
        for (long[] move : moves) {
          now += (int) move[1];
          assertTrue(now <= 2, "more than 2 active at " + move[0]);
        }
        assertEquals(48, moves.size());
        int active = api.jdbi().withHandle(h -> h.createQuery("SELECT active FROM concurrency_slot WHERE "
            + "workspace_id = :ws").bind("ws", api.workspace).mapTo(Integer.class).one());
        assertEquals(0, active);
      } finally {
        pool.shutdownNow();
      }
    });
  }
}
