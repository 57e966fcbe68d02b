package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Scope;
import dev.runway.run.Run;
import dev.runway.run.RunDao;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** Reading runs back: GET /v1/runs/{id} and the newest-first, cursor-paginated GET /v1/runs. */
class ReadRunsTest {
  private static final String UNKNOWN_RUN = "run_01m80m00h08nf1qrfhqggxcsnm";

  @BothDatabases
  void get_run_returns_the_record_that_start_returned(Api api) {
    api.workflow("hello", true);
    api.test(http -> {
      Http.Reply started = http.post("/v1/workflows/hello/runs",
          "{\"project\":\"demo\",\"inputs\":{\"n\":1,\"price\":1.50,\"tags\":[\"a\",null],\"deep\":{\"x\":\"é\"}}}");
      assertEquals(200, started.status(), started::toString);
      String id = started.json().get("id").asText();

      Http.Reply read = http.get("/v1/runs/" + id);

      assertEquals(200, read.status(), read::toString);
      assertTrue(read.header("Content-Type").startsWith("application/json"), read.header("Content-Type"));
      assertTrue(read.header("Request-Id").startsWith("req_"));
      // The run stopped at its approval gate in the start's own commit; everything else is as start returned it.
      assertEquals("awaiting_approval", read.json().get("status").asText(), read::toString);
      assertEquals("pending", read.json().get("approval").get("status").asText(), read::toString);
      ObjectNode expected = ((ObjectNode) started.json()).deepCopy();
      expected.put("status", "awaiting_approval").set("approval", read.json().get("approval"));
      assertEquals(expected, read.json(), "every other field, inputs included, as start returned it");
      assertEquals(List.of("id", "workflow", "status", "requires_approval", "created_at", "kind", "agent", "parent_run_id", "rerun_of", "concurrency_key",
          "project",
          "inputs", "updated_at", "finished_at", "approval", "error", "output", "steps"), fieldNames(read.json()));
      assertEquals("workflow", read.json().get("kind").asText());
      assertTrue(read.json().get("agent").isNull(), "a workflow run has agent: null");
      assertEquals(Api.json("{\"n\":1,\"price\":1.50,\"tags\":[\"a\",null],\"deep\":{\"x\":\"é\"}}"),
          read.json().get("inputs"), "inputs as sent");
      assertEquals(api.workspace, api.storedRun(id).orElseThrow().get("workspace_id"));
    });
  }

  @BothDatabases
  void get_unknown_or_malformed_run_id_is_404_run_not_found(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      assertEquals(200, http.startRun("hello", "demo").status());
      assertProblem(http.get("/v1/runs/" + UNKNOWN_RUN), 404, "run_not_found");
      assertProblem(http.get("/v1/runs/abc"), 404, "run_not_found");
      assertProblem(http.get("/v1/runs/RUN_01M80M00H08NF1QRFHQGGXCSNM"), 404, "run_not_found");
    });
  }

  @BothDatabases
  void another_workspaces_run_is_404(Api api) {
    String other = Api.newWorkspaceId();
    api.workflowIn(other, "theirs", false);
    String theirKey = api.keyIn(other, null, Scope.values());
    api.test(http -> {
      Http.Reply theirs = http.post("/v1/workflows/theirs/runs", theirKey, "{\"project\":\"demo\"}");
      assertEquals(200, theirs.status(), theirs::toString);
      String id = theirs.json().get("id").asText();

      assertProblem(http.get("/v1/runs/" + id), 404, "run_not_found");
      assertEquals(0, http.get("/v1/runs").json().get("data").size());
      assertEquals(200, http.get("/v1/runs/" + id, theirKey).status());
    });
  }

  /**
   * An ended run never changes, so an instance may answer a repeated read of one from memory; that
   * must not change what anybody may read. Reading it first with the owner's key, then with others.
   */
  @BothDatabases
  void an_ended_run_read_again_is_the_same_and_still_only_for_its_workspace_and_projects(Api api) {
    api.workflow("hello", false); // no steps: the run has succeeded by the time start answers
    String other = Api.newWorkspaceId();
    api.workflowIn(other, "theirs", false);
    String otherWorkspaceKey = api.keyIn(other, null, Scope.values());
    String alphaKey = api.keyForProjects("alpha");
    String betaKey = api.keyForProjects("beta");
    api.test(http -> {
      String id = http.startRun("hello", "alpha").json().get("id").asText();
      Http.Reply first = http.get("/v1/runs/" + id);
      assertEquals(200, first.status(), first::toString);
      assertEquals("succeeded", first.json().get("status").asText());
      assertFalse(first.json().get("finished_at").isNull(), first::toString);

      for (int i = 0; i < 3; i++) {
        Http.Reply again = http.get("/v1/runs/" + id);
        assertEquals(200, again.status(), again::toString);
        assertEquals(first.body(), again.body(), "the same record, byte for byte");
        assertTrue(again.header("Request-Id").startsWith("req_"));
      }
      assertProblem(http.get("/v1/runs/" + id, otherWorkspaceKey), 404, "run_not_found");
      assertProblem(http.get("/v1/runs/" + id + "/events", otherWorkspaceKey), 404, "run_not_found");
      assertProblem(http.get("/v1/runs/" + id, betaKey), 404, "run_not_found");
      assertEquals(first.body(), http.get("/v1/runs/" + id, alphaKey).body());
    });
  }

  /** A run still in progress is read from the database each time: a read shows every move made since. */
  @BothDatabases
  void a_run_in_progress_shows_each_move_made_since_the_last_read(Api api) {
    api.workflow("gated", true);
    api.test(http -> {
      String id = http.startRun("gated", "demo").json().get("id").asText();
      assertEquals("awaiting_approval", http.get("/v1/runs/" + id).json().get("status").asText());
      assertEquals("awaiting_approval", http.get("/v1/runs/" + id).json().get("status").asText());
      assertEquals(200, http.post("/v1/runs/" + id + "/cancel", "{}").status());
      Http.Reply canceled = http.get("/v1/runs/" + id);
      assertEquals("canceled", canceled.json().get("status").asText(), canceled::toString);
      assertEquals("canceled", api.storedRun(id).orElseThrow().get("status"));
      assertEquals(canceled.body(), http.get("/v1/runs/" + id).body());
    });
  }

  /** The database itself refuses to change a run that has ended, whatever version a writer holds. */
  @BothDatabases
  void an_ended_run_is_never_saved_again(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      String id = http.startRun("hello", "demo").json().get("id").asText();
      Run ended = api.jdbi().withHandle(h -> RunDao.find(h, api.workspace, id)).orElseThrow();
      assertEquals("succeeded", ended.status());
      Run changed = new Run(ended.id(), ended.workspaceId(), ended.kind(), ended.workflowId(), null, ended.project(), "running",
          ended.requiresApproval(), ended.inputs(), ended.createdAt(), Instant.now(), null, ended.approval(),
          ended.error(), ended.definition(), ended.steps(), 0, Instant.now(), null, null, ended.version() + 1, null, null, null,
          null, null);
      assertEquals(0, (int) api.jdbi().withExtension(RunDao.class, dao -> dao.saveProgress(changed)));
      assertEquals("succeeded", api.storedRun(id).orElseThrow().get("status"));
      assertEquals("succeeded", http.get("/v1/runs/" + id).json().get("status").asText());
    });
  }

  @BothDatabases
  void reading_runs_needs_runs_read(Api api) {
    api.workflow("hello", false);
    String writeOnly = api.key(Scope.RUNS_WRITE);
    api.test(http -> {
      String id = http.startRun("hello", "demo").json().get("id").asText();
      assertProblem(http.get("/v1/runs/" + id, writeOnly), 403, "insufficient_scope");
      assertProblem(http.get("/v1/runs", writeOnly), 403, "insufficient_scope");
      assertProblem(http.get("/v1/runs", null), 401, "missing_api_key");
    });
  }

  @BothDatabases
  void list_is_newest_first_with_the_page_shape(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      List<String> started = startRuns(http, "hello", "demo", 5);

      Http.Reply reply = http.get("/v1/runs");

      assertEquals(200, reply.status(), reply::toString);
      assertTrue(reply.header("Content-Type").startsWith("application/json"), reply.header("Content-Type"));
      JsonNode page = reply.json();
      assertEquals(List.of("data", "has_more", "next_cursor"), fieldNames(page));
      assertTrue(page.get("data").isArray());
      assertFalse(page.get("has_more").asBoolean());
      assertTrue(page.get("next_cursor").isNull());
      List<String> expected = new ArrayList<>(started);
      Collections.reverse(expected);
      assertEquals(expected, ids(page), "the run started last is listed first");
      Instant previous = Instant.MAX;
      for (JsonNode run : page.get("data")) {
        Instant created = Instant.parse(run.get("created_at").asText());
        assertFalse(created.isAfter(previous), "created_at never increases down the list");
        previous = created;
        assertEquals(http.get("/v1/runs/" + run.get("id").asText()).json(), run, "list items are full run records");
      }
    });
  }

  @BothDatabases
  void list_of_an_empty_workspace_is_an_empty_page(Api api) {
    api.test(http -> {
      Http.Reply reply = http.get("/v1/runs");
      assertEquals(200, reply.status(), reply::toString);
      assertEquals(0, reply.json().get("data").size());
      assertFalse(reply.json().get("has_more").asBoolean());
      assertTrue(reply.json().get("next_cursor").isNull());
    });
  }

  @BothDatabases
  void list_limit_defaults_to_20_and_accepts_1_to_100(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      List<String> started = startRuns(http, "hello", "demo", 21);
      String newest = started.get(20);

      JsonNode page = http.get("/v1/runs").json();
      assertEquals(20, page.get("data").size());
      assertTrue(page.get("has_more").asBoolean());
      assertEquals(ids(page).get(19), page.get("next_cursor").asText(), "the cursor is the last id of the page");

      JsonNode one = http.get("/v1/runs?limit=1").json();
      assertEquals(List.of(newest), ids(one));
      assertTrue(one.get("has_more").asBoolean());
      assertEquals(newest, one.get("next_cursor").asText());

      JsonNode all = http.get("/v1/runs?limit=100").json();
      assertEquals(21, all.get("data").size());
      assertFalse(all.get("has_more").asBoolean());
      assertTrue(all.get("next_cursor").isNull());

      JsonNode exact = http.get("/v1/runs?limit=21").json();
      assertEquals(21, exact.get("data").size());
      assertFalse(exact.get("has_more").asBoolean(), "a page that holds the rest exactly has no more");
      assertTrue(exact.get("next_cursor").isNull());
    });
  }

  @BothDatabases
  void list_limit_out_of_range_or_not_a_number_is_400(Api api) {
    api.test(http -> {
      for (String bad : new String[] {"0", "101", "abc", "-1", "1.5", "", "99999999999"}) {
        assertProblem(http.get("/v1/runs?limit=" + bad), 400, "validation_failed", "limit");
      }
      assertProblem(http.get("/v1/runs?limit=5&limit=6"), 400, "validation_failed", "limit");
    });
  }

  @BothDatabases
  void list_unknown_query_parameter_is_400_naming_it(Api api) {
    api.test(http -> {
      JsonNode p = assertProblem(http.get("/v1/runs?page=2"), 400, "unknown_parameter", "page");
      assertTrue(p.get("detail").asText().contains("page"), p::toString);
      assertProblem(http.get("/v1/runs?limit=5&sort=asc"), 400, "unknown_parameter", "sort");
      assertProblem(http.get("/v1/runs?Limit=5"), 400, "unknown_parameter", "Limit");
    });
  }

  @BothDatabases
  void pagination_over_45_runs_visits_each_exactly_once_newest_first(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      List<String> started = startRuns(http, "hello", "demo", 45);

      List<Integer> sizes = new ArrayList<>();
      List<Boolean> hasMore = new ArrayList<>();
      List<String> seen = new ArrayList<>();
      String cursor = null;
      for (int pages = 0; pages < 10; pages++) {
        Http.Reply reply = http.get("/v1/runs?limit=20" + (cursor == null ? "" : "&starting_after=" + cursor));
        assertEquals(200, reply.status(), reply::toString);
        JsonNode page = reply.json();
        List<String> ids = ids(page);
        sizes.add(ids.size());
        hasMore.add(page.get("has_more").asBoolean());
        seen.addAll(ids);
        if (!page.get("has_more").asBoolean()) {
          assertTrue(page.get("next_cursor").isNull(), "no cursor on the last page");
          break;
        }
        assertEquals(ids.get(ids.size() - 1), page.get("next_cursor").asText());
        cursor = page.get("next_cursor").asText();
      }

      assertEquals(List.of(20, 20, 5), sizes);
      assertEquals(List.of(true, true, false), hasMore);
      assertEquals(45, new HashSet<>(seen).size(), "no duplicates");
      assertEquals(new HashSet<>(started), new HashSet<>(seen), "no gaps, nothing foreign");
      for (int i = 1; i < seen.size(); i++) {
        assertTrue(seen.get(i - 1).compareTo(seen.get(i)) > 0, "ids strictly descending at " + i + ": " + seen);
      }
      List<String> newestFirst = new ArrayList<>(started);
      Collections.reverse(newestFirst);
      assertEquals(newestFirst, seen, "newest first: the reverse of the order the runs were started");
    });
  }

  @BothDatabases
  void starting_after_that_is_not_a_run_id_is_400(Api api) {
    api.test(http -> {
      for (String bad : new String[] {"abc", "evt_01m80m00h08nf1qrfhqggxcsnm", "run_01M80M00H08NF1QRFHQGGXCSNM",
          "run_01m80m00h08nf1qrfhqggxcsn", ""}) {
        assertProblem(http.get("/v1/runs?starting_after=" + bad), 400, "validation_failed", "starting_after");
      }
    });
  }

  @BothDatabases
  void starting_after_an_id_not_in_the_list_still_means_older_than_it(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      List<String> started = startRuns(http, "hello", "demo", 3);
      // Sorts after every run id made today: all runs are older than it.
      JsonNode page = http.get("/v1/runs?starting_after=run_zzzzzzzzzzzzzzzzzzzzzzzzzz").json();
      assertEquals(3, page.get("data").size());
      JsonNode none = http.get("/v1/runs?starting_after=run_00000000000000000000000000").json();
      assertEquals(0, none.get("data").size());
      assertFalse(none.get("has_more").asBoolean());
      JsonNode afterOldest = http.get("/v1/runs?starting_after=" + started.get(0)).json();
      assertEquals(0, afterOldest.get("data").size());
    });
  }

  @BothDatabases
  void list_filters_by_workflow_and_project(Api api) {
    api.workflow("hello", false);
    api.workflow("deploy", false);
    api.test(http -> {
      List<String> helloDemo = startRuns(http, "hello", "demo", 2);
      List<String> helloOther = startRuns(http, "hello", "other", 1);
      List<String> deployDemo = startRuns(http, "deploy", "demo", 3);

      assertEquals(Set.copyOf(concat(helloDemo, helloOther)), Set.copyOf(ids(http.get("/v1/runs?workflow=hello").json())));
      assertEquals(Set.copyOf(deployDemo), Set.copyOf(ids(http.get("/v1/runs?workflow=deploy").json())));
      assertEquals(Set.copyOf(concat(helloDemo, deployDemo)), Set.copyOf(ids(http.get("/v1/runs?project=demo").json())));
      assertEquals(Set.copyOf(helloOther), Set.copyOf(ids(http.get("/v1/runs?project=other").json())));
      assertEquals(Set.copyOf(helloDemo), Set.copyOf(ids(http.get("/v1/runs?workflow=hello&project=demo").json())));
      assertEquals(0, http.get("/v1/runs?workflow=deploy&project=other").json().get("data").size());
      assertEquals(0, http.get("/v1/runs?workflow=nope").json().get("data").size());
      for (JsonNode run : http.get("/v1/runs?workflow=hello&project=demo").json().get("data")) {
        assertEquals("hello", run.get("workflow").asText());
        assertEquals("demo", run.get("project").asText());
      }

      assertProblem(http.get("/v1/runs?workflow=Hello"), 400, "validation_failed", "workflow");
      assertProblem(http.get("/v1/runs?project=a%20b"), 400, "validation_failed", "project");
    });
  }

  @BothDatabases
  void list_filters_by_status(Api api) {
    api.workflowThatCalls("hello");
    api.test(http -> {
      List<String> started = startRuns(http, "hello", "demo", 3);
      String done = started.get(1);
      api.jdbi().useHandle(h -> h.createUpdate("UPDATE run SET status = 'succeeded' WHERE id = :id").bind("id", done).execute());

      assertEquals(Set.of(started.get(0), started.get(2)), Set.copyOf(ids(http.get("/v1/runs?status=running").json())));
      assertEquals(List.of(done), ids(http.get("/v1/runs?status=succeeded").json()));
      assertEquals(0, http.get("/v1/runs?status=failed").json().get("data").size());
      assertEquals(Set.copyOf(started), Set.copyOf(ids(http.get("/v1/runs?status=running,succeeded").json())));
      assertEquals(Set.copyOf(started), Set.copyOf(ids(http.get("/v1/runs?status=running,%20succeeded").json())));
      assertEquals(List.of(done), ids(http.get("/v1/runs?status=failed,succeeded,canceled").json()));
      for (JsonNode run : http.get("/v1/runs?status=running").json().get("data")) {
        assertEquals("running", run.get("status").asText());
      }

      for (String bad : new String[] {"bogus", "running,bogus", "RUNNING", "", "running,"}) {
        assertProblem(http.get("/v1/runs?status=" + bad), 400, "validation_failed", "status");
      }
    });
  }

  @BothDatabases
  void list_filters_by_creation_time(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      List<String> early = startRuns(http, "hello", "demo", 2);
      Thread.sleep(30);
      Instant between = Instant.now();
      Thread.sleep(30);
      List<String> late = startRuns(http, "hello", "demo", 2);

      assertEquals(Set.copyOf(late), Set.copyOf(ids(http.get("/v1/runs?created_after=" + between).json())));
      assertEquals(Set.copyOf(early), Set.copyOf(ids(http.get("/v1/runs?created_before=" + between).json())));
      String plusTwo = between.atOffset(ZoneOffset.ofHours(2)).toString();
      assertEquals(Set.copyOf(late), Set.copyOf(ids(http.get("/v1/runs?created_after=" + enc(plusTwo)).json())),
          "an offset other than Z names the same instant");
      assertEquals(0, http.get("/v1/runs?created_after=" + Instant.now().plusSeconds(3600)).json().get("data").size());
      assertEquals(4, http.get("/v1/runs?created_after=2020-01-01T00:00:00Z").json().get("data").size());

      // After and before are strict: a run created exactly at the bound is left out.
      JsonNode lateRun = http.get("/v1/runs/" + late.get(1)).json();
      String at = lateRun.get("created_at").asText();
      assertFalse(ids(http.get("/v1/runs?created_after=" + at).json()).contains(late.get(1)));
      assertFalse(ids(http.get("/v1/runs?created_before=" + at).json()).contains(late.get(1)));
      assertTrue(ids(http.get("/v1/runs?created_before=" + Instant.parse(at).plusMillis(1)).json()).contains(late.get(1)));

      assertEquals(0, http.get("/v1/runs?created_after=" + between + "&created_before=" + between).json().get("data").size());

      for (String bad : new String[] {"yesterday", "2026-13-01T00:00:00Z", "2026-01-01", "2026-01-01T00:00:00", "1700000000",
          // Times neither database stores alike: refused rather than answered differently (or with a 500).
          "-999999999-01-01T00:00:00Z", "+999999999-12-31T23:59:59Z", "0000-12-31T23:59:59.999Z",
          "+10000-01-01T00:00:00Z", "0001-01-01T00:00:00+00:01"}) {
        assertProblem(http.get("/v1/runs?created_after=" + enc(bad)), 400, "validation_failed", "created_after");
        assertProblem(http.get("/v1/runs?created_before=" + enc(bad)), 400, "validation_failed", "created_before");
      }
      // The first and the last storable times are accepted, and compare as they should.
      assertEquals(4, http.get("/v1/runs?created_after=0001-01-01T00:00:00Z").json().get("data").size());
      assertEquals(4, http.get("/v1/runs?created_before=" + enc("9999-12-31T23:59:59.999Z")).json().get("data").size());
      assertEquals(0, http.get("/v1/runs?created_before=0001-01-01T00:00:00Z").json().get("data").size());
      assertEquals(0, http.get("/v1/runs?created_after=" + enc("9999-12-31T23:59:59.999Z")).json().get("data").size());
    });
  }

  @BothDatabases
  void filters_combine_and_paginate_together(Api api) {
    api.workflowThatCalls("hello");
    api.workflowThatCalls("deploy");
    api.test(http -> {
      startRuns(http, "hello", "demo", 2);
      Thread.sleep(30);
      Instant between = Instant.now();
      Thread.sleep(30);
      List<String> wanted = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        wanted.add(http.startRun("hello", "demo").json().get("id").asText());
        startRuns(http, "deploy", "demo", 1);
        startRuns(http, "hello", "other", 1);
      }
      String done = wanted.get(0);
      api.jdbi().useHandle(h -> h.createUpdate("UPDATE run SET status = 'failed' WHERE id = :id").bind("id", done).execute());
      List<String> running = wanted.subList(1, 5);

      String query = "/v1/runs?workflow=hello&project=demo&status=running&created_after=" + between + "&limit=3";
      JsonNode first = http.get(query).json();
      assertEquals(3, first.get("data").size());
      assertTrue(first.get("has_more").asBoolean());
      JsonNode second = http.get(query + "&starting_after=" + first.get("next_cursor").asText()).json();
      assertEquals(1, second.get("data").size());
      assertFalse(second.get("has_more").asBoolean());
      assertTrue(second.get("next_cursor").isNull());
      List<String> newestFirst = new ArrayList<>(running);
      Collections.reverse(newestFirst);
      assertEquals(newestFirst, concat(ids(first), ids(second)));

      assertEquals(List.of(done),
          ids(http.get("/v1/runs?workflow=hello&project=demo&status=failed,succeeded&created_after=" + between).json()));
    });
  }

  @BothDatabases
  void a_key_limited_to_projects_reads_only_those_runs(Api api) {
    api.workflow("hello", false);
    String demoOnly = api.keyForProjects("demo");
    api.test(http -> {
      List<String> demo = startRuns(http, "hello", "demo", 2);
      String other = startRuns(http, "hello", "other", 1).get(0);

      assertEquals(Set.copyOf(demo), Set.copyOf(ids(http.get("/v1/runs", demoOnly).json())));
      assertEquals(200, http.get("/v1/runs/" + demo.get(0), demoOnly).status());
      assertProblem(http.get("/v1/runs/" + other, demoOnly), 404, "run_not_found");
      assertProblem(http.get("/v1/runs?project=other", demoOnly), 403, "project_forbidden", "project");
    });
  }

  private static List<String> startRuns(Http http, String workflow, String project, int count) {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      Http.Reply reply = http.startRun(workflow, project);
      assertEquals(200, reply.status(), reply::toString);
      ids.add(reply.json().get("id").asText());
    }
    return ids;
  }

  private static List<String> ids(JsonNode page) {
    List<String> ids = new ArrayList<>();
    page.get("data").forEach(run -> ids.add(run.get("id").asText()));
    return ids;
  }

  private static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  private static String enc(String text) {
    return URLEncoder.encode(text, StandardCharsets.UTF_8);
  }
}
