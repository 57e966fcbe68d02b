package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.Scope;
import dev.runway.engine.Engine;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.ToolServer;
import java.util.List;
import java.util.Map;

/**
 * Workspace secrets: write-only values, encrypted at rest, referred to as {{secrets.NAME}} in step
 * headers and URL query strings and resolved only when a call is made; header values given
 * literally are masked in every answer.
 */
class SecretsTest {
  private static final String VALUE = "tool-secret-123";

  @BothDatabases
  void a_secret_is_written_listed_and_deleted_but_its_value_never_comes_back(Api api) {
    api.test(http -> {
      Http.Reply created = http.put("/v1/secrets/TOOL_TOKEN", "{\"value\":\"" + VALUE + "\"}");
      assertEquals(201, created.status(), created::toString);
      assertEquals(List.of("name", "allowed_hosts", "created_at", "updated_at"), fieldNames(created.json()));
      assertEquals("TOOL_TOKEN", created.json().get("name").asText());
      Http.Reply replaced = http.put("/v1/secrets/TOOL_TOKEN", "{\"value\":\"another-value\"}");
      assertEquals(200, replaced.status());
      assertEquals(created.json().get("created_at"), replaced.json().get("created_at"));
      assertEquals(201, http.put("/v1/secrets/other_one", "{\"value\":\"x\"}").status());

      Http.Reply one = http.get("/v1/secrets/TOOL_TOKEN");
      assertEquals(200, one.status());
      Http.Reply list = http.get("/v1/secrets?limit=1");
      assertEquals(List.of("TOOL_TOKEN"), names(list.json()));
      assertTrue(list.json().get("has_more").asBoolean());
      assertEquals(List.of("other_one"), names(http.get("/v1/secrets?starting_after=TOOL_TOKEN").json()));
      for (Http.Reply r : List.of(created, replaced, one, list)) {
        assertFalse(r.body().contains(VALUE) || r.body().contains("another-value"), r::toString);
      }

      // Stored only encrypted: neither value appears in the row.
      Map<String, Object> row = api.jdbi().withHandle(h -> h.createQuery(
          "SELECT * FROM secret WHERE workspace_id = :ws AND name = 'TOOL_TOKEN'").bind("ws", api.workspace)
          .mapToMap().one());
      String stored = (String) row.get("value_encrypted");
      assertTrue(stored.startsWith("v1."), stored);
      assertFalse(stored.contains("another-value"));

      Http.Reply deleted = http.delete("/v1/secrets/TOOL_TOKEN");
      assertEquals(200, deleted.status());
      assertEquals(Api.json("{\"name\":\"TOOL_TOKEN\",\"deleted\":true}"), deleted.json());
      assertProblem(http.get("/v1/secrets/TOOL_TOKEN"), 404, "secret_not_found");
      assertProblem(http.delete("/v1/secrets/TOOL_TOKEN"), 404, "secret_not_found");
    });
  }

  @BothDatabases
  void bad_names_and_values_are_400_naming_the_field(Api api) {
    api.test(http -> {
      assertProblem(http.put("/v1/secrets/9lives", "{\"value\":\"x\"}"), 400, "validation_failed", "name");
      assertProblem(http.put("/v1/secrets/has-dash", "{\"value\":\"x\"}"), 400, "validation_failed", "name");
      assertProblem(http.put("/v1/secrets/OK", "{}"), 400, "validation_failed", "value");
      assertProblem(http.put("/v1/secrets/OK", "{\"value\":\"\"}"), 400, "validation_failed", "value");
      assertProblem(http.put("/v1/secrets/OK", "{\"value\":42}"), 400, "validation_failed", "value");
      assertProblem(http.put("/v1/secrets/OK", "{\"value\":\"a\\nb\"}"), 400, "validation_failed", "value");
      assertProblem(http.put("/v1/secrets/OK", "{\"value\":\"" + "v".repeat(4097) + "\"}"), 400, "validation_failed",
          "value");
      assertProblem(http.put("/v1/secrets/OK", "{\"value\":\"x\",\"note\":\"y\"}"), 400, "unknown_parameter", "note");
      assertEquals(0, http.get("/v1/secrets").json().get("data").size());
    });
  }

  @BothDatabases
  void secrets_need_admin_a_whole_workspace_key_and_stay_in_their_workspace(Api api) {
    String notAdmin = api.key(Scope.RUNS_READ, Scope.RUNS_WRITE, Scope.WORKFLOWS_WRITE, Scope.APPROVALS_WRITE);
    String projectAdmin = api.keyForProjects("alpha");
    String otherWorkspace = api.keyIn(Api.newWorkspaceId(), null, Scope.values());
    api.test(http -> {
      assertEquals(201, http.put("/v1/secrets/TOKEN", "{\"value\":\"v\"}").status());
      assertProblem(http.send("PUT", "/v1/secrets/TOKEN", notAdmin, "{\"value\":\"v\"}", "application/json"), 403,
          "insufficient_scope");
      assertProblem(http.get("/v1/secrets", notAdmin), 403, "insufficient_scope");
      assertProblem(http.send("PUT", "/v1/secrets/TOKEN", projectAdmin, "{\"value\":\"v\"}", "application/json"),
          403, "project_forbidden");
      assertProblem(http.send("DELETE", "/v1/secrets/TOKEN", projectAdmin, null, null), 403, "project_forbidden");
      assertProblem(http.get("/v1/secrets/TOKEN", otherWorkspace), 404, "secret_not_found");
      assertEquals(0, http.get("/v1/secrets", otherWorkspace).json().get("data").size());
    });
  }

  /** The finding: GET /v1/workflows/{id} showed "Authorization: Bearer tool-secret-123" to a plain reader. */
  @BothDatabases
  void header_values_given_literally_are_masked_in_every_answer_and_references_are_shown(Api api) {
    String reader = api.key(Scope.RUNS_READ);
    api.test(http -> {
      String body = "{\"steps\":[{\"type\":\"http\",\"url\":\"https://tools.example.com/x?key={{secrets.QUERY_KEY}}\","
          + "\"headers\":{\"Authorization\":\"Bearer " + VALUE + "\",\"X-Team\":\"ops\","
          + "\"X-Api-Key\":\"{{secrets.TOOL_TOKEN}}\"}}]}";
      Http.Reply put = http.put("/v1/workflows/publish", body);
      assertEquals(201, put.status(), put::toString);
      for (Http.Reply r : List.of(put, http.get("/v1/workflows/publish", reader), http.get("/v1/workflows", reader),
          http.put("/v1/workflows/publish", body))) {
        assertFalse(r.body().contains(VALUE), () -> "the literal value leaked: " + r);
        JsonNode headers = r.json().has("data") ? r.json().get("data").get(0).get("steps").get(0).get("headers")
            : r.json().get("steps").get(0).get("headers");
        assertEquals("********", headers.get("Authorization").asText());
        assertEquals("********", headers.get("X-Team").asText());
        assertEquals("{{secrets.TOOL_TOKEN}}", headers.get("X-Api-Key").asText(), "a reference holds no secret");
      }
      assertTrue(((String) api.jdbi().withHandle(h -> h.createQuery("SELECT steps FROM workflow WHERE id = 'publish' "
          + "AND workspace_id = :ws").bind("ws", api.workspace).mapTo(String.class).one())).contains(VALUE),
          "stored as given: only the answers mask it");
    });
  }

  @BothDatabases
  void malformed_references_and_references_outside_the_query_string_are_400(Api api) {
    api.test(http -> {
      assertProblem(http.put("/v1/workflows/w", step("https://x.example.com/{{secrets.PATH}}", "{}")), 400,
          "validation_failed", "steps[0].url");
      assertProblem(http.put("/v1/workflows/w", step("https://{{secrets.HOST}}/x", "{}")), 400,
          "validation_failed", "steps[0].url");
      assertProblem(http.put("/v1/workflows/w", step("https://x.example.com/?k={{secrets.bad-name}}", "{}")), 400,
          "validation_failed", "steps[0].url");
      assertProblem(http.put("/v1/workflows/w", step("https://x.example.com/", "{\"A\":\"{{secrets.OPEN\"}")), 400,
          "validation_failed", "steps[0].headers.A");
      // Since workflow expressions, {{ … }} that is not a secret reference is an expression: one that
      // does not compile is refused, naming its header.
      assertProblem(http.put("/v1/workflows/w", step("https://x.example.com/", "{\"B\":\"{{not a reference}}\"}")),
          400, "validation_failed", "steps[0].headers.B");
      assertEquals(201, http.put("/v1/workflows/w", step("https://x.example.com/?k={{ secrets.OK }}&b=1",
          "{\"A\":\"x {{secrets.OK}} y\",\"B\":\"{{ inputs.b }}\"}")).status());
    });
  }

  /** References are resolved at call time, in headers and (URL-encoded) in the query string. */
  @BothDatabases
  void a_step_sends_the_secrets_it_refers_to_and_a_missing_one_fails_it_clearly(Api api) throws Exception {
    try (ToolServer tool = ToolServer.start(); Engine engine = api.database().startEngine()) {
      api.test(http -> {
        assertEquals(201, http.put("/v1/secrets/TOOL_TOKEN", "{\"value\":\"" + VALUE + "\"}").status());
        assertEquals(201, http.put("/v1/secrets/QUERY_KEY", "{\"value\":\"a b&c=d\"}").status());
        assertEquals(201, http.put("/v1/workflows/call", step(tool.url("/hook") + "?key={{secrets.QUERY_KEY}}&x=1",
            "{\"Authorization\":\"Bearer {{secrets.TOOL_TOKEN}}\"}")).status());
        String runId = http.startRun("call", "demo").json().get("id").asText();
        JsonNode run = awaitStatus(http, runId, "succeeded");
        ToolServer.Call call = tool.calls("/hook").get(0);
        assertEquals("Bearer " + VALUE, call.headers().get("Authorization"));
        assertEquals("key=a+b%26c%3Dd&x=1", call.rawQuery());
        // The value is nowhere in what Runway keeps or shows.
        assertFalse(run.toString().contains(VALUE));
        assertFalse(http.get("/v1/runs/" + runId + "/events").body().contains(VALUE));
        assertFalse(String.valueOf(api.storedRun(runId).orElseThrow()).contains(VALUE));

        assertEquals(201, http.put("/v1/workflows/missing", step(tool.url("/hook"),
            "{\"Authorization\":\"Bearer {{secrets.NOT_SET}}\"}")).status());
        String missing = http.startRun("missing", "demo").json().get("id").asText();
        JsonNode failed = awaitStatus(http, missing, "failed");
        assertTrue(failed.get("error").get("message").asText().contains("secret NOT_SET is not set"), failed::toString);
        assertEquals(1, tool.calls("/hook").size(), "the step with a missing secret was not called");
        assertTrue(failed.get("error").get("http_status").isNull(), failed::toString);
      });
    }
  }

  private static String step(String url, String headers) {
    return "{\"steps\":[{\"type\":\"http\",\"url\":\"" + url + "\",\"headers\":" + headers + ",\"max_attempts\":1}]}";
  }

  private static List<String> names(JsonNode page) {
    return java.util.stream.StreamSupport.stream(page.get("data").spliterator(), false)
        .map(s -> s.get("name").asText()).toList();
  }

  private static List<String> fieldNames(JsonNode node) {
    List<String> names = new java.util.ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }
}
