package dev.runway.crm;

import static dev.runway.crm.CrmRecordsTest.batch;
import static dev.runway.crm.CrmRecordsTest.record;
import static dev.runway.crm.CrmRecordsTest.statuses;
import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.util.ArrayList;
import java.util.List;

/**
 * Workflows started by record changes: one run per matching change and workflow, committed with
 * the change, with the record and the kind of change in its inputs; nothing for unchanged or
 * stale records.
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
      putWorkflows(http);
      assertEquals(List.of("created", "created"), statuses(http.post(SYNC,
          batch(record("c1", "{\"email\":\"ann@example.com\"}"), record("c2", "{}")))));
      // Committed with the sync: the runs are there as soon as its answer is.
      assertEquals(List.of("created c1 crm", "created c2 crm"), runs(api, "on-contact"));
      assertEquals(List.of("created c1 sales", "created c2 sales"), runs(api, "welcome"));

      // Unchanged and stale records start nothing.
      http.post(SYNC, batch(record("c1", "{\"email\":\"ann@example.com\"}")));
      http.post(SYNC, batch("{\"external_id\":\"c2\",\"properties\":{\"x\":1},\"source_updated_at\":\"2026-01-02T00:00:00Z\"}"));
      int before = runs(api, "on-contact").size();
      assertEquals(List.of("unchanged", "stale"), statuses(http.post(SYNC, batch(record("c1", "{\"email\":\"ann@example.com\"}"),
          "{\"external_id\":\"c2\",\"properties\":{\"x\":2},\"source_updated_at\":\"2026-01-01T00:00:00Z\"}"))));
      assertEquals(before, runs(api, "on-contact").size());

      assertEquals(200, http.delete("/v1/crm/contacts/records/c1").status());
      http.post(SYNC, batch("{\"external_id\":\"c2\",\"deleted\":true}"));
      assertEquals(200, http.delete("/v1/crm/contacts/records/c1").status(), "deleting again starts nothing");
      assertEquals(List.of("created c1 crm", "created c2 crm", "updated c2 crm", "deleted c1 crm", "deleted c2 crm"),
          runs(api, "on-contact"));
      assertEquals(2, runs(api, "welcome").size(), "welcome listens for created contacts only");

      // Another object type starts only what listens to it.
      http.post("/v1/crm/deals/records/sync", batch(record("d1", "{}")));
      assertEquals(2, runs(api, "welcome").size());
      http.post("/v1/crm/deals/records/sync", batch("{\"external_id\":\"d1\",\"deleted\":true}"));
      assertEquals(List.of("created c1 sales", "created c2 sales", "deleted d1 crm"), runs(api, "welcome"));
    });
  }

  @BothDatabases
  void a_triggered_run_carries_the_record_and_the_change_and_is_an_ordinary_run(Api api) {
    api.test(http -> {
      putWorkflows(http);
      Http.Reply synced = http.post(SYNC, batch("{\"external_id\":\"hs-1\",\"properties\":{\"email\":\"ann@example.com\"},"
          + "\"source_updated_at\":\"2026-11-20T10:00:00.000Z\"}"));
      assertEquals(200, synced.status());
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
      assertEquals(1, runs(api, "on-contact").size());
      assertEquals(2, runs(api, "welcome").size());
    });
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
      assertEquals(0, runs(api, "w").size());
      List<String> stored = new ArrayList<>(api.jdbi().withHandle(h -> h.createQuery(
          "SELECT object_type FROM crm_trigger WHERE workspace_id = :ws").bind("ws", api.workspace)
          .mapTo(String.class).list()));
      assertEquals(List.of(), stored);
    });
  }
}
