package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.agent.AgentDefinition;
import dev.runway.auth.Scope;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.util.ArrayList;
import java.util.List;

/** Agent definitions: PUT, GET, list, archive; every field checked, defaults filled in, credentials masked. */
class AgentsTest {
  private static final String TOOL = "{\"name\":\"lookup_customer\",\"description\":\"Find a customer by email\","
      + "\"parameters\":{\"type\":\"object\",\"properties\":{\"email\":{\"type\":\"string\"}},\"required\":[\"email\"]},"
      + "\"url\":\"https://tools.example.com/lookup\",\"headers\":{\"X-Team\":\"support\","
      + "\"Authorization\":\"Bearer {{secrets.TOOL_TOKEN}}\"}}";
  private static final String AGENT = "{\"name\":\"Support triage\",\"description\":\"Triage tickets\","
      + "\"model\":\"gpt-4o-mini\",\"instructions\":\"You triage support tickets.\",\"tools\":[" + TOOL + "]}";

  @BothDatabases
  void put_creates_with_every_default_filled_in_then_same_is_200_and_changed_replaces(Api api) {
    api.test(http -> {
      Http.Reply created = http.put("/v1/agents/triage", AGENT);
      assertEquals(201, created.status(), created::toString);
      JsonNode a = created.json();
      assertEquals(List.of("id", "name", "description", "model", "instructions", "tools", "requires_approval", "limits",
          "mcp_servers", "created_at", "updated_at", "archived_at"), fieldNames(a));
      assertEquals("triage", a.get("id").asText());
      assertEquals("Support triage", a.get("name").asText());
      assertEquals("gpt-4o-mini", a.get("model").asText());
      assertFalse(a.get("requires_approval").asBoolean());
      assertEquals(Api.json("{\"max_turns\":10,\"max_tool_calls\":20,\"max_total_tokens\":50000,\"timeout_s\":600}"),
          a.get("limits"));
      JsonNode tool = a.get("tools").get(0);
      assertEquals(List.of("name", "description", "parameters", "url", "headers", "timeout_ms", "requires_approval"),
          fieldNames(tool));
      assertEquals(10_000, tool.get("timeout_ms").asInt());
      assertEquals("********", tool.get("headers").get("X-Team").asText(), "a literal header value is masked");
      assertEquals("Bearer {{secrets.TOOL_TOKEN}}", tool.get("headers").get("Authorization").asText());
      String stored = api.jdbi().withHandle(h -> h.createQuery("SELECT definition FROM agent WHERE workspace_id = :ws "
          + "AND id = 'triage'").bind("ws", api.workspace).mapTo(String.class).one());
      assertTrue(stored.contains("\"X-Team\":\"support\""), "stored as given: " + stored);

      Http.Reply same = http.put("/v1/agents/triage", AGENT);
      assertEquals(200, same.status());
      assertEquals(a, same.json(), "the same definition changes nothing, not even updated_at");
      Thread.sleep(5);
      Http.Reply changed = http.put("/v1/agents/triage", "{\"model\":\"llama3.1\",\"requires_approval\":true,"
          + "\"limits\":{\"max_turns\":3}}");
      assertEquals(200, changed.status(), changed::toString);
      assertEquals("triage", changed.json().get("name").asText(), "a replace: name defaults to the id");
      assertEquals(0, changed.json().get("tools").size());
      assertTrue(changed.json().get("requires_approval").asBoolean());
      assertEquals(3, changed.json().get("limits").get("max_turns").asInt());
      assertEquals(20, changed.json().get("limits").get("max_tool_calls").asInt());
      assertEquals(a.get("created_at"), changed.json().get("created_at"));
      assertEquals(changed.json(), http.get("/v1/agents/triage").json());
    });
  }

  @BothDatabases
  void agents_are_listed_by_id_archived_and_restored(Api api) {
    api.test(http -> {
      for (String id : new String[] {"c-agent", "a-agent", "b-agent"}) {
        assertEquals(201, http.put("/v1/agents/" + id, "{\"model\":\"m\"}").status());
      }
      Http.Reply page = http.get("/v1/agents?limit=2");
      assertEquals(List.of("a-agent", "b-agent"), ids(page.json()));
      assertTrue(page.json().get("has_more").asBoolean());
      assertEquals(List.of("c-agent"), ids(http.get("/v1/agents?starting_after=b-agent").json()));

      Http.Reply archived = http.delete("/v1/agents/b-agent");
      assertEquals(200, archived.status());
      assertFalse(archived.json().get("archived_at").isNull());
      assertEquals(200, http.delete("/v1/agents/b-agent").status(), "archiving again is fine");
      assertEquals(List.of("a-agent", "c-agent"), ids(http.get("/v1/agents").json()));
      assertEquals(List.of("a-agent", "b-agent", "c-agent"), ids(http.get("/v1/agents?include_archived=true").json()));
      assertFalse(http.get("/v1/agents/b-agent").json().get("archived_at").isNull(), "still readable");
      assertTrue(http.put("/v1/agents/b-agent", "{\"model\":\"m\"}").json().get("archived_at").isNull(), "restored");
      assertProblem(http.get("/v1/agents/nope"), 404, "agent_not_found");
      assertProblem(http.delete("/v1/agents/nope"), 404, "agent_not_found");
    });
  }

  @BothDatabases
  void a_tool_pattern_re2_cannot_run_is_400_naming_the_field_and_nothing_is_stored(Api api) {
    List<String[]> cases = new ArrayList<>();
    cases.add(new String[] {"{\"properties\":{\"x\":{\"type\":\"string\",\"pattern\":\"^(a+)\\\\1$\"}}}",
        "tools[0].parameters.properties.x.pattern", "backreferences"}); // a backreference
    cases.add(new String[] {"{\"properties\":{\"x\":{\"type\":\"array\",\"items\":{\"pattern\":\"(?=a)b\"}}}}",
        "tools[0].parameters.properties.x.items.pattern", "lookaround"});
    cases.add(new String[] {"{\"patternProperties\":{\"^(?<!x)y\":{}}}", "tools[0].parameters.patternProperties.^(?<!x)y",
        "lookaround"});
    cases.add(new String[] {"{\"properties\":{\"x\":{\"pattern\":\"((a{100}){100}){100}\"}}}",
        "tools[0].parameters.properties.x.pattern", "too large"});
    cases.add(new String[] {"{\"anyOf\":[{\"$ref\":\"#\"}]}", "tools[0].parameters", "refers to itself"});
    StringBuilder fanOut = new StringBuilder("{\"$ref\":\"#/$defs/d0\",\"$defs\":{");
    for (int i = 0; i < 40; i++) { // no loop, but 2^40 ways down to a schema that refuses every object
      fanOut.append("\"d").append(i).append("\":{\"anyOf\":[{\"$ref\":\"#/$defs/d").append(i + 1)
          .append("\"},{\"$ref\":\"#/$defs/d").append(i + 1).append("\"}]},");
    }
    cases.add(new String[] {fanOut.append("\"d40\":{\"type\":\"string\"}}}").toString(), "tools[0].parameters",
        "too long to check"});
    api.test(http -> {
      for (String[] c : cases) {
        String parameters = "{\"type\":\"object\"," + c[0].substring(1);
        JsonNode problem = assertProblem(http.put("/v1/agents/bad", "{\"model\":\"m\",\"tools\":[{\"name\":\"a\","
            + "\"url\":\"https://x.example.com\",\"parameters\":" + parameters + "}]}"), 400, "validation_failed", c[1]);
        assertTrue(problem.get("detail").asText().contains(c[2]), problem::toString);
      }
      assertProblem(http.get("/v1/agents/bad"), 404, "agent_not_found");
      assertEquals(201, http.put("/v1/agents/good", "{\"model\":\"m\",\"tools\":[{\"name\":\"a\",\"url\":"
          + "\"https://x.example.com\",\"parameters\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":"
          + "\"string\",\"pattern\":\"^(.*a){12}$\"}},\"patternProperties\":{\"^[a-z]\\\\d{1,3}$\":{}}}}]}").status(),
          "RE2 patterns are fine, the ones java.util.regex would backtrack on too");
    });
  }

  @BothDatabases
  void bad_definitions_are_400_naming_the_field_and_nothing_is_stored(Api api) {
    List<String[]> cases = new ArrayList<>();
    cases.add(new String[] {"{}", "validation_failed", "model"});
    cases.add(new String[] {"{\"model\":\"\"}", "validation_failed", "model"});
    cases.add(new String[] {"{\"model\":\"m\",\"temperature\":1}", "unknown_parameter", "temperature"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":{}}", "validation_failed", "tools"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[1]}", "validation_failed", "tools[0]"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[{\"url\":\"https://x.example.com\"}]}", "validation_failed",
        "tools[0].name"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[{\"name\":\"has space\",\"url\":\"https://x.example.com\"}]}",
        "validation_failed", "tools[0].name"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[{\"name\":\"a\",\"url\":\"https://x.example.com\"},"
        + "{\"name\":\"a\",\"url\":\"https://y.example.com\"}]}", "validation_failed", "tools[1].name"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[{\"name\":\"a\"}]}", "validation_failed", "tools[0].url"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[{\"name\":\"a\",\"url\":\"ftp://x.example.com\"}]}",
        "validation_failed", "tools[0].url"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[{\"name\":\"a\",\"url\":\"https://x.example.com/{{secrets.T}}\"}]}",
        "validation_failed", "tools[0].url"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[{\"name\":\"a\",\"url\":\"https://x.example.com\","
        + "\"headers\":{\"Idempotency-Key\":\"x\"}}]}", "validation_failed", "tools[0].headers.Idempotency-Key"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[{\"name\":\"a\",\"url\":\"https://x.example.com\","
        + "\"parameters\":{\"type\":\"string\"}}]}", "validation_failed", "tools[0].parameters"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[{\"name\":\"a\",\"url\":\"https://x.example.com\","
        + "\"parameters\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"banana\"}}}}]}", "validation_failed",
        "tools[0].parameters"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[{\"name\":\"a\",\"url\":\"https://x.example.com\","
        + "\"timeout_ms\":0}]}", "validation_failed", "tools[0].timeout_ms"});
    cases.add(new String[] {"{\"model\":\"m\",\"tools\":[{\"name\":\"a\",\"url\":\"https://x.example.com\","
        + "\"retries\":2}]}", "unknown_parameter", "tools[0].retries"});
    cases.add(new String[] {"{\"model\":\"m\",\"limits\":{\"max_turns\":0}}", "validation_failed", "limits.max_turns"});
    cases.add(new String[] {"{\"model\":\"m\",\"limits\":{\"max_tool_calls\":100000}}", "validation_failed",
        "limits.max_tool_calls"});
    cases.add(new String[] {"{\"model\":\"m\",\"limits\":{\"budget\":1}}", "unknown_parameter", "limits.budget"});
    cases.add(new String[] {"{\"model\":\"m\",\"instructions\":7}", "validation_failed", "instructions"});
    api.test(http -> {
      for (String[] c : cases) {
        assertProblem(http.put("/v1/agents/bad", c[0]), 400, c[1], c[2]);
      }
      assertProblem(http.put("/v1/agents/Not_A_Slug", "{\"model\":\"m\"}"), 400, "validation_failed", "id");
      assertProblem(http.put("/v1/agents/bad", "[]"), 400, "invalid_json");
      assertProblem(http.get("/v1/agents/bad"), 404, "agent_not_found");
    });
  }

  @BothDatabases
  void agents_need_their_scopes_and_a_whole_workspace_key_to_change_and_stay_in_their_workspace(Api api) {
    String reader = api.key(Scope.RUNS_READ);
    String writer = api.key(Scope.WORKFLOWS_WRITE, Scope.SECRETS_USE);
    String writerWithoutSecrets = api.key(Scope.WORKFLOWS_WRITE);
    String projectKey = api.keyForProjects("alpha");
    String otherWorkspace = api.keyIn(Api.newWorkspaceId(), null, Scope.values());
    api.test(http -> {
      // AGENT's tool refers to a secret: saving it needs secrets:use as well (see SecretUseTest).
      assertProblem(http.send("PUT", "/v1/agents/triage", writerWithoutSecrets, AGENT, "application/json"), 403,
          "insufficient_scope", "tools[0].headers.Authorization");
      assertEquals(201, http.send("PUT", "/v1/agents/triage", writer, AGENT, "application/json").status());
      assertProblem(http.send("PUT", "/v1/agents/triage", reader, AGENT, "application/json"), 403,
          "insufficient_scope");
      assertProblem(http.send("DELETE", "/v1/agents/triage", reader, null, null), 403, "insufficient_scope");
      assertEquals(200, http.get("/v1/agents/triage", reader).status());
      assertEquals(200, http.get("/v1/agents", reader).status());
      assertProblem(http.get("/v1/agents", writer), 403, "insufficient_scope");
      assertProblem(http.send("PUT", "/v1/agents/triage", projectKey, AGENT, "application/json"), 403,
          "project_forbidden");
      assertProblem(http.send("DELETE", "/v1/agents/triage", projectKey, null, null), 403, "project_forbidden");
      assertEquals(200, http.get("/v1/agents/triage", projectKey).status(), "reading is allowed");
      assertProblem(http.get("/v1/agents/triage", otherWorkspace), 404, "agent_not_found");
      assertEquals(0, http.get("/v1/agents", otherWorkspace).json().get("data").size());
      assertTrue(http.get("/v1/agents/triage").json().get("archived_at").isNull(), "nothing changed it");
    });
  }

  @BothDatabases
  void a_bad_output_schema_is_400_naming_it_and_a_good_one_is_stored_and_shown(Api api) {
    List<String[]> cases = new ArrayList<>();
    cases.add(new String[] {"\"an object please\"", "output_schema", "must be a JSON Schema"});
    cases.add(new String[] {"[]", "output_schema", "must be a JSON Schema"});
    cases.add(new String[] {"{\"type\":\"banana\"}", "output_schema", "not a valid JSON Schema"});
    cases.add(new String[] {"{\"properties\":{\"code\":{\"type\":\"string\",\"pattern\":\"(?=a)b\"}}}",
        "output_schema.properties.code.pattern", "lookaround"});
    cases.add(new String[] {"{\"anyOf\":[{\"$ref\":\"#\"}]}", "output_schema", "refers to itself"});
    cases.add(new String[] {"{\"$ref\":\"https://schemas.example.com/x.json\"}", "output_schema", "cannot be used"});
    cases.add(new String[] {"{\"description\":\"" + "x".repeat(AgentDefinition.MAX_OUTPUT_SCHEMA_CHARS) + "\"}",
        "output_schema", "at most 32768 characters"});
    String schema = "{\"type\":\"object\",\"properties\":{\"tier\":{\"enum\":[\"gold\",\"silver\"]}},"
        + "\"required\":[\"tier\"]}";
    api.test(http -> {
      for (String[] c : cases) {
        JsonNode problem = assertProblem(http.put("/v1/agents/bad", "{\"model\":\"m\",\"output_schema\":" + c[0] + "}"),
            400, "validation_failed", c[1]);
        assertTrue(problem.get("detail").asText().contains(c[2]), problem::toString);
      }
      assertProblem(http.get("/v1/agents/bad"), 404, "agent_not_found");

      Http.Reply created = http.put("/v1/agents/tiers", "{\"model\":\"m\",\"output_schema\":" + schema + "}");
      assertEquals(201, created.status(), created::toString);
      assertEquals(List.of("id", "name", "description", "model", "instructions", "tools", "requires_approval", "limits",
          "output_schema", "mcp_servers", "created_at", "updated_at", "archived_at"), fieldNames(created.json()));
      assertEquals(Api.json(schema), created.json().get("output_schema"));
      assertEquals(created.json(), http.get("/v1/agents/tiers").json());
      assertEquals(200, http.put("/v1/agents/tiers", "{\"model\":\"m\",\"output_schema\":" + schema + "}").status());
      assertEquals(created.json(), http.get("/v1/agents/tiers").json(), "the same definition changes nothing");

      Http.Reply without = http.put("/v1/agents/tiers", "{\"model\":\"m\",\"output_schema\":null}");
      assertEquals(200, without.status(), without::toString);
      assertFalse(without.json().has("output_schema"), "null takes it away; an agent without one does not show it");
      String stored = api.jdbi().withHandle(h -> h.createQuery("SELECT definition FROM agent WHERE workspace_id = :ws "
          + "AND id = 'tiers'").bind("ws", api.workspace).mapTo(String.class).one());
      assertFalse(stored.contains("output_schema"), "stored as before output_schema existed: " + stored);
    });
  }

  private static List<String> ids(JsonNode page) {
    List<String> ids = new ArrayList<>();
    page.get("data").forEach(a -> ids.add(a.get("id").asText()));
    return ids;
  }

  private static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }

}
