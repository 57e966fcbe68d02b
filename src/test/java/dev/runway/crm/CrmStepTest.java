package dev.runway.crm;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.Scope;
import dev.runway.core.Json;
import dev.runway.engine.Engine;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import dev.runway.support.ToolServer;
import dev.runway.support.ToolServer.Reply;
import dev.runway.trigger.TriggerProcessor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Workflows' {@code crm} steps through HTTP on both databases: records made by expressions from the
 * inputs and earlier steps, written as a sync writes them (records, change feed, the sync's answer
 * as the step's output) in the commit that reaches the step, so these runs need no engine; records
 * the sync would refuse fail the step ({@code crm_invalid}); crm steps inside a foreach; the scope
 * a PUT needs; bad definitions; and the depth bound that stops a workflow whose records trigger it.
 */
class CrmStepTest {

  private static void put(Http http, String id, String body) {
    Http.Reply reply = http.put("/v1/workflows/" + id, body);
    assertTrue(reply.status() == 200 || reply.status() == 201, reply::toString);
  }

  private static JsonNode run(Http http, String id) {
    return http.get("/v1/runs/" + id).json();
  }

  @BothDatabases
  void a_crm_step_writes_records_from_inputs_and_earlier_steps_and_answers_as_the_sync(Api api) {
    api.test(http -> {
      put(http, "import", """
          {"steps":[{"id":"people","type":"crm","object_type":"contacts","records":"{{ inputs.contacts }}"},
                    {"id":"deal","type":"crm","object_type":"deals","mode":"replace",
                     "records":[{"external_id":"deal-{{ inputs.deal }}",
                                 "properties":{"contacts":"{{ steps.people.output.summary.created }}",
                                               "first":"{{ steps.people.output.results[0].external_id }}",
                                               "tier":"{{ inputs.tier }}"}}]}],
           "output":"{{ steps.deal.output.summary }}"}
          """);
      String inputs = """
          {"deal":7,"tier":"gold","contacts":[{"external_id":"c-1","properties":{"name":"Ann","vip":true}},
                                              {"external_id":"c-2","properties":{"name":"Bob"}}]}
          """;
      String id = Runs.start(http, "import", "demo", inputs).get("id").asText();
      JsonNode done = run(http, id);
      assertEquals("succeeded", done.get("status").asText(), "written in the commit that started the run: " + done);

      JsonNode people = done.get("steps").get(0);
      assertEquals("crm", people.get("type").asText());
      assertEquals("succeeded", people.get("status").asText());
      assertEquals(Json.tree("{\"created\":2,\"updated\":0,\"unchanged\":0,\"deleted\":0,\"stale\":0,\"failed\":0}"),
          people.get("output").get("summary"), people::toString);
      assertEquals("c-1", people.get("output").get("results").get(0).get("external_id").asText());
      assertEquals("created", people.get("output").get("results").get(1).get("status").asText());
      assertEquals(Json.tree("{\"created\":1,\"updated\":0,\"unchanged\":0,\"deleted\":0,\"stale\":0,\"failed\":0}"),
          done.get("output"));

      JsonNode ann = http.get("/v1/crm/contacts/records/c-1").json();
      assertEquals(Json.tree("{\"name\":\"Ann\",\"vip\":true}"), ann.get("properties"), ann::toString);
      JsonNode deal = http.get("/v1/crm/deals/records/deal-7").json();
      assertEquals(Json.tree("{\"contacts\":2,\"first\":\"c-1\",\"tier\":\"gold\"}"), deal.get("properties"),
          deal::toString);
      List<String> changes = new ArrayList<>();
      http.get("/v1/crm/contacts/changes").json().get("data")
          .forEach(c -> changes.add(c.get("change").asText() + " " + c.get("external_id").asText()));
      assertEquals(List.of("created c-1", "created c-2"), changes);

      // The same records again: the step's output is what the sync endpoint answers for them.
      Http.Reply synced = http.post("/v1/crm/contacts/records/sync",
          "{\"records\":" + Json.tree(inputs).get("contacts") + "}");
      assertEquals(200, synced.status(), synced::toString);
      JsonNode again = run(http, Runs.start(http, "import", "demo", inputs).get("id").asText());
      assertEquals("succeeded", again.get("status").asText(), again::toString);
      assertEquals(synced.json(), again.get("steps").get(0).get("output"));
      assertEquals(1, again.get("steps").get(0).get("output").get("results").get(0).get("version").asInt());
      assertEquals(2, http.get("/v1/crm/contacts/changes").json().get("data").size(), "unchanged: nothing written");
      JsonNode dealAgain = http.get("/v1/crm/deals/records/deal-7").json();
      assertEquals(2, dealAgain.get("version").asInt(), "none created this time: the deal changed");
      assertEquals(Json.tree("{\"contacts\":0,\"first\":\"c-1\",\"tier\":\"gold\"}"), dealAgain.get("properties"));
    });
  }

  /** Between two http steps the engine makes: the crm step runs in the commit that records the first call's answer. */
  @BothDatabases
  void a_crm_step_between_http_steps_writes_what_a_tool_answered(Api api) {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      tool.script("/lookup", Reply.json(200, "{\"people\":[{\"external_id\":\"p-1\",\"properties\":{\"n\":1}},"
          + "{\"external_id\":\"p-2\",\"properties\":{\"n\":2}}]}"));
      api.test(http -> {
        put(http, "lookup-and-save", """
            {"steps":[{"id":"lookup","type":"http","url":"%s"},
                      {"id":"save","type":"crm","object_type":"people","records":"{{ steps.lookup.output.people }}"},
                      {"id":"notify","type":"http","url":"%s","body":{"saved":"{{ steps.save.output.summary.created }}"}}]}
            """.formatted(tool.url("/lookup"), tool.url("/notify")));
        JsonNode done = Runs.awaitStatus(http, Runs.start(http, "lookup-and-save", "demo", "{}").get("id").asText(),
            "succeeded");
        assertEquals(2, done.get("steps").get(1).get("output").get("summary").get("created").asInt(), done::toString);
        assertEquals(Json.tree("{\"saved\":2}"), tool.calls("/notify").get(0).body());
        assertEquals(2, http.get("/v1/crm/people/records/p-2").json().get("properties").get("n").asInt());
      });
    }
  }

  @BothDatabases
  void records_the_sync_would_refuse_fail_the_step_and_on_failure_continue_goes_on(Api api) {
    api.test(http -> {
      put(http, "strict", """
          {"steps":[{"id":"write","type":"crm","object_type":"contacts","records":"{{ inputs.records }}"}]}
          """);
      JsonNode failed = run(http, Runs.start(http, "strict", "demo", "{\"records\":{\"external_id\":\"x\"}}")
          .get("id").asText());
      assertEquals("failed", failed.get("status").asText(), failed::toString);
      JsonNode step = failed.get("steps").get(0);
      assertEquals("failed", step.get("status").asText());
      assertEquals("crm_invalid", step.get("error").get("code").asText(), step::toString);
      assertTrue(step.get("error").get("message").asText().startsWith("records"), step::toString);
      assertEquals("crm_invalid", failed.get("error").get("code").asText());
      assertEquals(0, failed.get("error").get("step").asInt());

      // Too many records, and a batch of several records one of which is bad (as a sync: that one fails alone).
      JsonNode tooMany = run(http, Runs.start(http, "strict", "demo", "{\"records\":" + manyRecords(1001) + "}")
          .get("id").asText());
      assertEquals("crm_invalid", tooMany.get("steps").get(0).get("error").get("code").asText(), tooMany::toString);
      assertTrue(tooMany.get("steps").get(0).get("error").get("message").asText().contains("1000"), tooMany::toString);
      JsonNode mixed = run(http, Runs.start(http, "strict", "demo",
          "{\"records\":[{\"external_id\":\"ok-1\"},{\"external_id\":\"\"}]}").get("id").asText());
      assertEquals("succeeded", mixed.get("status").asText(), mixed::toString);
      JsonNode results = mixed.get("steps").get(0).get("output").get("results");
      assertEquals("created", results.get(0).get("status").asText());
      assertEquals("failed", results.get(1).get("status").asText());
      assertEquals("records[1].external_id", results.get(1).get("error").get("param").asText(), results::toString);
      assertProblem(http.get("/v1/crm/contacts/records/x"), 404, "record_not_found");
      assertEquals(1, http.get("/v1/crm/contacts/changes").json().get("data").size(), "only ok-1 was written");

      // on_failure: continue: the run goes on, and later steps see the failure.
      put(http, "lenient", """
          {"steps":[{"id":"write","type":"crm","object_type":"contacts","records":"{{ inputs.records }}",
                     "on_failure":"continue"},
                    {"id":"note","type":"crm","object_type":"notes",
                     "records":[{"external_id":"n-1","properties":{"write":"{{ steps.write.status }}"}}]}]}
          """);
      JsonNode lenient = run(http, Runs.start(http, "lenient", "demo", "{\"records\":\"c-9\"}").get("id").asText());
      assertEquals("succeeded", lenient.get("status").asText(), lenient::toString);
      assertEquals("failed", lenient.get("steps").get(0).get("status").asText());
      assertEquals("crm_invalid", lenient.get("steps").get(0).get("error").get("code").asText());
      assertEquals("failed", http.get("/v1/crm/notes/records/n-1").json().get("properties").get("write").asText());

      // An expression that fails is expression_failed, as in every other step.
      put(http, "broken", """
          {"steps":[{"type":"crm","object_type":"contacts","records":"{{ inputs.missing.list }}"}]}
          """);
      JsonNode broken = run(http, Runs.start(http, "broken", "demo", "{}").get("id").asText());
      assertEquals("expression_failed", broken.get("steps").get(0).get("error").get("code").asText(), broken::toString);
    });
  }

  /** A refusal comes before any write: the step fails and nothing of its records is stored. */
  @BothDatabases
  void a_crm_step_past_the_workspace_quota_fails_and_writes_nothing(Api api) {
    api.testWithServices(s -> s.with("quotas.crm_records_per_workspace", "2"), http -> {
      put(http, "three", """
          {"steps":[{"type":"crm","object_type":"contacts",
                     "records":[{"external_id":"q-1"},{"external_id":"q-2"},{"external_id":"q-3"}]}]}
          """);
      JsonNode failed = run(http, Runs.start(http, "three", "demo", "{}").get("id").asText());
      assertEquals("failed", failed.get("status").asText(), failed::toString);
      assertEquals("quota_exceeded", failed.get("steps").get(0).get("error").get("code").asText(), failed::toString);
      assertEquals(0, http.get("/v1/crm/contacts/records").json().get("data").size());
      assertEquals(0, http.get("/v1/crm/contacts/changes").json().get("data").size());
    });
  }

  @BothDatabases
  void crm_steps_inside_a_foreach_write_once_per_item(Api api) {
    api.test(http -> {
      put(http, "per-item", """
          {"steps":[{"id":"each","type":"foreach","items":"inputs.ids","concurrency":2,
                     "steps":[{"id":"save","type":"crm","object_type":"items",
                               "records":[{"external_id":"{{ item }}","properties":{"index":"{{ index }}"}}]}]}],
           "output":"{{ steps.each.output.map(o, o.results[0].status) }}"}
          """);
      JsonNode done = Runs.awaitStatus(http, Runs.start(http, "per-item", "demo", "{\"ids\":[\"a\",\"b\",\"c\"]}")
          .get("id").asText(), "succeeded");
      assertEquals(Json.tree("[\"created\",\"created\",\"created\"]"), done.get("output"), done::toString);
      assertEquals(3, done.get("steps").get(0).get("iterations").size());
      for (int i = 0; i < 3; i++) {
        JsonNode item = http.get("/v1/crm/items/records/" + "abc".charAt(i)).json();
        assertEquals(i, item.get("properties").get("index").asInt(), item::toString);
      }
    });
  }

  @BothDatabases
  void saving_a_workflow_with_a_crm_step_needs_crm_write_or_admin(Api api) {
    String writer = api.key(Scope.WORKFLOWS_WRITE, Scope.CRM_READ);
    String crmWriter = api.key(Scope.WORKFLOWS_WRITE, Scope.CRM_WRITE);
    String admin = api.key(Scope.WORKFLOWS_WRITE, Scope.ADMIN);
    String step = "{\"type\":\"crm\",\"object_type\":\"contacts\",\"records\":[{\"external_id\":\"c-1\"}]}";
    api.test(http -> {
      JsonNode refused = assertProblem(http.send("PUT", "/v1/workflows/sync", writer, "{\"steps\":[" + step + "]}",
          "application/json"), 403, "insufficient_scope", "steps[0].object_type");
      assertTrue(refused.get("detail").asText().contains("crm:write"), refused::toString);
      assertProblem(http.send("PUT", "/v1/workflows/sync", writer, "{\"steps\":[{\"type\":\"foreach\",\"items\":\"[1]\","
          + "\"steps\":[{\"type\":\"delay\",\"seconds\":1}," + step + "]}]}", "application/json"), 403,
          "insufficient_scope", "steps[0].steps[1].object_type");
      assertProblem(http.get("/v1/workflows/sync"), 404, "workflow_not_found");
      assertEquals(201, http.send("PUT", "/v1/workflows/sync", crmWriter, "{\"steps\":[" + step + "]}",
          "application/json").status());
      assertEquals(201, http.send("PUT", "/v1/workflows/sync-admin", admin, "{\"steps\":[" + step + "]}",
          "application/json").status());
      // Nor may a key without it change a workflow that has one.
      assertProblem(http.send("PUT", "/v1/workflows/sync", writer, "{\"steps\":[" + step + "," + step.replace(
          "\"type\"", "\"id\":\"two\",\"type\"") + "]}", "application/json"), 403, "insufficient_scope",
          "steps[0].object_type");
    });
  }

  @BothDatabases
  void bad_crm_steps_are_400_naming_the_field(Api api) {
    api.test(http -> {
      String records = "\"records\":[{\"external_id\":\"c-1\"}]";
      assertBad(http, "{\"type\":\"crm\"," + records + "}", "steps[0].object_type");
      assertBad(http, "{\"type\":\"crm\",\"object_type\":\"Not A Slug\"," + records + "}", "steps[0].object_type");
      assertBad(http, "{\"type\":\"crm\",\"object_type\":\"contacts\",\"mode\":\"upsert\"," + records + "}",
          "steps[0].mode");
      assertBad(http, "{\"type\":\"crm\",\"object_type\":\"contacts\"}", "steps[0].records");
      assertBad(http, "{\"type\":\"crm\",\"object_type\":\"contacts\",\"records\":{}}", "steps[0].records");
      assertBad(http, "{\"type\":\"crm\",\"object_type\":\"contacts\",\"records\":[]}", "steps[0].records");
      assertBad(http, "{\"type\":\"crm\",\"object_type\":\"contacts\",\"records\":\"c-1\"}", "steps[0].records");
      assertBad(http, "{\"type\":\"crm\",\"object_type\":\"contacts\",\"records\":\"{{ inputs. }}\"}",
          "steps[0].records");
      assertBad(http, "{\"type\":\"crm\",\"object_type\":\"contacts\",\"records\":[7]}", "steps[0].records[0]");
      assertBad(http, "{\"type\":\"crm\",\"object_type\":\"contacts\",\"records\":[{\"external_id\":\"{{ 1 + }}\"}]}",
          "steps[0].records[0].external_id");
      assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[{\"type\":\"crm\",\"object_type\":\"contacts\","
          + "\"url\":\"https://x.example.com\"," + records + "}]}"), 400, "unknown_parameter", "steps[0].url");
      assertBad(http, "{\"type\":\"crm\",\"object_type\":\"contacts\",\"records\":" + manyRecords(1001) + "}",
          "steps[0].records");
      // Inside a foreach, the path says so.
      assertBad(http, "{\"type\":\"foreach\",\"items\":\"[1]\",\"steps\":[{\"type\":\"crm\",\"object_type\":\"c\","
          + "\"mode\":\"upsert\"," + records + "}]}", "steps[0].steps[0].mode");
      assertProblem(http.get("/v1/workflows/bad"), 404, "workflow_not_found");
    });
  }

  /** A JSON array of {@code n} records m-0, m-1, …: one more than a sync takes, say. */
  private static String manyRecords(int n) {
    StringBuilder many = new StringBuilder("[");
    for (int i = 0; i < n; i++) {
      many.append(i == 0 ? "" : ",").append("{\"external_id\":\"m-").append(i).append("\"}");
    }
    return many.append("]").toString();
  }

  private static void assertBad(Http http, String step, String field) {
    assertProblem(http.put("/v1/workflows/bad", "{\"steps\":[" + step + "]}"), 400, "validation_failed", field);
  }

  /**
   * A workflow triggered by contact changes whose crm step changes the contact again: each run is
   * one deeper than the run whose write triggered it, and a run at the deepest level
   * (WorkflowRunMachine.MAX_DEPTH) fires no trigger, so the chain stops after 5 runs.
   */
  @BothDatabases
  void a_workflow_whose_crm_step_triggers_itself_stops_at_the_depth_bound(Api api) throws Exception {
    try (TriggerProcessor processor = CrmTriggersTest.processor(api)) {
      api.test(http -> {
        put(http, "bump", """
            {"triggers":[{"crm":"counters","on":["created","updated"]}],
             "steps":[{"id":"bump","type":"crm","object_type":"counters",
                       "records":[{"external_id":"{{ inputs.record.external_id }}",
                                   "properties":{"n":"{{ int(inputs.record.properties.n) + 1 }}"}}]}]}
            """);
        assertEquals(200, http.post("/v1/crm/counters/records/sync",
            "{\"records\":[{\"external_id\":\"loop\",\"properties\":{\"n\":0}}]}").status());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (http.get("/v1/crm/counters/records/loop").json().get("properties").get("n").asInt() < 5
            || CrmTriggersTest.queued(api, api.workspace) > 0) {
          assertTrue(System.nanoTime() < deadline, () -> http.get("/v1/crm/counters/records/loop").toString());
          Thread.sleep(20);
        }
        Thread.sleep(300); // were another run made, the processor would have made it by now
        assertEquals(0, CrmTriggersTest.queued(api, api.workspace));
        JsonNode loop = http.get("/v1/crm/counters/records/loop").json();
        assertEquals(5, loop.get("properties").get("n").asInt(), loop::toString);
        assertEquals(6, loop.get("version").asInt());

        List<JsonNode> runs = http.all("/v1/runs?workflow=bump");
        assertEquals(5, runs.size(), runs::toString);
        List<Integer> depths = api.jdbi().withHandle(h -> h.createQuery("SELECT definition FROM run WHERE "
            + "workspace_id = :ws AND workflow_id = 'bump' ORDER BY id").bind("ws", api.workspace)
            .map((rs, ctx) -> Json.tree(rs.getString(1)).path("depth").asInt(1)).list()).stream().sorted().toList();
        assertEquals(List.of(1, 2, 3, 4, 5), depths);
        for (JsonNode r : runs) {
          assertEquals("succeeded", r.get("status").asText(), r::toString);
        }
      });
    }
  }
}
