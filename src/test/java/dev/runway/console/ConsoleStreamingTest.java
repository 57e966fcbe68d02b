package dev.runway.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.engine.Engine;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Browser;
import dev.runway.support.FakeModel;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import java.time.Duration;
import java.time.Instant;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A streamed agent answer on the console's run page: the page names its last event, and
 * /console/runs/{id}/live answers the text streamed since, then that the run moved on. The events
 * table leaves the pieces out.
 */
class ConsoleStreamingTest {
  private static final String ANSWER = "One two three four five six seven eight nine ten.";
  private static final Pattern LIVE = Pattern.compile("id=\"live\" data-run=\"([^\"]+)\" data-after=\"([^\"]+)\"");

  @BothDatabases
  void the_run_page_follows_a_streamed_answer_as_it_comes(Api api) throws Exception {
    try (FakeModel model = FakeModel.start();
        Engine engine = api.database().startEngine(s -> s.with("agents.model.base_url", model.baseUrl())
            .with("agents.model.api_key", "sk-test"))) {
      model.script(FakeModel.Reply.text(ANSWER).chunkGap(Duration.ofMillis(250)));
      api.test(http -> {
        assertEquals(201, http.put("/v1/agents/talker", "{\"model\":\"test-model\"}").status());
        Browser browser = ConsoleRunsTest.owner(api, http);
        String run = http.post("/v1/agents/talker/runs", "{\"project\":\"demo\",\"input\":\"count\",\"stream\":true}")
            .json().get("id").asText();
        Runs.await(http, run, "the answer streaming", r -> http.get("/v1/runs/" + run + "/events?limit=1000").body()
            .contains("run.message.delta"));
        Browser.Page page = browser.get("/console/runs/" + run);
        assertEquals(200, page.status());
        Matcher live = LIVE.matcher(page.body());
        assertTrue(live.find(), page.body());
        assertEquals(run, live.group(1));
        assertFalse(page.body().contains("<code>run.message.delta</code>"), "the events table leaves the pieces out");
        String after = live.group(2);

        String seen = "";
        Instant until = Instant.now().plusSeconds(20);
        JsonNode answer;
        do {
          Browser.Page asked = browser.get("/console/runs/" + run + "/live?after=" + after);
          assertEquals(200, asked.status(), asked::body);
          assertEquals("no-store", asked.header("Cache-Control"));
          answer = Json.tree(asked.body());
          String text = answer.get("text").asText();
          assertTrue(ANSWER.startsWith(text) && text.length() >= seen.length(), "'" + text + "' after '" + seen + "'");
          seen = text;
          assertTrue(Instant.now().isBefore(until), "the run never moved on");
          Thread.sleep(100);
        } while (!answer.get("changed").asBoolean());
        assertFalse(seen.isEmpty(), "some of the answer showed before the run moved on");
        Runs.awaitStatus(http, run, "succeeded");

        assertEquals(404, browser.get("/console/runs/" + run + "/live?after=nope").status());
        assertEquals(404, browser.get("/console/runs/run_01m8ffffffffffffffffffffff/live?after=" + after).status());
        assertEquals(303, new Browser(http.origin()).get("/console/runs/" + run + "/live?after=" + after).status());
        Http.Reply plain = http.get("/v1/runs/" + run);
        assertTrue(plain.json().get("stream").asBoolean());
      });
    }
  }
}
