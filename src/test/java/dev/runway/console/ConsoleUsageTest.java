package dev.runway.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Browser;
import java.time.LocalDate;
import java.time.ZoneOffset;

/** The console's usage page: the workspace's tokens per day against its quota, and each agent's. */
class ConsoleUsageTest {
  private static void used(Api api, String table, String agent, LocalDate day, long tokens) {
    api.jdbi().useHandle(h -> h.createUpdate("INSERT INTO " + table + " (workspace_id, day_utc, "
        + (agent == null ? "" : "agent_id, ") + "tokens) VALUES (:ws, :day, " + (agent == null ? "" : ":agent, ")
        + ":tokens)").bind("ws", api.workspace).bind("day", day).bind("agent", agent).bind("tokens", tokens).execute());
  }

  @BothDatabases
  void the_usage_page_shows_the_days_against_the_quota_and_each_agent(Api api) {
    LocalDate today = LocalDate.now(ZoneOffset.UTC);
    used(api, "token_usage", null, today, 500);
    used(api, "token_usage", null, today.minusDays(3), 1_000);
    used(api, "token_usage", null, today.minusDays(20), 7_777); // older than the page's 14 days
    used(api, "agent_token_usage", "triage", today, 400);
    used(api, "agent_token_usage", "triage", today.minusDays(3), 1_000);
    used(api, "agent_token_usage", "clock", today, 100);
    used(api, "agent_token_usage", "old-agent", today.minusDays(20), 7_777);
    api.testWithServices(s -> s.with("agents.workspace_tokens_per_day", "2000"), http -> {
      Browser browser = ConsoleRunsTest.owner(api, http);
      Browser.Page page = browser.get("/console/usage");
      assertEquals(200, page.status());
      String body = page.body();
      assertTrue(body.contains("The daily quota is 2000 tokens"), body);
      assertTrue(body.contains("<td>" + today + "</td><td class=\"number\">500</td>"), body);
      assertTrue(body.contains("value=\"25\""), "500 of 2000 is 25% of the quota: " + body);
      assertTrue(body.contains("<td>" + today.minusDays(3) + "</td><td class=\"number\">1000</td>"), body);
      assertTrue(body.contains("<td>" + today.minusDays(13) + "</td><td class=\"number\">0</td>"), "every day shows");
      assertTrue(!body.contains(today.minusDays(14).toString()) && !body.contains("7777"), "14 days, no more");
      int triage = body.indexOf("<code>triage</code>");
      int clock = body.indexOf("<code>clock</code>");
      assertTrue(triage > 0 && clock > triage, "the agent that used the most first: " + body);
      assertTrue(body.contains("<td><code>triage</code></td><td class=\"number\">400</td><td class=\"number\">1400</td>"
          + "<td class=\"number\">1400</td>"), body);
      assertTrue(!body.contains("old-agent"), body);
      assertTrue(body.contains("href=\"/console/usage\" class=\"active\""), "the nav shows the page");
      // Signed out: to the sign-in page.
      assertEquals(303, new Browser(http.origin()).get("/console/usage").status());
    });
  }
}
