package dev.runway.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Browser;
import dev.runway.support.FakeModel;
import dev.runway.support.Http;
import dev.runway.support.ToolServer;
import java.util.UUID;

/**
 * The console's runs, workflows and agents pages through HTTP on both databases: the list with its
 * filters and pages, a run with its steps and events, approve, reject and cancel with the API's
 * rules (an ended run refuses, as the API's 409 does), and another workspace's runs unreachable.
 */
class ConsoleRunsTest {
  static final String PASSWORD = "correct horse battery staple 7";

  /**
   * Signs up an account (password {@link #PASSWORD}) that takes the test's workspace (with a setup
   * code), so it sees the runs the test starts; returns its email.
   */
  static String signUpOwner(Api api, Http http) {
    String code = api.services().accounts().newSetupCode(api.workspace);
    Browser browser = new Browser(http.origin());
    browser.get("/console/signup");
    String email = "owner-" + UUID.randomUUID().toString().substring(0, 8) + "@example.com";
    Browser.Page done = browser.post("/console/signup", "email", email, "password", PASSWORD, "setup_code", code);
    assertEquals(303, done.status(), done::toString);
    return email;
  }

  /** A browser signed in as a new owner of the test's workspace. */
  static Browser owner(Api api, Http http) {
    String email = signUpOwner(api, http);
    Browser browser = new Browser(http.origin());
    browser.get("/console/signin");
    assertEquals(303, browser.post("/console/signin", "email", email, "password", PASSWORD).status());
    return browser;
  }

  private static String start(Http http, String workflow, String project) {
    Http.Reply r = http.startRun(workflow, project);
    assertEquals(200, r.status(), r::toString);
    return r.json().get("id").asText();
  }

  @BothDatabases
  void the_runs_list_filters_by_status_and_kind_and_pages(Api api) {
    api.workflow("quick", false);
    api.workflow("gated", true);
    api.test(http -> {
      Browser browser = owner(api, http);
      String done = start(http, "quick", "alpha");
      String waiting = start(http, "gated", "beta");
      String latest = null;
      for (int i = 0; i < 25; i++) {
        latest = start(http, "quick", "alpha");
      }
      Browser.Page all = browser.get("/console/runs");
      assertEquals(200, all.status(), all::toString);
      assertTrue(all.body().contains("Next page"), "27 runs: two pages of 25");
      Browser.Page gated = browser.get("/console/runs?status=awaiting_approval");
      assertTrue(gated.body().contains(waiting));
      assertTrue(gated.body().contains("<span class=\"status awaiting_approval\">awaiting approval</span>"),
          gated::toString);
      assertFalse(gated.body().contains(done));
      assertTrue(gated.body().contains("http-equiv=\"refresh\""), "a run in progress on it: it reloads");
      Browser.Page ended = browser.get("/console/runs?status=succeeded");
      assertTrue(ended.body().contains(latest));
      assertFalse(ended.body().contains("http-equiv=\"refresh\""), "only ended runs: no reload");
      Browser.Page agents = browser.get("/console/runs?kind=agent");
      assertTrue(agents.body().contains("No runs match these filters"), agents::toString);
      String next = all.body().replaceAll("(?s).*href=\"(/console/runs\\?starting_after=run_[0-9a-z]+)\".*", "$1");
      Browser.Page second = browser.get(next);
      assertEquals(200, second.status());
      assertTrue(second.body().contains(done), "the oldest run is on the second page");
    });
  }

  @BothDatabases
  void a_run_page_shows_its_steps_and_events_and_reloads_while_it_runs(Api api) {
    api.workflowThatCalls("calls");
    api.test(http -> {
      Browser browser = owner(api, http);
      String run = start(http, "calls", "demo");
      Browser.Page page = browser.get("/console/runs/" + run);
      assertEquals(200, page.status(), page::toString);
      assertTrue(page.body().contains("run.started"));
      assertTrue(page.body().contains("<h2>Steps</h2>"));
      assertTrue(page.body().contains("<td>http</td>"), page::toString);
      assertTrue(page.body().contains("http-equiv=\"refresh\" content=\"5\""), "a running run's page reloads");
      assertTrue(page.body().contains("Cancel run"));
      assertFalse(page.body().contains("Approve"));
    });
  }

  @BothDatabases
  void a_finished_runs_page_shows_its_output(Api api) {
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/out", "{\"output\":{\"greeting\":\"Hi {{ inputs.name }} <b>\"}}").status());
      Http.Reply started = http.post("/v1/workflows/out/runs", "{\"project\":\"demo\",\"inputs\":{\"name\":\"Ann\"}}");
      String run = started.json().get("id").asText();
      dev.runway.support.Runs.awaitStatus(http, run, "succeeded");
      Browser.Page page = owner(api, http).get("/console/runs/" + run);
      assertTrue(page.body().contains("<h2>Output</h2>"), page::toString);
      String output = page.body().substring(page.body().indexOf("<h2>Output</h2>"));
      assertTrue(output.contains("greeting") && output.contains("Hi Ann &lt;b&gt;"), output);
    });
  }

  @BothDatabases
  void a_parent_and_its_child_run_link_to_each_other(Api api) {
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/child", "{\"requires_approval\":true}").status());
      assertEquals(201, http.put("/v1/workflows/parent", "{\"steps\":[{\"type\":\"workflow\",\"workflow\":\"child\"}]}")
          .status());
      String parent = start(http, "parent", "demo");
      String child = http.get("/v1/runs/" + parent).json().get("steps").get(0).get("child_run_id").asText();
      Browser browser = owner(api, http);
      Browser.Page page = browser.get("/console/runs/" + parent);
      assertTrue(page.body().contains("<a href=\"/console/runs/" + child + "\">child run"), page::toString);
      assertTrue(page.body().contains("<span class=\"status waiting\">waiting</span>"), "the child awaits approval");
      String children = page.body().substring(page.body().indexOf("<h2 id=\"child-runs\">Child runs</h2>"));
      assertTrue(children.contains("<a href=\"/console/runs/" + child + "\"><code>" + child + "</code></a>"), children);
      assertFalse(children.contains("All child runs"), "its one child is listed");
      Browser.Page childPage = browser.get("/console/runs/" + child);
      assertTrue(childPage.body().contains("<dt>Started by</dt><dd><a href=\"/console/runs/" + parent + "\">"),
          childPage::toString);
      assertTrue(childPage.body().contains("Approve"), "the child's approval is decided on its own page");
      assertFalse(childPage.body().contains("Child runs"), "a run without children lists none");
    });
  }

  @BothDatabases
  void a_reruns_page_links_the_run_it_reruns_and_marks_its_reused_steps(Api api) {
    try (dev.runway.engine.Engine engine = api.database().startEngine()) {
      api.test(http -> {
        assertEquals(201, http.put("/v1/workflows/two-gates", "{\"steps\":[{\"id\":\"ok\",\"type\":\"approval\"},"
            + "{\"id\":\"again\",\"type\":\"approval\"}]}").status());
        String first = start(http, "two-gates", "demo");
        for (int gate = 0; gate < 2; gate++) {
          dev.runway.support.Runs.awaitStatus(http, first, "awaiting_approval");
          assertEquals(200, http.post("/v1/runs/" + first + "/approve", "{}").status());
        }
        dev.runway.support.Runs.awaitStatus(http, first, "succeeded");
        Http.Reply rerun = http.post("/v1/runs/" + first + "/rerun", "{\"from_step\":\"again\"}");
        assertEquals(200, rerun.status(), rerun::toString);
        String id = rerun.json().get("id").asText();
        dev.runway.support.Runs.awaitStatus(http, id, "awaiting_approval");
        Browser.Page page = owner(api, http).get("/console/runs/" + id);
        assertTrue(page.body().contains("<dt>Rerun of</dt><dd><a href=\"/console/runs/" + first + "\"><code>" + first
            + "</code></a></dd>"), page::toString);
        assertTrue(page.body().contains("succeeded (reused)"), page::toString);
        assertTrue(page.body().contains("Approve"), "the rerun waits at the step it reruns from");
      });
    }
  }

  @BothDatabases
  void a_foreach_runs_page_links_its_first_100_iterations_and_the_list_of_all(Api api) {
    try (dev.runway.engine.Engine engine = api.database().startEngine()) {
      api.test(http -> {
        assertEquals(201, http.put("/v1/workflows/many", """
            {"steps":[{"id":"each","type":"foreach","items":"inputs.items","concurrency":100,
                       "steps":[{"id":"echo","type":"delay","seconds":0}]}]}""").status());
        String items = java.util.stream.IntStream.range(0, 101).mapToObj(Integer::toString)
            .collect(java.util.stream.Collectors.joining(",", "[", "]"));
        String run = http.post("/v1/workflows/many/runs", "{\"project\":\"demo\",\"inputs\":{\"items\":" + items + "}}")
            .json().get("id").asText();
        dev.runway.support.Runs.awaitStatus(http, run, "succeeded");
        java.util.List<String> iterations = new java.util.ArrayList<>();
        for (String after = null; iterations.size() < 101; ) {
          com.fasterxml.jackson.databind.JsonNode listed = http.get("/v1/runs?limit=100&parent_run_id=" + run
              + (after == null ? "" : "&starting_after=" + after)).json();
          listed.get("data").forEach(r -> iterations.add(r.get("id").asText()));
          after = listed.get("next_cursor").asText();
        }
        Browser browser = owner(api, http);
        Browser.Page page = browser.get("/console/runs/" + run);
        assertEquals(200, page.status(), page::toString);
        assertTrue(page.body().contains("<a href=\"#child-runs\">iterations</a>"), "the foreach step points to them");
        String children = page.body().substring(page.body().indexOf("<h2 id=\"child-runs\">Child runs</h2>"));
        for (String iteration : iterations.subList(0, 100)) { // the newest 100
          assertTrue(children.contains("<a href=\"/console/runs/" + iteration + "\">"), iteration);
        }
        assertFalse(children.contains("/console/runs/" + iterations.get(100) + "\""), "the oldest is past the first 100");
        String all = "/console/runs?parent_run_id=" + run;
        assertTrue(children.contains("<a href=\"" + all + "\">All child runs</a>"), children);

        Browser.Page list = browser.get(all);
        assertEquals(200, list.status(), list::toString);
        assertTrue(list.body().contains("Child runs of <code>" + run + "</code>"), list::toString);
        assertTrue(list.body().contains(iterations.get(0)) && !list.body().contains(iterations.get(25)), "25 a page");
        String next = list.body().replaceAll("(?s).*href=\"(/console/runs\\?parent_run_id=run_[0-9a-z]+&amp;"
            + "starting_after=run_[0-9a-z]+)\".*", "$1").replace("&amp;", "&");
        Browser.Page second = browser.get(next);
        assertEquals(200, second.status(), next);
        assertTrue(second.body().contains(iterations.get(25)) && !second.body().contains(iterations.get(0)), next);
        assertTrue(second.body().contains("<a href=\"" + all.replace("&", "&amp;") + "\">First page</a>"),
            second::toString);
      });
    }
  }

  @BothDatabases
  void approve_reject_and_cancel_follow_the_apis_rules(Api api) {
    api.workflow("gated", true);
    api.test(http -> {
      Browser browser = owner(api, http);
      String approved = start(http, "gated", "demo");
      Browser.Page page = browser.get("/console/runs/" + approved);
      assertTrue(page.body().contains("Waiting for approval"));
      Browser.Page ok = browser.post("/console/runs/" + approved + "/approve", "comment", "looks <fine>");
      assertEquals(303, ok.status(), ok::toString);
      assertEquals("/console/runs/" + approved, ok.header("Location"));
      assertFalse("awaiting_approval".equals(http.get("/v1/runs/" + approved).json().get("status").asText()));
      Browser.Page after = browser.get("/console/runs/" + approved);
      assertTrue(after.body().contains("run.approved"));
      assertTrue(after.body().contains("looks &lt;fine&gt;"), "the comment, escaped");
      // The approver is the account, as the API records a key.
      String decidedBy = http.get("/v1/runs/" + approved).json().get("approval").get("decided_by").asText();
      assertTrue(decidedBy.startsWith("acct_"), decidedBy);

      String rejected = start(http, "gated", "demo");
      browser.get("/console/runs/" + rejected);
      assertEquals(303, browser.post("/console/runs/" + rejected + "/reject", "comment", "no").status());
      assertEquals("rejected", http.get("/v1/runs/" + rejected).json().get("status").asText());
      Browser.Page again = browser.post("/console/runs/" + rejected + "/approve", "comment", "");
      assertEquals(409, again.status(), "as the API answers an ended run");
      assertTrue(again.body().contains("class=\"error\""), again::toString);

      String canceled = start(http, "gated", "demo");
      browser.get("/console/runs/" + canceled);
      assertEquals(303, browser.post("/console/runs/" + canceled + "/cancel").status());
      assertEquals("canceled", http.get("/v1/runs/" + canceled).json().get("status").asText());
      assertEquals(404, browser.post("/console/runs/" + canceled + "/launch").status());
    });
  }

  @BothDatabases
  void a_run_waiting_for_a_signal_shows_it_and_takes_it_from_the_form(Api api) {
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/paid", "{\"steps\":[{\"type\":\"wait\",\"id\":\"pay\","
          + "\"signal\":\"payment_received\",\"timeout_s\":600}]}").status());
      Browser browser = owner(api, http);
      String runId = start(http, "paid", "demo");
      Browser.Page page = browser.get("/console/runs/" + runId);
      assertTrue(page.body().contains("Waiting for signal <code>payment_received</code>"), page::toString);
      assertTrue(page.body().contains("waiting for signal payment_received until "), page::toString);
      assertFalse(page.body().contains("http-equiv=\"refresh\""), "no reload while a form waits to be filled");

      Browser.Page bad = browser.post("/console/runs/" + runId + "/signal", "signal", "payment_received", "body", "{oops");
      assertEquals(400, bad.status(), bad::toString);
      assertTrue(bad.body().contains("The body must be JSON"), bad::toString);
      assertEquals("waiting", http.get("/v1/runs/" + runId).json().get("steps").get(0).get("status").asText());
      assertEquals(403, browser.postWithToken("/console/runs/" + runId + "/signal", null, "signal", "payment_received",
          "body", "{}").status(), "a form without the session's token sends nothing");

      Browser.Page sent = browser.post("/console/runs/" + runId + "/signal", "signal", "payment_received",
          "body", "{\"amount\": 7}");
      assertEquals(303, sent.status(), sent::toString);
      JsonNode run = http.get("/v1/runs/" + runId).json();
      assertEquals("succeeded", run.get("status").asText(), run::toString);
      assertEquals(7, run.get("steps").get(0).get("output").get("amount").asInt());
      Browser.Page after = browser.get("/console/runs/" + runId);
      assertTrue(after.body().contains("run.signal_received"));
      assertFalse(after.body().contains("Send signal"));
      assertEquals(409, browser.post("/console/runs/" + runId + "/signal", "signal", "payment_received", "body", "1")
          .status(), "as the API answers an ended run");
    });
  }

  @BothDatabases
  void another_workspaces_runs_are_not_found_also_by_editing_the_url(Api api) {
    api.workflow("gated", true);
    api.test(http -> {
      String theirs = start(http, "gated", "demo");
      Browser stranger = new Browser(http.origin());
      ConsoleTest.signUp(stranger);
      assertFalse(stranger.get("/console/runs").body().contains(theirs));
      assertEquals(404, stranger.get("/console/runs/" + theirs).status());
      stranger.get("/console/runs");
      assertEquals(404, stranger.post("/console/runs/" + theirs + "/approve").status());
      assertEquals(404, stranger.post("/console/runs/" + theirs + "/cancel").status());
      assertEquals("awaiting_approval", http.get("/v1/runs/" + theirs).json().get("status").asText());
      assertEquals(404, stranger.get("/console/runs/not-a-run").status());
      // Forms without the session's token change nothing.
      Browser owner = owner(api, http);
      assertEquals(403, owner.postWithToken("/console/runs/" + theirs + "/approve", null).status());
      assertEquals("awaiting_approval", http.get("/v1/runs/" + theirs).json().get("status").asText());
    });
  }

  @BothDatabases
  void an_agent_runs_page_shows_its_transcript(Api api) throws Exception {
    try (dev.runway.engine.Engine engine = api.database().startEngine()) {
      api.test(http -> {
        Browser browser = owner(api, http);
        String sample = java.nio.file.Files.readString(java.nio.file.Path.of("config/agents/clock.json"));
        assertEquals(201, http.put("/v1/agents/clock", sample).status());
        String id = http.post("/v1/agents/clock/runs", "{\"project\":\"demo\",\"input\":\"Europe/Paris\"}").json()
            .get("id").asText();
        dev.runway.support.Runs.awaitStatus(http, id, "succeeded");
        Browser.Page page = browser.get("/console/runs/" + id);
        assertEquals(200, page.status(), page::toString);
        assertTrue(page.body().contains("<h2>Transcript</h2>"), page::toString);
        for (String role : new String[] {"system", "user", "assistant", "tool"}) {
          assertTrue(page.body().contains("<li class=\"" + role + "\">"), role);
        }
        assertTrue(page.body().contains("current_time"), "the tool call");
        assertTrue(page.body().contains("tool_call.finished"), "the events");
        assertFalse(page.body().contains("http-equiv=\"refresh\""), "an ended run's page does not reload");
        assertTrue(browser.get("/console/runs?kind=agent").body().contains(id));
        assertTrue(browser.get("/console/workflows").body().contains("<code>clock</code>"));
        // Its thread, and how much of it a run that continues the thread was given.
        String thread = http.get("/v1/runs/" + id).json().get("thread_id").asText();
        assertTrue(page.body().contains("<dt>Thread</dt><dd><code>" + thread + "</code>"), page::toString);
        String next = http.post("/v1/agents/clock/runs", "{\"project\":\"demo\",\"input\":\"Asia/Tokyo\","
            + "\"thread_id\":\"" + thread + "\"}").json().get("id").asText();
        dev.runway.support.Runs.awaitStatus(http, next, "succeeded");
        assertTrue(browser.get("/console/runs/" + next).body().contains("(given 4 earlier messages of the thread)"));
      });
    }
  }

  @BothDatabases
  void the_parallel_calls_of_a_turn_are_approved_one_by_one_and_shown_in_the_transcript(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        dev.runway.engine.Engine engine = api.database().startEngine(s -> s.with("agents.model.base_url",
            model.baseUrl()).with("agents.model.api_key", "sk-test"))) {
      model.script(FakeModel.Reply.toolCalls(FakeModel.ToolCall.of("call_1", "refund", java.util.Map.of("n", 1)),
          FakeModel.ToolCall.of("call_2", "refund", java.util.Map.of("n", 2))), FakeModel.Reply.text("done"));
      api.test(http -> {
        Browser browser = owner(api, http);
        assertEquals(201, http.put("/v1/agents/refunds", "{\"model\":\"m\",\"tools\":[{\"name\":\"refund\","
            + "\"url\":\"" + tools.url("/refund") + "\",\"requires_approval\":true}]}").status());
        String id = http.post("/v1/agents/refunds/runs", "{\"project\":\"demo\",\"input\":\"go\"}").json()
            .get("id").asText();
        dev.runway.support.Runs.awaitStatus(http, id, "awaiting_approval");
        Browser.Page page = browser.get("/console/runs/" + id);
        assertTrue(page.body().contains("Approve all"), page::toString);
        for (String call : new String[] {"call_1", "call_2"}) {
          assertTrue(page.body().contains("<input type=\"hidden\" name=\"tool_call_id\" value=\"" + call + "\">"),
              call);
        }
        Browser.Page one = browser.post("/console/runs/" + id + "/approve", "tool_call_id", "call_1");
        assertEquals(303, one.status(), one::toString);
        assertEquals("awaiting_approval", http.get("/v1/runs/" + id).json().get("status").asText());
        Browser.Page left = browser.get("/console/runs/" + id);
        assertFalse(left.body().contains("value=\"call_1\""), "call_1 is decided");
        assertEquals(303, browser.post("/console/runs/" + id + "/reject", "comment", "not this one").status());
        dev.runway.support.Runs.awaitStatus(http, id, "succeeded");
        assertEquals(1, tools.calls("/refund").size());
        Browser.Page done = browser.get("/console/runs/" + id);
        String body = done.body();
        int first = body.indexOf("<code class=\"call\">call_1</code>");
        int second = body.indexOf("<code class=\"call\">call_2</code>");
        assertTrue(first > 0 && second > first, "each result names its call, in the model's order: " + body);
        assertTrue(body.contains("rejected by the approver: not this one"), body);
      });
    }
  }

  @BothDatabases
  void an_agent_runs_page_shows_its_output_text_or_its_json_value_pretty_printed(Api api) throws Exception {
    try (dev.runway.engine.Engine engine = api.database().startEngine()) {
      api.test(http -> {
        Browser browser = owner(api, http);
        assertEquals(201, http.put("/v1/agents/echo", "{\"model\":\"m\"}").status());
        assertEquals(201, http.put("/v1/agents/tiers", "{\"model\":\"m\",\"output_schema\":{\"type\":\"object\","
            + "\"properties\":{\"tier\":{\"enum\":[\"gold\",\"silver\"]}},\"required\":[\"tier\"]}}").status());
        String text = http.post("/v1/agents/echo/runs", "{\"project\":\"demo\",\"input\":\"a <b>\"}").json()
            .get("id").asText();
        String json = http.post("/v1/agents/tiers/runs", "{\"project\":\"demo\",\"input\":{\"tier\":\"silver\"}}")
            .json().get("id").asText();
        dev.runway.support.Runs.awaitStatus(http, text, "succeeded");
        dev.runway.support.Runs.awaitStatus(http, json, "succeeded");

        String textPage = browser.get("/console/runs/" + text).body().replaceAll(">\\s+<", "><");
        assertTrue(textPage.contains("<h2>Output</h2><pre class=\"json text\">You said: a &lt;b&gt;</pre>"), textPage);
        String jsonPage = browser.get("/console/runs/" + json).body().replaceAll(">\\s+<", "><")
            .replace("&#34;", "\"").replace("&quot;", "\"");
        assertTrue(jsonPage.contains("<h2>Output</h2><pre class=\"json\">{\n  \"tier\" : \"silver\"\n}</pre>"),
            jsonPage);
      });
    }
  }

  @BothDatabases
  void the_workflows_page_lists_the_workspaces_workflows_and_agents(Api api) {
    api.workflow("gated", true);
    api.test(http -> {
      Browser browser = owner(api, http);
      Browser.Page page = browser.get("/console/workflows");
      assertEquals(200, page.status());
      assertTrue(page.body().contains("<code>gated</code>"), page::toString);
      assertTrue(page.body().contains("0 steps, approval"));
      assertTrue(page.body().contains("No agents yet."));
    });
  }
}
