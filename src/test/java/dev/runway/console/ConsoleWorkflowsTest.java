package dev.runway.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Browser;
import dev.runway.support.Http;
import java.time.Instant;

/**
 * The console's workflows pages through HTTP on both databases: the list (archived ones too, linked,
 * 100 a page) and one workflow with its steps, its schedules (cron and time zone or interval, and
 * the next time GET /v1/workflows/{id} shows) and its CRM triggers, all that a tenant wrote escaped;
 * its runs' list; another workspace's workflows not found; signed out, the sign-in page.
 */
class ConsoleWorkflowsTest {
  private static final String SCHEDULED = """
      {"name": "Nightly report", "description": "Sums up the day",
       "steps": [{"id": "fetch", "type": "http", "url": "https://tools.example.com/report"},
                 {"id": "each", "type": "foreach", "items": "inputs.regions",
                  "steps": [{"id": "wait", "type": "delay", "seconds": 1}]},
                 {"type": "workflow", "workflow": "notify"}],
       "triggers": [{"schedule": {"cron": "0 9 * * MON-FRI", "timezone": "Europe/Paris"},
                     "project": "reports", "inputs": {"regions": ["eu"]}},
                    {"schedule": {"every": "15m", "missed": "skip"}},
                    {"crm": "contacts", "on": ["created", "updated"], "project": "crm"},
                    {"webhook": {"verify": "github", "secret": "GH_HOOK"}, "project": "ci"}]}""";

  /** What the console shows of an API time: as the runs list shows times. */
  private static String shown(JsonNode time) {
    return Views.time(Instant.parse(time.asText()));
  }

  @BothDatabases
  void a_workflows_page_shows_its_steps_its_schedules_with_their_next_times_its_hook_urls_and_its_crm_triggers(Api api) {
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/notify", "{}").status());
      Http.Reply put = http.put("/v1/workflows/nightly", SCHEDULED);
      assertEquals(201, put.status(), put::toString);
      JsonNode triggers = http.get("/v1/workflows/nightly").json().get("triggers");
      Browser browser = ConsoleRunsTest.owner(api, http);

      Browser.Page list = browser.get("/console/workflows");
      assertTrue(list.body().contains("<a href=\"/console/workflows/nightly\"><code>nightly</code></a>"), list::toString);
      assertTrue(list.body().contains("3 steps"), list::toString);

      Browser.Page page = browser.get("/console/workflows/nightly");
      assertEquals(200, page.status(), page::toString);
      String body = page.body();
      assertTrue(body.contains("<dt>Name</dt><dd>Nightly report</dd>"), body);
      assertTrue(body.contains("Sums up the day"));
      assertTrue(body.contains("<dt>Requires approval</dt><dd>no</dd>"), body);
      // The steps: id and type, a foreach's steps as JSON, a workflow step linked.
      assertTrue(body.contains("<td>fetch</td><td>http</td>"), body);
      assertTrue(body.contains("<td>each</td><td>foreach</td>"), body);
      assertTrue(body.contains("delay"), "the foreach's nested step");
      assertTrue(body.contains("<a href=\"/console/workflows/notify\">workflow <code>notify</code></a>"), body);
      // The schedules: cron and time zone, or the interval; the missed policy, project, inputs, next time.
      String schedules = body.substring(body.indexOf("<h3>Schedules</h3>"), body.indexOf("<h3>Record changes</h3>"));
      assertTrue(schedules.contains("<code>0 9 * * MON-FRI</code> in Europe/Paris"), schedules);
      assertTrue(schedules.contains("every <code>15m</code>"), schedules);
      assertTrue(schedules.contains("<td>run once</td>") && schedules.contains("<td>skip</td>"), schedules);
      assertTrue(schedules.contains("<td>reports</td>") && schedules.contains("<td>schedule</td>"), schedules);
      assertTrue(schedules.contains("regions"), "the inputs");
      assertTrue(schedules.contains("<td class=\"next-run\">" + shown(triggers.get(0).get("next_run_at")) + "</td>"),
          schedules);
      assertTrue(schedules.contains("<td class=\"next-run\">" + shown(triggers.get(1).get("next_run_at")) + "</td>"),
          schedules);
      String hooks = body.substring(body.indexOf("<h3>Inbound webhooks</h3>"), body.indexOf("<h3>Record changes</h3>"));
      String hookPath = java.net.URI.create(triggers.get(3).get("hook_url").asText()).getPath();
      assertTrue(hooks.contains(hookPath + "</code></td>"), hooks);
      assertTrue(hooks.contains("<td>github with secret <code>GH_HOOK</code></td>"), hooks);
      assertTrue(hooks.contains("<code>x-github-event, x-github-delivery, x-github-hook-id</code>"), hooks);
      assertTrue(hooks.contains("<td>ci</td>"), hooks);
      String records = body.substring(body.indexOf("<h3>Record changes</h3>"));
      assertTrue(records.contains("<td><code>contacts</code></td><td>created, updated</td><td>crm</td>"), records);
      assertTrue(body.contains("<a href=\"/console/runs?workflow=nightly\">"), "its runs");
      assertTrue(body.contains("<a href=\"/console/workflows\" class=\"active\">"), "under the workflows tab");

      // A workflow without triggers says so.
      assertTrue(browser.get("/console/workflows/notify").body().contains("None: its runs start through the API"));
    });
  }

  @BothDatabases
  void a_workflows_runs_are_listed_and_each_run_links_to_its_workflow(Api api) {
    api.workflowThatCalls("mine");
    api.workflowThatCalls("other");
    api.test(http -> {
      String mine = http.startRun("mine", "demo").json().get("id").asText();
      String other = http.startRun("other", "demo").json().get("id").asText();
      Browser browser = ConsoleRunsTest.owner(api, http);
      Browser.Page runs = browser.get("/console/runs?workflow=mine");
      assertEquals(200, runs.status(), runs::toString);
      assertTrue(runs.body().contains("Runs of <code>mine</code>"), runs::toString);
      assertTrue(runs.body().contains(mine) && !runs.body().contains(other), runs::toString);
      assertTrue(runs.body().contains("<input type=\"hidden\" name=\"workflow\" value=\"mine\">"), "kept by the filters");
      assertTrue(browser.get("/console/runs?workflow=mine&status=failed").body().contains("No runs match"));
      Browser.Page run = browser.get("/console/runs/" + mine);
      assertTrue(run.body().contains("<dt>Workflow</dt><dd><a href=\"/console/workflows/mine\"><code>mine</code></a></dd>"),
          run::toString);
    });
  }

  @BothDatabases
  void what_a_tenant_wrote_is_escaped(Api api) {
    api.test(http -> {
      Http.Reply put = http.put("/v1/workflows/tricky", """
          {"name": "<script>alert(1)</script>", "description": "<b>bold</b>",
           "steps": [{"id": "x", "type": "delay", "seconds": 1}],
           "triggers": [{"schedule": {"every": "1d"}, "inputs": {"note": "<img src=x onerror=alert(2)>"}}]}""");
      assertEquals(201, put.status(), put::toString);
      Browser browser = ConsoleRunsTest.owner(api, http);
      for (String path : new String[] {"/console/workflows", "/console/workflows/tricky"}) {
        String body = browser.get(path).body();
        assertTrue(body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), body);
        assertFalse(body.contains("<script>alert"), path);
        assertFalse(body.contains("<b>bold"), path);
      }
      String page = browser.get("/console/workflows/tricky").body();
      assertTrue(page.contains("&lt;img src=x onerror=alert(2)&gt;"), page);
      assertFalse(page.contains("<img"), page);
    });
  }

  @BothDatabases
  void archived_workflows_are_listed_and_shown_without_a_next_time(Api api) {
    api.test(http -> {
      assertEquals(201, http.put("/v1/workflows/old", "{\"triggers\":[{\"schedule\":{\"every\":\"1h\"}}]}").status());
      assertEquals(200, http.delete("/v1/workflows/old").status());
      Browser browser = ConsoleRunsTest.owner(api, http);
      String list = browser.get("/console/workflows").body();
      assertTrue(list.contains("<code>old</code></a> <span class=\"badge\">archived</span>"), list);
      Browser.Page page = browser.get("/console/workflows/old");
      assertEquals(200, page.status(), page::toString);
      assertTrue(page.body().contains("<dt>Archived</dt>"), page::toString);
      assertTrue(page.body().contains("none (archived)"), page::toString);
    });
  }

  @BothDatabases
  void the_workflows_list_shows_100_a_page(Api api) {
    for (int i = 0; i < 101; i++) {
      api.workflow(String.format("w%03d", i), false);
    }
    api.test(http -> {
      Browser browser = ConsoleRunsTest.owner(api, http);
      Browser.Page first = browser.get("/console/workflows");
      assertTrue(first.body().contains("<code>w099</code>") && !first.body().contains("<code>w100</code>"), "by id");
      assertTrue(first.body().contains("<a href=\"/console/workflows?starting_after=w099\">Next page</a>"),
          first::toString);
      assertTrue(first.body().contains("No agents yet."));
      Browser.Page second = browser.get("/console/workflows?starting_after=w099");
      assertEquals(200, second.status());
      assertTrue(second.body().contains("<code>w100</code>") && !second.body().contains("<code>w099</code>"),
          second::toString);
      assertTrue(second.body().contains("<a href=\"/console/workflows\">First page</a>"), second::toString);
      assertFalse(second.body().contains("Next page"));
    });
  }

  @BothDatabases
  void another_workspaces_or_an_unknown_workflow_is_not_found(Api api) {
    api.workflow("theirs", false);
    api.test(http -> {
      Browser stranger = new Browser(http.origin());
      ConsoleTest.signUp(stranger);
      assertFalse(stranger.get("/console/workflows").body().contains("theirs"));
      Browser.Page theirs = stranger.get("/console/workflows/theirs");
      assertEquals(404, theirs.status(), theirs::toString);
      assertTrue(theirs.body().contains("No such workflow"), theirs::toString);
      String run = http.startRun("theirs", "demo").json().get("id").asText();
      assertFalse(stranger.get("/console/runs?workflow=theirs").body().contains(run));
      assertEquals(404, stranger.get("/console/workflows/nothing-here").status());
      assertEquals(404, stranger.get("/console/workflows/Not%20a%20slug").status());
      assertEquals(200, ConsoleRunsTest.owner(api, http).get("/console/workflows/theirs").status());
    });
  }

  @BothDatabases
  void signed_out_the_workflows_pages_go_to_sign_in(Api api) {
    api.workflow("gated", true);
    api.test(http -> {
      Browser visitor = new Browser(http.origin());
      for (String path : new String[] {"/console/workflows", "/console/workflows/gated", "/console/workflows/nope"}) {
        Browser.Page page = visitor.get(path);
        assertEquals(303, page.status(), path);
        assertEquals("/console/signin", page.header("Location"), path);
      }
    });
  }

  @BothDatabases
  void a_workflows_page_shows_its_concurrency_and_the_runs_pages_show_queued_runs_with_their_key(Api api) {
    api.test(http -> {
      Http.Reply put = http.put("/v1/workflows/per-customer", "{\"requires_approval\": true, \"concurrency\": "
          + "{\"key\": \"{{inputs.customer}}\", \"limit\": 1, \"on_limit\": \"queue\"}}");
      assertEquals(201, put.status(), put::toString);
      String active = http.post("/v1/workflows/per-customer/runs", "{\"project\": \"demo\", \"inputs\": "
          + "{\"customer\": \"acme\"}}").json().get("id").asText();
      String queued = http.post("/v1/workflows/per-customer/runs", "{\"project\": \"demo\", \"inputs\": "
          + "{\"customer\": \"acme\"}}").json().get("id").asText();
      Browser browser = ConsoleRunsTest.owner(api, http);

      String workflow = browser.get("/console/workflows/per-customer").body();
      assertTrue(workflow.contains("<dt>Concurrency</dt><dd>at most 1 active run(s) per key "
          + "<code>{{inputs.customer}}</code>; past it: queue</dd>"), workflow);
      assertEquals(201, http.put("/v1/workflows/plain", "{}").status());
      assertFalse(browser.get("/console/workflows/plain").body().contains("<dt>Concurrency</dt>"), "it has none");

      Browser.Page list = browser.get("/console/runs?status=queued");
      assertEquals(200, list.status(), list::toString);
      assertTrue(list.body().contains("<option value=\"queued\" selected>queued</option>"), list::toString);
      assertTrue(list.body().contains(queued), list::toString);
      assertFalse(list.body().contains(active), "the active run is not queued");
      assertTrue(list.body().contains("<span class=\"status queued\">queued</span> <span class=\"muted\">key "
          + "<code>acme</code></span>"), list::toString);

      String run = browser.get("/console/runs/" + queued).body();
      assertTrue(run.contains("<span class=\"status queued\">queued</span>"), run);
      assertTrue(run.contains("<dt>Concurrency key</dt><dd><code>acme</code> <span class=\"muted\">(waits for a "
          + "place of this key)</span></dd>"), run);
      assertTrue(run.contains("run.queued"), "its timeline");
      assertTrue(browser.get("/console/runs/" + active).body().contains("<dt>Concurrency key</dt><dd><code>acme</code></dd>"));
    });
  }
}
