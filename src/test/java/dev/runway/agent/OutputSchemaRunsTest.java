package dev.runway.agent;

import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.engine.Engine;
import dev.runway.run.Run;
import dev.runway.run.RunDao;
import dev.runway.run.RunView;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.FakeModel;
import dev.runway.support.FakeModel.Reply;
import dev.runway.support.FakeModel.ToolCall;
import dev.runway.support.Http;
import dev.runway.support.ToolServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Agents with an output_schema, through HTTP: the model is asked for JSON (response_format), the
 * final answer is checked, a mismatch goes back once, and the run's output is the JSON value; on
 * the scripted fake model and on the built-in sandbox.
 */
class OutputSchemaRunsTest {
  private static final String TIER_SCHEMA = "{\"type\":\"object\",\"properties\":{\"tier\":{\"enum\":[\"gold\","
      + "\"silver\",\"bronze\"]},\"reason\":{\"type\":\"string\",\"minLength\":3}},\"required\":[\"tier\",\"reason\"],"
      + "\"additionalProperties\":false}";

  private static Engine engine(Api api, FakeModel model) {
    return api.database().startEngine(s -> s.with("agents.model.base_url", model.baseUrl())
        .with("agents.model.retry_base_ms", "20").with("shutdown.grace_seconds", "0"));
  }

  private static void agent(Http http, String id, String more) {
    Http.Reply put = http.put("/v1/agents/" + id, "{\"model\":\"test-model\",\"instructions\":\"Pick a tier.\","
        + "\"output_schema\":" + TIER_SCHEMA + more + "}");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
  }

  private static String start(Http http, String agent, String input) {
    Http.Reply reply = http.post("/v1/agents/" + agent + "/runs", "{\"project\":\"demo\",\"input\":" + input + "}");
    assertEquals(200, reply.status(), reply::toString);
    return reply.json().get("id").asText();
  }

  private static List<JsonNode> messages(Http http, String runId) {
    List<JsonNode> out = new ArrayList<>();
    http.get("/v1/runs/" + runId + "/messages?limit=1000").json().get("data").forEach(out::add);
    return out;
  }

  private static List<String> roles(List<JsonNode> messages) {
    return messages.stream().map(m -> m.get("role").asText()).toList();
  }

  @BothDatabases
  void a_valid_json_answer_is_the_runs_output_as_a_json_value_and_the_request_asked_for_it(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model)) {
      model.script(Reply.text("{\"tier\": \"silver\", \"reason\": \"two orders a year\"}"));
      api.test(http -> {
        agent(http, "tiers", "");
        String id = start(http, "tiers", "{\"customer\":\"Ada\"}");
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals(Api.json("{\"tier\":\"silver\",\"reason\":\"two orders a year\"}"), run.get("output"),
            "the JSON value, not its text");

        JsonNode request = model.lastRequest().body();
        assertEquals(Api.json("{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"output\",\"schema\":"
            + TIER_SCHEMA + "}}"), request.get("response_format"));
        assertEquals(Api.json("[{\"role\":\"system\",\"content\":\"Pick a tier.\"},{\"role\":\"user\","
            + "\"content\":\"{\\\"customer\\\":\\\"Ada\\\"}\"}]"), request.get("messages"),
            "the schema is not written into the messages");
        assertEquals(List.of("system", "user", "assistant"), roles(messages(http, id)));

        // Webhooks carry the run record as RunView.eventData makes it: the output as the JSON value too.
        Run stored = api.jdbi().withHandle(h -> RunDao.find(h, api.workspace, id)).orElseThrow();
        assertEquals(run.get("output"), Api.json(RunView.eventData(stored)).get("output"));
      });
    }
  }

  @BothDatabases
  void an_answer_that_is_not_json_goes_back_once_and_the_next_valid_one_ends_the_run(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model)) {
      tools.script("/orders", ToolServer.Reply.json(200, "{\"orders\":2}"));
      model.script(
          Reply.toolCalls(ToolCall.of("c1", "orders", Map.of())),
          Reply.text("Silver, I think."),
          Reply.text("{\"tier\":\"silver\",\"reason\":\"2 orders\"}"));
      api.test(http -> {
        agent(http, "tiers", ",\"tools\":[{\"name\":\"orders\",\"url\":\"" + tools.url("/orders") + "\"}]");
        String id = start(http, "tiers", "\"Ada\"");
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals("silver", run.get("output").get("tier").asText());
        assertEquals(3, run.get("usage").get("model_calls").asInt(), "the retry is a model call of its own");

        List<JsonNode> transcript = messages(http, id);
        assertEquals(List.of("system", "user", "assistant", "tool", "assistant", "user", "assistant"), roles(transcript));
        String sentBack = transcript.get(5).get("content").asText();
        assertTrue(sentBack.startsWith("Your answer cannot be used: the text is not valid JSON"), sentBack);
        assertTrue(model.requests().get(0).body().has("tools") && model.requests().get(0).body().has("response_format"),
            "tools and response_format go together");
        JsonNode retry = model.requests().get(2).body();
        JsonNode sent = retry.get("messages");
        assertEquals(6, sent.size(), sent::toString);
        assertEquals("Silver, I think.", sent.get(4).get("content").asText());
        assertEquals(sentBack, sent.get(5).get("content").asText());
        assertTrue(retry.has("response_format"));
      });
    }
  }

  @BothDatabases
  void two_answers_that_do_not_match_fail_the_run_with_output_invalid_and_the_last_stays(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model)) {
      model.script(Reply.text("{\"tier\":\"platinum\",\"reason\":\"big\"}"), Reply.text("{\"tier\":\"gold\"}"));
      api.test(http -> {
        agent(http, "tiers", "");
        String id = start(http, "tiers", "\"Ada\"");
        JsonNode run = awaitStatus(http, id, "failed");
        assertEquals("output_invalid", run.get("error").get("code").asText(), run::toString);
        String message = run.get("error").get("message").asText();
        assertTrue(message.contains("reason") && message.contains("required"), message);
        assertTrue(run.get("output").isNull(), "no output matched");
        assertEquals(2, model.requestCount());

        List<JsonNode> transcript = messages(http, id);
        assertEquals(List.of("system", "user", "assistant", "user", "assistant"), roles(transcript));
        String sentBack = transcript.get(3).get("content").asText();
        assertTrue(sentBack.contains("does not match the JSON Schema") && sentBack.contains("enum"), sentBack);
        assertEquals("{\"tier\":\"gold\"}", transcript.get(4).get("content").asText(), "the last answer is kept");
      });
    }
  }

  @BothDatabases
  void the_retry_counts_against_max_turns(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model)) {
      model.script(Reply.text("gold"));
      api.test(http -> {
        agent(http, "tiers", ",\"limits\":{\"max_turns\":1}");
        String id = start(http, "tiers", "\"Ada\"");
        JsonNode run = awaitStatus(http, id, "failed");
        assertEquals("max_turns_exceeded", run.get("error").get("code").asText(), run::toString);
        assertTrue(run.get("error").get("message").asText().contains("did not match output_schema"), run::toString);
        assertEquals(1, model.requestCount());
        assertEquals(List.of("system", "user", "assistant", "user"), roles(messages(http, id)));
      });
    }
  }

  @BothDatabases
  void a_retry_cut_off_by_a_stop_is_sent_again_from_the_committed_transcript(Api api) throws Exception {
    AtomicInteger calls = new AtomicInteger();
    try (FakeModel model = FakeModel.start()) {
      // The first answer is not JSON; the retry hangs until the engine that sent it is gone.
      model.respondWith(request -> switch (calls.incrementAndGet()) {
        case 1 -> Reply.text("not json");
        case 2 -> Reply.text("{\"tier\":\"gold\",\"reason\":\"late\"}").after(Duration.ofSeconds(30));
        default -> Reply.text("{\"tier\":\"bronze\",\"reason\":\"again\"}");
      });
      api.test(http -> {
        agent(http, "tiers", "");
        String id;
        try (Engine first = engine(api, model)) {
          id = start(http, "tiers", "\"Ada\"");
          long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
          while (model.requestCount() < 2 && System.nanoTime() < deadline) {
            Thread.sleep(10);
          }
          assertEquals(2, model.requestCount(), "the retry is out");
          assertEquals(List.of("system", "user", "assistant", "user"), roles(messages(http, id)),
              "the answer and what went back were committed before the retry went out");
        }
        try (Engine second = engine(api, model)) {
          JsonNode run = awaitStatus(http, id, "succeeded");
          assertEquals("bronze", run.get("output").get("tier").asText());
        }
        assertEquals(model.requests().get(1).body().get("messages"), model.requests().get(2).body().get("messages"),
            "the same request, from the committed transcript");
        assertEquals(List.of("system", "user", "assistant", "user", "assistant"), roles(messages(http, id)),
            "what went back is in the transcript once");
      });
    }
  }

  @BothDatabases
  void the_sandbox_answers_a_value_that_matches_the_schema_from_the_input_and_the_tools(Api api) throws Exception {
    String schema = "{\"type\":\"object\",\"properties\":{"
        + "\"tier\":{\"enum\":[\"gold\",\"silver\",\"bronze\"]},"
        + "\"customer\":{\"type\":\"string\"},"
        + "\"score\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5},"
        + "\"ratio\":{\"type\":\"number\",\"exclusiveMinimum\":0.5},"
        + "\"vip\":{\"type\":\"boolean\"},"
        + "\"tags\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/tag\"},\"minItems\":2},"
        + "\"note\":{\"type\":[\"string\",\"null\"],\"maxLength\":4},"
        + "\"address\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\",\"zip\"]}},"
        + "\"required\":[\"tier\",\"customer\",\"score\"],\"additionalProperties\":false,"
        + "\"$defs\":{\"tag\":{\"const\":\"t\"}}}";
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        assertEquals(201, http.put("/v1/agents/sorter", "{\"model\":\"gpt-4o-mini\",\"output_schema\":" + schema + "}")
            .status());
        String id = start(http, "sorter", "{\"customer\":\"Ada\",\"tier\":\"silver\",\"score\":9}");
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals(Api.json("{\"tier\":\"silver\",\"customer\":\"Ada\",\"score\":1,\"ratio\":1.5,\"vip\":false,"
            + "\"tags\":[\"t\",\"t\"],\"note\":\"sand\",\"address\":{\"city\":\"sandbox\",\"zip\":\"sandbox\"}}"),
            run.get("output"), "an input field of the same name where it fits (score 9 is past the maximum)");
        assertEquals(List.of("user", "assistant"), roles(messages(http, id)), "matched at once");

        // With a tool: it is called first, and its answer's fields fill the output.
        assertEquals(201, http.put("/v1/agents/clock", "{\"model\":\"gpt-4o-mini\",\"tools\":[{\"name\":"
            + "\"current_time\",\"url\":\"builtin:current_time\",\"parameters\":{\"type\":\"object\","
            + "\"properties\":{\"timezone\":{\"type\":\"string\"}},\"required\":[\"timezone\"]}}],"
            + "\"output_schema\":{\"type\":\"object\",\"properties\":{\"timezone\":{\"type\":\"string\"},"
            + "\"day_of_week\":{\"type\":\"string\"},\"asked\":{\"type\":\"string\"}},"
            + "\"required\":[\"timezone\",\"day_of_week\"]}}").status());
        String clock = start(http, "clock", "\"Asia/Tokyo\"");
        JsonNode told = awaitStatus(http, clock, "succeeded").get("output");
        assertEquals("Asia/Tokyo", told.get("timezone").asText(), told::toString);
        assertTrue(List.of("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
            .contains(told.get("day_of_week").asText()), told::toString);
        assertEquals("Asia/Tokyo", told.get("asked").asText(), "the text input, for a string no field fills");
        assertEquals(List.of("user", "assistant", "tool", "assistant"), roles(messages(http, clock)));
      });
    }
  }
}
