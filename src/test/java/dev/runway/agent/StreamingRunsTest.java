package dev.runway.agent;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.awaitStatus;
import static dev.runway.support.Runs.events;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.engine.Engine;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.FakeModel;
import dev.runway.support.FakeModel.Reply;
import dev.runway.support.FakeModel.ToolCall;
import dev.runway.support.Http;
import dev.runway.support.SseClient;
import dev.runway.support.ToolServer;
import dev.runway.support.WebhookReceiver;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Agent runs started with "stream": true: the model is asked to stream, the pieces of its text
 * reach the run's event stream as run.message.delta events in order, and what is stored (the
 * transcript, usage, output) is what the same answers give without streaming. A stream that breaks
 * off is retried as a model error.
 */
class StreamingRunsTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final String ANSWER = "The order 1234 ships on Monday, with two parcels.";

  private static Engine engine(Api api, FakeModel model) {
    return api.database().startEngine(s -> s.with("agents.model.base_url", model.baseUrl())
        .with("agents.model.api_key", "sk-test").with("agents.model.retry_base_ms", "20"));
  }

  private static void agent(Http http, ToolServer tools) {
    Http.Reply put = http.put("/v1/agents/orders", "{\"model\":\"test-model\",\"instructions\":\"Help.\",\"tools\":["
        + "{\"name\":\"lookup\",\"description\":\"Find an order\",\"parameters\":{\"type\":\"object\","
        + "\"properties\":{\"order\":{\"type\":\"string\"}}},\"url\":\"" + tools.url("/lookup") + "\"}]}");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
  }

  private static void plainAgent(Http http) {
    Http.Reply put = http.put("/v1/agents/plain", "{\"model\":\"test-model\"}");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
  }

  private static String start(Http http, boolean stream) {
    Http.Reply reply = http.post("/v1/agents/orders/runs", "{\"project\":\"demo\",\"input\":\"Where is 1234?\""
        + (stream ? ",\"stream\":true" : "") + "}");
    assertEquals(200, reply.status(), reply::toString);
    assertEquals(stream, reply.json().get("stream").asBoolean(), reply::toString);
    return reply.json().get("id").asText();
  }

  private static Reply[] script() {
    return new Reply[] {
        Reply.toolCalls(ToolCall.of("call_1", "lookup", Map.of("order", "1234"))).usage(40, 12),
        Reply.text(ANSWER).usage(70, 18).chunkGap(Duration.ofMillis(5))};
  }

  /** What a run stored: its transcript (role, content, tool calls) and its record's usage and output. */
  private static String stored(Http http, String runId) {
    StringBuilder out = new StringBuilder();
    http.get("/v1/runs/" + runId + "/messages?limit=100").json().get("data").forEach(m -> out.append(m.get("role"))
        .append(m.get("content")).append(m.get("tool_calls")).append(m.get("tool_call_id")).append('\n'));
    JsonNode run = http.get("/v1/runs/" + runId).json();
    return out.append(run.get("usage")).append(run.get("output")).toString();
  }

  @BothDatabases
  void a_streamed_answer_reaches_the_runs_event_stream_piece_by_piece_and_is_stored_as_without_streaming(Api api) {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start(); Engine engine = engine(api, model)) {
      tools.script("/lookup", ToolServer.Reply.json(200, "{\"ships\":\"Monday\"}"));
      model.script(script());
      api.test(http -> {
        agent(http, tools);
        String id = start(http, true);
        try (SseClient sse = SseClient.open(http.origin(), "/v1/runs/" + id + "/events", api.key)) {
          assertEquals(200, sse.status());
          sse.awaitEnd(WAIT);
          List<SseClient.Event> all = sse.events();
          StringBuilder text = new StringBuilder();
          int index = 0;
          int answerFinished = -1;
          int firstDelta = -1;
          int lastDelta = -1;
          for (int i = 0; i < all.size(); i++) {
            SseClient.Event e = all.get(i);
            JsonNode data = e.json().get("data");
            if (e.type().equals("run.message.delta")) {
              assertEquals(2, data.get("turn").asInt(), e::data); // the first answer has no text
              assertEquals(1, e.json().get("attempt").asInt(), e::data);
              assertEquals(index++, data.get("index").asInt(), "deltas come in order");
              text.append(data.get("delta").asText());
              firstDelta = firstDelta < 0 ? i : firstDelta;
              lastDelta = i;
            } else if (e.type().equals("model_call.finished") && e.json().get("data").path("turn").asInt() == 2) {
              answerFinished = i;
            }
          }
          assertEquals(ANSWER, text.toString());
          assertTrue(firstDelta >= 0 && lastDelta < answerFinished, "every delta comes before the answer is recorded: "
              + firstDelta + ".." + lastDelta + " < " + answerFinished);
        }
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals(ANSWER, run.get("output").asText());
        assertEquals(70 + 18 + 40 + 12, run.get("usage").get("total_tokens").asInt(), run::toString);
        // The streamed tool call's arguments came in pieces, and reached the tool whole.
        assertEquals("1234", tools.calls().get(0).body().get("arguments").get("order").asText());
        JsonNode request = model.requests().get(1).body();
        assertTrue(request.get("stream").asBoolean(), request::toString);
        assertTrue(request.get("stream_options").get("include_usage").asBoolean(), request::toString);

        // The same answers without streaming store the same transcript, usage and output, and no delta.
        model.script(script());
        String plain = start(http, false);
        awaitStatus(http, plain, "succeeded");
        assertFalse(model.lastRequest().body().has("stream"), "a run without stream does not ask for it");
        assertEquals(stored(http, id), stored(http, plain));
        assertEquals(List.of(), events(http, plain, "run.message.delta"));
        assertFalse(events(http, id, "run.message.delta").isEmpty(), "the deltas are kept among the run's events");
      });
    }
  }

  @BothDatabases
  void a_stream_that_breaks_off_is_retried_and_its_pieces_come_again_under_the_next_attempt(Api api) {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model)) {
      model.script(Reply.text(ANSWER).breakAfter(4), Reply.text(ANSWER).usage(30, 9));
      api.test(http -> {
        plainAgent(http);
        Http.Reply started = http.post("/v1/agents/plain/runs", "{\"project\":\"demo\",\"input\":\"hi\",\"stream\":true}");
        assertEquals(200, started.status(), started::toString);
        String id = started.json().get("id").asText();
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals(ANSWER, run.get("output").asText());
        assertEquals(39, run.get("usage").get("total_tokens").asInt(), "the broken attempt reported no usage");
        assertEquals(2, model.requestCount());
        List<JsonNode> finished = events(http, id, "model_call.finished");
        assertEquals(2, finished.size(), finished::toString);
        assertTrue(finished.get(0).toString().contains("broke off"), finished.get(0)::toString);
        StringBuilder first = new StringBuilder();
        StringBuilder second = new StringBuilder();
        for (JsonNode d : events(http, id, "run.message.delta")) {
          (d.get("attempt").asInt() == 1 ? first : second).append(d.get("data").get("delta").asText());
        }
        assertEquals(ANSWER, second.toString());
        assertTrue(ANSWER.startsWith(first.toString()) && first.length() > 0 && first.length() < ANSWER.length(),
            "the first attempt's pieces: '" + first + "'");
        // The transcript holds the answer once.
        JsonNode messages = http.get("/v1/runs/" + id + "/messages").json().get("data");
        assertEquals(2, messages.size(), messages::toString);
        assertEquals(ANSWER, messages.get(1).get("content").asText());
      });
    }
  }

  @BothDatabases
  void deltas_go_to_event_streams_but_not_to_webhook_endpoints(Api api) {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model);
        WebhookReceiver receiver = new WebhookReceiver()) {
      model.script(Reply.text(ANSWER));
      api.testWebhooks(s -> s, http -> {
        Http.Reply endpoint = http.post("/v1/webhook_endpoints", "{\"url\": \"" + receiver.url("/all")
            + "\", \"event_types\": [\"*\"]}");
        assertEquals(201, endpoint.status(), endpoint::toString);
        plainAgent(http);
        Http.Reply started = http.post("/v1/agents/plain/runs", "{\"project\":\"demo\",\"input\":\"hi\",\"stream\":true}");
        String id = started.json().get("id").asText();
        awaitStatus(http, id, "succeeded");
        List<WebhookReceiver.Delivery> got = receiver.await(WAIT, d -> d.stream()
            .anyMatch(x -> x.type().equals("run.succeeded")), "run.succeeded delivered");
        assertTrue(got.stream().anyMatch(d -> d.type().equals("model_call.finished")), got::toString);
        assertTrue(got.stream().noneMatch(d -> d.type().equals("run.message.delta")), got::toString);
        assertFalse(events(http, id, "run.message.delta").isEmpty());
      });
    }
  }

  @BothDatabases
  void stream_must_be_a_boolean(Api api) {
    api.test(http -> {
      plainAgent(http);
      Http.Reply reply = http.post("/v1/agents/plain/runs", "{\"project\":\"demo\",\"input\":\"hi\",\"stream\":\"yes\"}");
      assertProblem(reply, 400, "validation_failed", "stream");
      assertEquals(0, http.get("/v1/runs?kind=agent").json().get("data").size());
    });
  }
}
