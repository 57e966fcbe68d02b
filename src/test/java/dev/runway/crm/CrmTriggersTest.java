package dev.runway.crm;

import static dev.runway.crm.CrmRecordsTest.batch;
import static dev.runway.crm.CrmRecordsTest.record;
import static dev.runway.crm.CrmRecordsTest.statuses;
import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.Runway;
import dev.runway.auth.Scope;
import dev.runway.config.Settings;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.db.Database;
import dev.runway.instance.Leases;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import dev.runway.trigger.RunRequestDao;
import dev.runway.trigger.TriggerProcessor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Workflows started by record changes: the change's commit queues one run request per matching
 * change, and the trigger processor makes one run per request and workflow, with the record and the
 * kind of change in its inputs; nothing for unchanged or stale records. The processor makes its
 * runs a few per commit, workspace by workspace in turn, exactly once also across a restart; only
 * triggers in the syncing key's projects fire.
 */
class CrmTriggersTest {
  private static final String SYNC = "/v1/crm/contacts/records/sync";

  /** Runs pause at their approval gate: these tests start no engine, and nothing moves them on. */
  private static void putWorkflows(Http http) {
    Http.Reply all = http.put("/v1/workflows/on-contact", "{\"requires_approval\":true,\"triggers\":"
        + "[{\"crm\":\"contacts\",\"on\":[\"created\",\"updated\",\"deleted\"]}]}");
    assertEquals(201, all.status(), all::toString);
    assertEquals(Json.tree("[{\"crm\":\"contacts\",\"on\":[\"created\",\"updated\",\"deleted\"],\"project\":\"crm\"}]"),
        all.json().get("triggers"));
    Http.Reply created = http.put("/v1/workflows/welcome", "{\"requires_approval\":true,\"triggers\":"
        + "[{\"crm\":\"contacts\",\"on\":[\"created\"],\"project\":\"sales\"},{\"crm\":\"deals\",\"on\":[\"deleted\"]}]}");
    assertEquals(201, created.status(), created::toString);
  }

  /** A processor as the engine starts one, polling often (the tests' services wake nothing). */
  static TriggerProcessor processor(Api api) {
    Database db = api.services().database();
    return TriggerProcessor.start(db.jdbi(), db.committer(), api.services().starts(), Duration.ofMillis(20), leases());
  }

  /**
   * An instance's leases with no heartbeat behind them: of an hour, so that they stay live for the
   * test (a processor's leases are renewed by its commits, not by the heartbeat).
   */
  static Leases leases() {
    return new Leases(Ids.newId("ins"), Duration.ofHours(1), Duration.ofSeconds(1), System::nanoTime);
  }

  /** Waits until the workspace has no queued run requests: the processor has made all its runs. */
  static void settled(Api api, String workspace) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
    while (queued(api, workspace) > 0) {
      assertTrue(System.nanoTime() < deadline, queued(api, workspace) + " run requests still queued");
      sleep(20);
    }
  }

  static int queued(Api api, String workspace) {
    return api.jdbi().withExtension(RunRequestDao.class, dao -> dao.countQueued(workspace));
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }

  private static int countRuns(Api api, String workspace) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM run WHERE workspace_id = :ws")
        .bind("ws", workspace).mapTo(Integer.class).one());
  }

  /** A sync body of {@code n} new records {@code prefix0 … prefix(n-1)}. */
  private static String newRecords(String prefix, int n) {
    List<String> records = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      records.add(record(prefix + i, "{\"n\":" + i + "}"));
    }
    return batch(records.toArray(String[]::new));
  }

  /** Workflows {@code prefix0 …} that each start a run (stopping at its approval gate) for each new contact. */
  private static void onCreated(Http http, String prefix, int n, String project) {
    for (int i = 0; i < n; i++) {
      Http.Reply put = http.put("/v1/workflows/" + prefix + i, "{\"requires_approval\":true,\"triggers\":"
          + "[{\"crm\":\"contacts\",\"on\":[\"created\"],\"project\":\"" + project + "\"}]}");
      assertEquals(201, put.status(), put::toString);
    }
  }

  /** The runs of a workflow, oldest first, each as (change, external_id, project). */
  private static List<String> runs(Api api, String workflow) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT inputs, project FROM run WHERE workspace_id = :ws "
        + "AND workflow_id = :wf ORDER BY id").bind("ws", api.workspace).bind("wf", workflow).map((rs, ctx) -> {
          JsonNode inputs = Json.tree(rs.getString("inputs"));
          return inputs.get("change").asText() + " " + inputs.get("record").get("external_id").asText() + " "
              + rs.getString("project");
        }).list());
  }

  @BothDatabases
  void each_kind_of_change_starts_the_workflows_that_listen_for_it_and_nothing_else_does(Api api) {
    api.test(http -> {
      try (TriggerProcessor processor = processor(api)) {
        eachKindOfChange(api, http);
      }
    });
  }

  private static void eachKindOfChange(Api api, Http http) {
    {
      putWorkflows(http);
      assertEquals(List.of("created", "created"), statuses(http.post(SYNC,
          batch(record("c1", "{\"email\":\"ann@example.com\"}"), record("c2", "{}")))));
      settled(api, api.workspace);
      assertEquals(List.of("created c1 crm", "created c2 crm"), runs(api, "on-contact"));
      assertEquals(List.of("created c1 sales", "created c2 sales"), runs(api, "welcome"));

      // Unchanged and stale records start nothing.
      http.post(SYNC, batch(record("c1", "{\"email\":\"ann@example.com\"}")));
      http.post(SYNC, batch("{\"external_id\":\"c2\",\"properties\":{\"x\":1},\"source_updated_at\":\"2026-01-02T00:00:00Z\"}"));
      settled(api, api.workspace);
      int before = runs(api, "on-contact").size();
      assertEquals(List.of("unchanged", "stale"), statuses(http.post(SYNC, batch(record("c1", "{\"email\":\"ann@example.com\"}"),
          "{\"external_id\":\"c2\",\"properties\":{\"x\":2},\"source_updated_at\":\"2026-01-01T00:00:00Z\"}"))));
      assertEquals(before, runs(api, "on-contact").size());

      assertEquals(200, http.delete("/v1/crm/contacts/records/c1").status());
      http.post(SYNC, batch("{\"external_id\":\"c2\",\"deleted\":true}"));
      assertEquals(200, http.delete("/v1/crm/contacts/records/c1").status(), "deleting again starts nothing");
      settled(api, api.workspace);
      assertEquals(List.of("created c1 crm", "created c2 crm", "updated c2 crm", "deleted c1 crm", "deleted c2 crm"),
          runs(api, "on-contact"));
      assertEquals(2, runs(api, "welcome").size(), "welcome listens for created contacts only");

      // Another object type starts only what listens to it.
      http.post("/v1/crm/deals/records/sync", batch(record("d1", "{}")));
      settled(api, api.workspace);
      assertEquals(2, runs(api, "welcome").size());
      http.post("/v1/crm/deals/records/sync", batch("{\"external_id\":\"d1\",\"deleted\":true}"));
      settled(api, api.workspace);
      assertEquals(List.of("created c1 sales", "created c2 sales", "deleted d1 crm"), runs(api, "welcome"));
    }
  }

  @BothDatabases
  void a_triggered_run_carries_the_record_and_the_change_and_is_an_ordinary_run(Api api) {
    api.test(http -> {
      try (TriggerProcessor processor = processor(api)) {
        aTriggeredRun(api, http);
      }
    });
  }

  private static void aTriggeredRun(Api api, Http http) {
    {
      putWorkflows(http);
      Http.Reply synced = http.post(SYNC, batch("{\"external_id\":\"hs-1\",\"properties\":{\"email\":\"ann@example.com\"},"
          + "\"source_updated_at\":\"2026-11-20T10:00:00.000Z\"}"));
      assertEquals(200, synced.status());
      settled(api, api.workspace);
      Http.Reply list = http.get("/v1/runs?workflow=on-contact");
      assertEquals(1, list.json().get("data").size(), list::toString);
      JsonNode run = list.json().get("data").get(0);
      assertEquals("workflow", run.get("kind").asText());
      assertEquals("crm", run.get("project").asText());
      assertEquals("awaiting_approval", run.get("status").asText(), "it stops at its gate as any run does");
      JsonNode inputs = run.get("inputs");
      assertEquals("created", inputs.get("change").asText());
      JsonNode record = inputs.get("record");
      assertEquals("contacts", record.get("object_type").asText());
      assertEquals("hs-1", record.get("external_id").asText());
      assertEquals(Json.tree("{\"email\":\"ann@example.com\"}"), record.get("properties"));
      assertEquals(1, record.get("version").asInt());
      assertEquals(false, record.get("deleted").asBoolean());
      assertEquals("2026-11-20T10:00:00.000Z", record.get("source_updated_at").asText());
      // Its start event names the key that synced.
      JsonNode events = http.get("/v1/runs/" + run.get("id").asText() + "/events").json().get("data");
      assertEquals("run.started", events.get(0).get("type").asText());
      assertTrue(events.get(0).get("actor").asText().startsWith("key_"), events.toString());

      // An archived workflow is not started any more.
      assertEquals(200, http.delete("/v1/workflows/on-contact").status());
      http.post(SYNC, batch(record("hs-2", "{}")));
      settled(api, api.workspace);
      assertEquals(1, runs(api, "on-contact").size());
      assertEquals(2, runs(api, "welcome").size());
    }
  }

  @BothDatabases
  void a_triggered_run_whose_inputs_break_the_workflows_inputs_schema_fails_naming_the_field(Api api) {
    api.test(http -> {
      try (TriggerProcessor processor = processor(api)) {
        Http.Reply put = http.put("/v1/workflows/needs-email", """
            {"triggers":[{"crm":"contacts","on":["created"]}],
             "inputs_schema":{"type":"object","properties":{"record":{"type":"object","properties":
               {"properties":{"type":"object","required":["email"]}}}}}}""");
        assertEquals(201, put.status(), put::toString);
        assertEquals(200, http.post(SYNC, batch(record("no-email", "{\"name\":\"Ann\"}"),
            record("has-email", "{\"email\":\"bo@example.com\"}"))).status());
        settled(api, api.workspace);
        JsonNode runs = http.get("/v1/runs?workflow=needs-email").json().get("data");
        assertEquals(2, runs.size(), runs::toString);
        for (JsonNode run : runs) {
          String id = run.get("inputs").get("record").get("external_id").asText();
          if (id.equals("no-email")) {
            assertEquals("failed", run.get("status").asText(), run::toString);
            assertEquals("inputs_invalid", run.get("error").get("code").asText(), run::toString);
            assertEquals("inputs.record.properties.email", run.get("error").get("field").asText(), run::toString);
          } else {
            assertEquals("succeeded", run.get("status").asText(), run::toString);
          }
        }
      }
    });
  }

  @BothDatabases
  void a_sync_of_1000_records_queues_its_runs_and_the_processor_makes_each_exactly_once(Api api) {
    api.test(http -> {
      onCreated(http, "many-", 3, "crm");
      // No processor yet: the sync's commit holds one small request per change, and no run.
      Http.Reply synced = http.post(SYNC, newRecords("big-", 1000));
      assertEquals(200, synced.status(), synced::toString);
      assertEquals(1000, synced.json().get("summary").get("created").asInt());
      assertEquals(1000, queued(api, api.workspace));
      assertEquals(0, countRuns(api, api.workspace), "the sync's commit starts no run");

      try (TriggerProcessor processor = processor(api)) {
        settled(api, api.workspace);
      }
      List<String> made = new ArrayList<>();
      for (int w = 0; w < 3; w++) {
        String workflow = "many-" + w;
        made.addAll(runs(api, workflow).stream().map(r -> workflow + " " + r).toList());
      }
      assertEquals(3000, made.size());
      assertEquals(3000, new HashSet<>(made).size(), "one run per change and workflow, none twice");
      assertEquals(3000, countRuns(api, api.workspace));
      // Ids sort as the changes did: each workflow's runs are listed in the records' order.
      assertEquals("created big-0 crm", runs(api, "many-0").get(0));
      assertEquals("created big-999 crm", runs(api, "many-0").get(999));
    });
  }

  @BothDatabases
  void a_key_limited_to_projects_fires_only_the_triggers_of_those_projects(Api api) {
    api.test(http -> {
      onCreated(http, "in-a-", 1, "a");
      onCreated(http, "in-crm-", 1, "crm");
      var limited = api.services().keys().create(api.workspace, "project a", List.of(Scope.CRM_WRITE), List.of("a"), null);
      try (TriggerProcessor processor = processor(api)) {
        Http.Reply synced = http.post(SYNC, limited.key(), batch(record("p1", "{}")));
        assertEquals(200, synced.status(), synced::toString);
        settled(api, api.workspace);
        assertEquals(List.of("created p1 a"), runs(api, "in-a-0"));
        assertEquals(List.of(), runs(api, "in-crm-0"), "project crm is outside the key's projects");
        // The run is started by the workspace on that key's behalf: its start event names the key.
        String actor = api.jdbi().withHandle(h -> h.createQuery("SELECT e.actor FROM event e JOIN run r ON r.id = e.run_id "
            + "WHERE r.workspace_id = :ws AND r.workflow_id = 'in-a-0' AND e.type = 'run.started'")
            .bind("ws", api.workspace).mapTo(String.class).one());
        assertEquals(limited.record().id(), actor);

        // A key of the whole workspace fires both.
        http.post(SYNC, batch(record("p2", "{}")));
        settled(api, api.workspace);
        assertEquals(List.of("created p1 a", "created p2 a"), runs(api, "in-a-0"));
        assertEquals(List.of("created p2 crm"), runs(api, "in-crm-0"));
      }
    });
  }

  @BothDatabases
  void processing_resumes_after_a_restart_and_a_crashed_processors_leases_run_out(Api api) {
    api.test(http -> {
      onCreated(http, "resume-", 2, "crm");
      assertEquals(200, http.post(SYNC, newRecords("r-", 300)).status());
      try (TriggerProcessor first = processor(api)) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (countRuns(api, api.workspace) == 0) {
          assertTrue(System.nanoTime() < deadline, "no run made");
          sleep(5);
        }
      }
      // What is still queued is held by a processor that died: its leases run out in a second.
      api.jdbi().useHandle(h -> h.createUpdate("UPDATE run_request SET lease_owner = 'trg_dead', lease_until = :until "
          + "WHERE workspace_id = :ws").bind("ws", api.workspace)
          .bind("until", java.time.Instant.now().plusSeconds(1)).execute());
      Database db = api.services().database();
      try (TriggerProcessor second = TriggerProcessor.start(db.jdbi(), db.committer(), api.services().starts(),
          Duration.ofMillis(20), leases())) {
        settled(api, api.workspace);
      }
      List<String> made = new ArrayList<>(runs(api, "resume-0").stream().map(r -> "resume-0 " + r).toList());
      made.addAll(runs(api, "resume-1").stream().map(r -> "resume-1 " + r).toList());
      assertEquals(600, made.size());
      assertEquals(600, new HashSet<>(made).size(), "none twice");
      assertEquals(600, countRuns(api, api.workspace));
    });
  }

  @BothDatabases
  void two_processors_share_a_backlog_and_make_each_run_once(Api api) {
    api.test(http -> {
      onCreated(http, "shared-", 2, "crm");
      assertEquals(200, http.post(SYNC, newRecords("s-", 500)).status());
      // As two instances on one database: each claims with its own leases.
      try (TriggerProcessor one = processor(api); TriggerProcessor two = processor(api)) {
        settled(api, api.workspace);
      }
      List<String> made = new ArrayList<>(runs(api, "shared-0").stream().map(r -> "shared-0 " + r).toList());
      made.addAll(runs(api, "shared-1").stream().map(r -> "shared-1 " + r).toList());
      assertEquals(1000, made.size());
      assertEquals(1000, new HashSet<>(made).size(), "none twice");
      assertEquals(1000, countRuns(api, api.workspace));
    });
  }

  @BothDatabases
  void one_workspaces_backlog_does_not_hold_back_anothers_runs(Api api) {
    String other = Api.newWorkspaceId();
    String otherKey = api.keyIn(other, null, Scope.values());
    api.test(http -> {
      onCreated(http, "flood-", 3, "crm");
      assertEquals(200, http.post(SYNC, newRecords("f-", 400)).status());
      assertEquals(201, http.send("PUT", "/v1/workflows/welcome", otherKey, "{\"requires_approval\":true,\"triggers\":"
          + "[{\"crm\":\"contacts\",\"on\":[\"created\"]}]}", "application/json").status());
      // Queued after the 1,200 runs of the first workspace.
      assertEquals(200, http.post(SYNC, otherKey, batch(record("late", "{}"))).status());
      try (TriggerProcessor processor = processor(api)) {
        settled(api, other);
        settled(api, api.workspace);
      }
      assertEquals(1200, countRuns(api, api.workspace));
      // Workspaces take turns, a commit of at most 25 runs each: the other workspace's run came
      // after one such commit of the flood at most, not after all of it.
      int floodFirst = api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM run WHERE workspace_id = :ws "
          + "AND created_at <= (SELECT created_at FROM run WHERE workspace_id = :other)")
          .bind("ws", api.workspace).bind("other", other).mapTo(Integer.class).one());
      assertTrue(floodFirst <= 2 * TriggerProcessor.RUNS_PER_COMMIT, floodFirst + " runs of the flood came first");
    });
  }

  @BothDatabases
  void a_server_makes_triggered_runs_with_its_engine_and_after_a_restart_those_queued_while_it_was_off(TestDatabase db)
      throws Exception {
    Settings settings = db.settingsForFreshDatabase();
    String key;
    // Without the engine nothing makes the runs: the requests wait in the queue.
    try (Runway runway = Runway.start(settings.with("engine.enabled", "false"))) {
      key = runway.keys().create("server", "app", List.of(Scope.values()), null, null).key();
      Http server = Http.onPort(runway.port(), key);
      assertEquals(201, server.put("/v1/workflows/on-contact", "{\"requires_approval\":true,\"triggers\":"
          + "[{\"crm\":\"contacts\",\"on\":[\"created\"]}]}").status());
      assertEquals(200, server.post(SYNC, newRecords("off-", 60)).status());
      assertEquals(0, onContactRuns(server), "no engine, no runs");
    }
    try (Runway runway = Runway.start(settings.with("engine.enabled", "true"))) {
      Http server = Http.onPort(runway.port(), key);
      awaitOnContactRuns(server, 60);
      // A sync now wakes the processor: its run follows.
      assertEquals(200, server.post(SYNC, newRecords("on-", 1)).status());
      awaitOnContactRuns(server, 61);
    }
  }

  /** How many runs of on-contact the API of a started server lists. */
  private static int onContactRuns(Http server) {
    return server.all("/v1/runs?workflow=on-contact&limit=100").size();
  }

  private static void awaitOnContactRuns(Http server, int expected) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    int seen;
    while ((seen = onContactRuns(server)) < expected) {
      assertTrue(System.nanoTime() < deadline, seen + " runs of " + expected);
      Thread.sleep(50);
    }
    assertEquals(expected, seen, "none twice");
  }

  @BothDatabases
  void bad_triggers_are_400_naming_the_field(Api api) {
    api.test(http -> {
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\":{}}"), 400, "validation_failed", "triggers");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\":[1]}"), 400, "validation_failed", "triggers[0]");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\":[{\"on\":[\"created\"]}]}"), 400, "validation_failed",
          "triggers[0].crm");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\":[{\"crm\":\"Contacts\",\"on\":[\"created\"]}]}"), 400,
          "validation_failed", "triggers[0].crm");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\":[{\"crm\":\"contacts\"}]}"), 400, "validation_failed",
          "triggers[0].on");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\":[{\"crm\":\"contacts\",\"on\":[]}]}"), 400,
          "validation_failed", "triggers[0].on");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\":[{\"crm\":\"contacts\",\"on\":[\"changed\"]}]}"), 400,
          "validation_failed", "triggers[0].on");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\":[{\"crm\":\"contacts\",\"on\":[\"created\",\"created\"]}]}"),
          400, "validation_failed", "triggers[0].on");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\":[{\"crm\":\"contacts\",\"on\":[\"created\"],\"when\":1}]}"),
          400, "unknown_parameter", "triggers[0].when");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\":[{\"crm\":\"contacts\",\"on\":[\"created\"],"
          + "\"project\":\"No\"}]}"), 400, "validation_failed", "triggers[0].project");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\":[{\"crm\":\"a\",\"on\":[\"created\"]},"
          + "{\"crm\":\"a\",\"on\":[\"deleted\"]}]}"), 400, "validation_failed", "triggers[1].crm");
      assertProblem(http.get("/v1/workflows/w"), 404, "workflow_not_found");

      // Replacing a workflow replaces its triggers.
      assertEquals(201, http.put("/v1/workflows/w", "{\"triggers\":[{\"crm\":\"contacts\",\"on\":[\"created\"]}]}").status());
      assertEquals(200, http.put("/v1/workflows/w", "{\"triggers\":[]}").status());
      http.post(SYNC, batch(record("x", "{}")));
      assertEquals(0, queued(api, api.workspace), "no trigger, nothing queued");
      assertEquals(0, runs(api, "w").size());
      List<String> stored = new ArrayList<>(api.jdbi().withHandle(h -> h.createQuery(
          "SELECT object_type FROM crm_trigger WHERE workspace_id = :ws").bind("ws", api.workspace)
          .mapTo(String.class).list()));
      assertEquals(List.of(), stored);
    });
  }
}
