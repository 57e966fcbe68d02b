package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.workflow.WorkflowDefinition;
import java.io.ByteArrayInputStream;
import java.net.http.HttpRequest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The spec's endpoint, POST /v1/workflows/{id}/runs: its three rules and every way to get it wrong. */
class StartRunTest {
  private static final String TIME = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z";

  /**
   * The moves a new run makes without waiting are stored in its start's own commit: a run without
   * steps has ended, a run that requires approval waits at its gate, a first delay has its timer
   * started. The caller is still told {@code running} (spec rule 3), and the timeline shows the moves.
   */
  @BothDatabases
  void a_run_is_stored_as_far_as_it_goes_without_waiting(Api api) {
    api.workflow("nothing", false);
    api.workflow("gated", true);
    ObjectNode delay = Json.MAPPER.createObjectNode();
    delay.putArray("steps").addObject().put("type", "delay").put("seconds", 60);
    api.services().workflows().put(api.workspace, "waits", WorkflowDefinition.parse("waits", delay));
    api.test(http -> {
      Http.Reply done = http.startRun("nothing", "demo");
      assertEquals(200, done.status(), done::toString);
      assertEquals("running", done.json().get("status").asText(), "rule 3");
      String doneId = done.json().get("id").asText();
      Map<String, Object> stored = api.storedRun(doneId).orElseThrow();
      assertEquals("succeeded", stored.get("status"));
      assertNotNull(stored.get("finished_at"));
      assertNull(stored.get("due_at"), "nothing left for the engine");
      assertEquals(List.of("run.started", "run.succeeded"), eventTypes(http, doneId));

      Http.Reply gated = http.startRun("gated", "demo");
      assertEquals("running", gated.json().get("status").asText(), "rule 3");
      String gatedId = gated.json().get("id").asText();
      JsonNode read = http.get("/v1/runs/" + gatedId).json();
      assertEquals("awaiting_approval", read.get("status").asText(), read::toString);
      assertEquals("pending", read.get("approval").get("status").asText());
      assertNotNull(api.storedRun(gatedId).orElseThrow().get("due_at"), "due when the approval expires");
      assertEquals(List.of("run.started", "run.awaiting_approval"), eventTypes(http, gatedId));
      assertEquals("approved", http.post("/v1/runs/" + gatedId + "/approve", "{}").json().get("approval")
          .get("status").asText(), "approvable at once");

      Http.Reply waits = http.startRun("waits", "demo");
      assertEquals("running", waits.json().get("status").asText(), "rule 3");
      String waitsId = waits.json().get("id").asText();
      JsonNode step = http.get("/v1/runs/" + waitsId).json().get("steps").get(0);
      assertEquals("waiting", step.get("status").asText(), step::toString);
      Instant wake = Instant.parse(step.get("wake_at").asText());
      Instant created = Instant.parse(waits.json().get("created_at").asText());
      assertEquals(created.plusSeconds(60), wake, "the timer starts at the start");
      assertEquals(List.of("run.started", "step.waiting"), eventTypes(http, waitsId));
    });
  }

  private static List<String> eventTypes(Http http, String runId) {
    List<String> types = new ArrayList<>();
    http.get("/v1/runs/" + runId + "/events").json().get("data").forEach(e -> types.add(e.get("type").asText()));
    return types;
  }

  @BothDatabases
  void valid_request_returns_200_with_the_run_record_and_stores_it(Api api) {
    api.workflowThatCalls("hello");
    api.test(http -> {
      Instant before = Instant.now().minusSeconds(1);
      Http.Reply reply = http.post("/v1/workflows/hello/runs", "{\"project\":\"demo\",\"inputs\":{\"n\":1}}");

      assertEquals(200, reply.status(), reply::toString);
      assertEquals("application/json;charset=utf-8", reply.header("Content-Type").replace(" ", "").toLowerCase());
      assertTrue(reply.header("Request-Id").startsWith("req_"));
      JsonNode run = reply.json();
      assertTrue(run.get("id").asText().matches("run_[0-9a-z]{26}"), run::toString);
      assertEquals("hello", run.get("workflow").asText(), "rule 2: workflow equals the path id");
      assertEquals("running", run.get("status").asText(), "rule 3: a new run is running");
      assertFalse(run.get("requires_approval").asBoolean());
      assertTrue(run.get("created_at").asText().matches(TIME), run::toString);
      assertTrue(Instant.parse(run.get("created_at").asText()).isAfter(before));
      assertEquals("demo", run.get("project").asText());
      assertEquals(1, run.get("inputs").get("n").asInt());
      assertEquals(run.get("created_at"), run.get("updated_at"));
      assertTrue(run.get("finished_at").isNull());
      assertTrue(run.get("approval").isNull());
      assertTrue(run.get("error").isNull());

      Map<String, Object> stored = api.storedRun(run.get("id").asText()).orElseThrow();
      assertEquals(api.workspace, stored.get("workspace_id"));
      assertEquals("hello", stored.get("workflow_id"));
      assertEquals("demo", stored.get("project"));
      assertEquals("running", stored.get("status"));
      assertEquals("{\"n\":1}", stored.get("inputs"));
    });
  }

  @BothDatabases
  void run_copies_requires_approval_from_the_workflow(Api api) {
    api.workflow("gated", true);
    api.test(http -> {
      Http.Reply reply = http.startRun("gated", "demo");
      assertEquals(200, reply.status(), reply::toString);
      assertTrue(reply.json().get("requires_approval").asBoolean());
      assertEquals("running", reply.json().get("status").asText());
      assertEquals(Boolean.TRUE, api.storedRun(reply.json().get("id").asText()).orElseThrow().get("requires_approval"));
    });
  }

  @BothDatabases
  void inputs_default_to_an_empty_object(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      Http.Reply reply = http.startRun("hello", "demo");
      assertEquals(200, reply.status());
      assertTrue(reply.json().get("inputs").isObject());
      assertEquals(0, reply.json().get("inputs").size());
    });
  }

  @BothDatabases
  void missing_project_is_400_naming_project(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      assertProblem(http.post("/v1/workflows/hello/runs", "{}"), 400, "validation_failed", "project");
      assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":null}"), 400, "validation_failed", "project");
      assertEquals(0, api.countRuns(""));
    });
  }

  @BothDatabases
  void project_that_is_not_a_slug_is_400(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      for (String bad : new String[] {"\"Demo\"", "\"\"", "\"-demo\"", "\"a b\"", "\"" + "a".repeat(65) + "\"", "\"dé\""}) {
        assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":" + bad + "}"), 400, "validation_failed", "project");
      }
      assertEquals(200, http.post("/v1/workflows/hello/runs", "{\"project\":\"" + "a".repeat(64) + "\"}").status());
    });
  }

  @BothDatabases
  void wrong_types_are_400_naming_the_field(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      JsonNode p = assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":42}"), 400, "validation_failed", "project");
      assertTrue(p.get("detail").asText().contains("string"), p::toString);
      assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":[\"demo\"]}"), 400, "validation_failed", "project");
      assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":\"demo\",\"inputs\":[1]}"), 400, "validation_failed", "inputs");
      assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":\"demo\",\"inputs\":\"x\"}"), 400, "validation_failed", "inputs");
    });
  }

  @BothDatabases
  void unknown_body_field_is_400_unknown_parameter(Api api) {
    api.workflow("hello", false);
    api.test(http -> assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":\"demo\",\"priority\":1}"),
        400, "unknown_parameter", "priority"));
  }

  @BothDatabases
  void invalid_json_is_400_invalid_json(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":"), 400, "invalid_json");
      assertProblem(http.post("/v1/workflows/hello/runs", "{'project':'demo'}"), 400, "invalid_json");
      assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":\"demo\"} {}"), 400, "invalid_json");
      assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":\"demo\",\"project\":\"x\"}"), 400, "invalid_json");
      assertProblem(http.post("/v1/workflows/hello/runs", ""), 400, "invalid_json");
    });
  }

  /**
   * Inputs are kept with the run and passed on to its tools a few levels further down: JSON Runway
   * could not write again (nested deeper than 100 levels, numbers no type holds, strings without a
   * UTF-8 form) is refused at the door rather than breaking the run later.
   */
  @BothDatabases
  void inputs_runway_could_not_keep_are_400_invalid_json(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      String deepest = "[".repeat(98) + "1" + "]".repeat(98); // with the body and inputs: 100 levels
      Http.Reply ok = http.post("/v1/workflows/hello/runs", "{\"project\":\"demo\",\"inputs\":{\"a\":" + deepest + "}}");
      assertEquals(200, ok.status(), ok::toString);
      JsonNode deep = assertProblem(http.post("/v1/workflows/hello/runs",
          "{\"project\":\"demo\",\"inputs\":{\"a\":[" + deepest + "]}}"), 400, "invalid_json");
      assertTrue(deep.get("detail").asText().contains("nested deeper than 100 levels"), deep::toString);
      assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":\"demo\",\"inputs\":{\"n\":[1e-2147483648]}}"),
          400, "invalid_json");
      assertProblem(http.post("/v1/workflows/hello/runs", "{\"project\":\"demo\",\"inputs\":{\"x\":[\"\\udc00\"]}}"),
          400, "invalid_json", "inputs.x[0]");
      assertEquals(1, api.countRuns(""), "only the first was stored");
    });
  }

  @BothDatabases
  void json_that_is_not_an_object_is_400(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      for (String body : new String[] {"[]", "\"demo\"", "42", "null", "true"}) {
        assertProblem(http.post("/v1/workflows/hello/runs", body), 400, "invalid_json");
      }
    });
  }

  @BothDatabases
  void body_over_64_kib_is_413_also_when_chunked_and_the_server_keeps_serving(Api api) {
    api.workflow("hello", false);
    String big = "{\"project\":\"demo\",\"inputs\":{\"blob\":\"" + "x".repeat(70_000) + "\"}}";
    api.test(http -> {
      assertProblem(http.post("/v1/workflows/hello/runs", big), 413, "body_too_large");
      HttpRequest.BodyPublisher chunked = HttpRequest.BodyPublishers.ofInputStream(
          () -> new ByteArrayInputStream(big.getBytes()));
      assertProblem(http.sendPublisher("POST", "/v1/workflows/hello/runs", api.key, chunked, "application/json"),
          413, "body_too_large");
      String justUnder = "{\"project\":\"demo\",\"inputs\":{\"blob\":\"" + "x".repeat(60_000) + "\"}}";
      assertEquals(200, http.post("/v1/workflows/hello/runs", justUnder).status());
      assertEquals(200, http.startRun("hello", "demo").status());
      assertEquals(2, api.countRuns(""));
    });
  }

  @BothDatabases
  void wrong_or_missing_content_type_is_415(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      String body = "{\"project\":\"demo\"}";
      assertProblem(http.send("POST", "/v1/workflows/hello/runs", api.key, body, "text/plain"), 415, "unsupported_media_type");
      assertProblem(http.send("POST", "/v1/workflows/hello/runs", api.key, body, null), 415, "unsupported_media_type");
      assertProblem(http.send("POST", "/v1/workflows/hello/runs", api.key, body, "application/json; charset=latin1"),
          415, "unsupported_media_type");
      assertEquals(200, http.send("POST", "/v1/workflows/hello/runs", api.key, body, "application/json; charset=UTF-8").status());
    });
  }

  @BothDatabases
  void workflow_id_that_is_not_a_slug_is_400_naming_id(Api api) {
    api.test(http -> {
      assertProblem(http.startRun("Hello", "demo"), 400, "validation_failed", "id");
      assertProblem(http.startRun("he%20llo", "demo"), 400, "validation_failed", "id");
    });
  }

  @BothDatabases
  void unknown_or_archived_workflow_is_404(Api api) {
    api.workflow("old", false);
    api.test(http -> {
      JsonNode missing = assertProblem(http.startRun("nope", "demo"), 404, "workflow_not_found");
      assertEquals("no workflow 'nope' in workspace '" + api.workspace + "'", missing.get("detail").asText(),
          "the 404 names the key's workspace: a key of another workspace is the usual cause");
      assertEquals(200, http.delete("/v1/workflows/old").status());
      assertProblem(http.startRun("old", "demo"), 404, "workflow_not_found");
      assertEquals(0, api.countRuns(""));
    });
  }

  @BothDatabases
  void another_workspaces_workflow_does_not_exist(Api api) {
    String other = Api.newWorkspaceId();
    api.workflowIn(other, "theirs", false);
    api.test(http -> assertProblem(http.startRun("theirs", "demo"), 404, "workflow_not_found"));
  }

  @BothDatabases
  void wrong_method_is_405_with_allow(Api api) {
    api.test(http -> {
      Http.Reply reply = http.get("/v1/workflows/hello/runs");
      assertProblem(reply, 405, "method_not_allowed");
      assertEquals("POST", reply.header("Allow"));
      Http.Reply onRun = http.send("PUT", "/v1/runs/run_01m80m00h08nf1qrfhqggxcsnm", api.key, "{}", "application/json");
      assertProblem(onRun, 405, "method_not_allowed");
      assertEquals("GET", onRun.header("Allow"));
    });
  }

  @BothDatabases
  void unknown_route_is_404_problem(Api api) {
    api.test(http -> {
      assertProblem(http.get("/v1/nothing-here"), 404, "not_found");
      assertProblem(http.get("/nothing-here", null), 404, "not_found"); // GET / leads to the console
    });
  }

  @BothDatabases
  void response_ids_differ_per_request_and_runs_get_new_ids(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      Http.Reply a = http.startRun("hello", "demo");
      Http.Reply b = http.startRun("hello", "demo");
      assertFalse(a.header("Request-Id").equals(b.header("Request-Id")));
      assertFalse(a.json().get("id").equals(b.json().get("id")));
      assertNull(a.header("Idempotent-Replayed"));
    });
  }
}
