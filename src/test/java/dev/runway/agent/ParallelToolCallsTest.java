package dev.runway.agent;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.await;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.config.Settings;
import dev.runway.engine.Engine;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.FakeModel;
import dev.runway.support.FakeModel.Reply;
import dev.runway.support.FakeModel.ToolCall;
import dev.runway.support.Http;
import dev.runway.support.ToolServer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.function.UnaryOperator;

/**
 * The tool calls of one model answer made at once (agents.max_parallel_tool_calls): each recorded
 * on its own, results sent back in the model's order, approvals of several calls, the cap, and a
 * restart of the engine in the middle of a turn.
 */
class ParallelToolCallsTest {
  private static final String PARAMS = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}}";

  private static Engine engine(Api api, FakeModel model, UnaryOperator<Settings> more) {
    return api.database().startEngine(s -> more.apply(s.with("agents.model.base_url", model.baseUrl())
        .with("agents.model.api_key", "sk-test").with("agents.model.retry_base_ms", "20")));
  }

  private static String tool(String name, String url, boolean requiresApproval) {
    return "{\"name\":\"" + name + "\",\"description\":\"A tool\",\"parameters\":" + PARAMS + ",\"url\":\"" + url
        + "\",\"timeout_ms\":10000,\"requires_approval\":" + requiresApproval + "}";
  }

  private static void agent(Http http, String id, String... tools) {
    agent(http, id, 20, tools);
  }

  private static void agent(Http http, String id, int maxToolCalls, String... tools) {
    Http.Reply put = http.put("/v1/agents/" + id, "{\"model\":\"test-model\",\"tools\":[" + String.join(",", tools)
        + "],\"limits\":{\"max_tool_calls\":" + maxToolCalls + "}}");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
  }

  private static String start(Http http, String agent) {
    Http.Reply reply = http.post("/v1/agents/" + agent + "/runs", "{\"project\":\"demo\",\"input\":\"go\"}");
    assertEquals(200, reply.status(), reply::toString);
    return reply.json().get("id").asText();
  }

  private static List<JsonNode> events(Http http, String runId) {
    List<JsonNode> out = new ArrayList<>();
    http.get("/v1/runs/" + runId + "/events?limit=1000").json().get("data").forEach(out::add);
    return out;
  }

  private static List<String> toolEvents(Http http, String runId, String type) {
    return events(http, runId).stream().filter(e -> e.get("type").asText().equals(type))
        .map(e -> e.get("data").get("tool_call_id").asText()).toList();
  }

  /** The tool results the model's second request carried: tool_call_id and content, in order. */
  private static List<JsonNode> resultsSent(FakeModel model) {
    List<JsonNode> out = new ArrayList<>();
    model.requests().get(1).body().get("messages").forEach(m -> {
      if (m.get("role").asText().equals("tool")) {
        out.add(m);
      }
    });
    return out;
  }

  private static void awaitCalls(ToolServer tools, int n) throws InterruptedException {
    Instant until = Instant.now().plusSeconds(10);
    while (tools.calls().size() < n) {
      assertTrue(Instant.now().isBefore(until), () -> "the tool got " + tools.calls().size() + " calls, not " + n);
      Thread.sleep(10);
    }
  }

  @BothDatabases
  void three_calls_all_start_before_any_finishes_and_their_results_go_back_in_the_models_order(Api api)
      throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model, s -> s)) {
      tools.script("/a", ToolServer.Reply.json(200, "{\"a\":1}"));
      tools.script("/b", ToolServer.Reply.json(500, "{\"oops\":true}"));
      tools.script("/c", ToolServer.Reply.json(200, "{\"c\":3}"));
      CountDownLatch a = tools.hold("/a");
      CountDownLatch b = tools.hold("/b");
      CountDownLatch c = tools.hold("/c");
      model.script(Reply.toolCalls(ToolCall.of("call_a", "a", Map.of("n", 1)), ToolCall.of("call_b", "b", Map.of("n", 2)),
          ToolCall.of("call_c", "c", Map.of("n", 3))), Reply.text("done"));
      api.test(http -> {
        agent(http, "three", tool("a", tools.url("/a"), false), tool("b", tools.url("/b"), false),
            tool("c", tools.url("/c"), false));
        String id = start(http, "three");
        awaitCalls(tools, 3); // all three are at the tool, none answered
        assertEquals(3, tools.peakConcurrency());
        await(http, id, "three calls started", r -> toolEvents(http, id, "tool_call.started").size() == 3);
        assertEquals(List.of(), toolEvents(http, id, "tool_call.finished"));
        // They finish in the reverse order: c, then b (500), then a.
        c.countDown();
        await(http, id, "c finished", r -> toolEvents(http, id, "tool_call.finished").size() == 1);
        b.countDown();
        await(http, id, "b finished", r -> toolEvents(http, id, "tool_call.finished").size() == 2);
        assertEquals(1, model.requestCount(), "no model call before every call of the turn has its outcome");
        a.countDown();
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals(3, run.get("usage").get("tool_calls").asInt());
        assertEquals(List.of("call_c", "call_b", "call_a"), toolEvents(http, id, "tool_call.finished"));

        List<JsonNode> all = events(http, id);
        List<String> types = all.stream().map(e -> e.get("type").asText()).toList();
        assertEquals(List.of("run.started", "model_call.started", "model_call.finished", "tool_call.started",
            "tool_call.started", "tool_call.started", "tool_call.finished", "tool_call.finished", "tool_call.finished",
            "model_call.started", "model_call.finished", "run.succeeded"), types);
        Instant lastStart = Instant.parse(all.get(5).get("created_at").asText());
        Instant firstFinish = Instant.parse(all.get(6).get("created_at").asText());
        assertFalse(firstFinish.isBefore(lastStart), "all started before any finished");
        JsonNode failed = all.stream().filter(e -> e.get("type").asText().equals("tool_call.finished")
            && e.get("data").get("tool_call_id").asText().equals("call_b")).findFirst().orElseThrow();
        assertEquals("failed", failed.get("data").get("outcome").asText());
        assertEquals(500, failed.get("data").get("http_status").asInt());

        List<JsonNode> results = resultsSent(model);
        assertEquals(List.of("call_a", "call_b", "call_c"), results.stream().map(m -> m.get("tool_call_id").asText())
            .toList(), "the model's order, not the order they finished in");
        assertEquals("{\"a\":1}", results.get(0).get("content").asText());
        assertTrue(Api.json(results.get(1).get("content").asText()).get("error").asText()
            .startsWith("the tool answered HTTP 500"), results.get(1)::toString);
        assertEquals("{\"c\":3}", results.get(2).get("content").asText());

        Http.Reply messages = http.get("/v1/runs/" + id + "/messages");
        List<String> order = new ArrayList<>();
        messages.json().get("data").forEach(m -> order.add(m.get("role").asText() + ":"
            + m.path("tool_call_id").asText("")));
        assertEquals(List.of("user:", "assistant:", "tool:call_a", "tool:call_b", "tool:call_c", "assistant:"), order);
      });
    }
  }

  @BothDatabases
  void in_one_answer_a_failing_call_and_one_needing_no_approval_run_first_then_the_one_that_does_is_asked(Api api)
      throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model, s -> s)) {
      tools.script("/broken", ToolServer.Reply.json(500, "{\"oops\":true}"));
      model.script(Reply.toolCalls(ToolCall.of("c1", "look", Map.of("n", 1)), ToolCall.of("c2", "refund", Map.of("n", 2)),
          ToolCall.of("c3", "broken", Map.of("n", 3))), Reply.text("done"));
      api.test(http -> {
        agent(http, "mixed", tool("look", tools.url("/look"), false), tool("refund", tools.url("/refund"), true),
            tool("broken", tools.url("/broken"), false));
        String id = start(http, "mixed");
        JsonNode waiting = awaitStatus(http, id, "awaiting_approval");
        assertEquals(1, tools.calls("/look").size(), "the calls that need no approval ran before it");
        assertEquals(1, tools.calls("/broken").size(), "the failing one too, once (a 500 is the model's to handle)");
        assertEquals(0, tools.calls("/refund").size());
        assertEquals(Api.json("[{\"id\":\"c2\",\"name\":\"refund\",\"arguments\":{\"n\":2}}]"),
            waiting.get("approval").get("tool_calls"));
        assertEquals(Api.json("{\"id\":\"c2\",\"name\":\"refund\",\"arguments\":{\"n\":2}}"),
            waiting.get("approval").get("tool_call"), "one call: tool_call too, as before");
        assertEquals(200, http.post("/v1/runs/" + id + "/approve", "{}").status());
        awaitStatus(http, id, "succeeded");
        assertEquals(1, tools.calls("/refund").size());
        List<JsonNode> results = resultsSent(model);
        assertEquals(List.of("c1", "c2", "c3"), results.stream().map(m -> m.get("tool_call_id").asText()).toList());
        assertTrue(results.get(2).get("content").asText().contains("HTTP 500"), results.get(2)::toString);
        assertEquals(List.of("succeeded", "succeeded", "failed"), List.of("c1", "c2", "c3").stream().map(c ->
            events(http, id).stream().filter(e -> e.get("type").asText().equals("tool_call.finished")
                && e.get("data").get("tool_call_id").asText().equals(c)).findFirst().orElseThrow()
                .get("data").get("outcome").asText()).toList());
      });
    }
  }

  @BothDatabases
  void two_calls_needing_approval_are_asked_together_and_decided_one_by_one(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model, s -> s)) {
      model.script(Reply.toolCalls(ToolCall.of("c1", "refund", Map.of("n", 1)), ToolCall.of("c2", "refund",
          Map.of("n", 2))), Reply.text("done"));
      api.test(http -> {
        agent(http, "refunds", tool("refund", tools.url("/refund"), true));
        String id = start(http, "refunds");
        JsonNode waiting = awaitStatus(http, id, "awaiting_approval");
        assertEquals(Api.json("[{\"id\":\"c1\",\"name\":\"refund\",\"arguments\":{\"n\":1}},"
            + "{\"id\":\"c2\",\"name\":\"refund\",\"arguments\":{\"n\":2}}]"), waiting.get("approval").get("tool_calls"));
        assertTrue(waiting.get("approval").path("tool_call").isMissingNode()
            || waiting.get("approval").get("tool_call").isNull(), waiting::toString);

        assertProblem(http.post("/v1/runs/" + id + "/approve", "{\"tool_call_ids\":[\"c9\"]}"), 400, "validation_failed", "tool_call_ids");
        assertProblem(http.post("/v1/runs/" + id + "/approve", "{\"tool_call_ids\":[]}"), 400, "validation_failed", "tool_call_ids");
        assertProblem(http.post("/v1/runs/" + id + "/approve", "{\"tool_call_ids\":[1]}"), 400, "validation_failed", "tool_call_ids");

        Http.Reply first = http.post("/v1/runs/" + id + "/approve", "{\"tool_call_ids\":[\"c1\"]}");
        assertEquals(200, first.status(), first::toString);
        assertEquals("awaiting_approval", first.json().get("status").asText(), "c2 is not decided yet");
        assertEquals(Api.json("[{\"id\":\"c2\",\"name\":\"refund\",\"arguments\":{\"n\":2}}]"),
            first.json().get("approval").get("tool_calls"));
        assertEquals(0, tools.calls("/refund").size(), "nothing runs before every call is decided");

        Http.Reply second = http.post("/v1/runs/" + id + "/reject", "{\"tool_call_ids\":[\"c2\"],\"comment\":\"no\"}");
        assertEquals(200, second.status(), second::toString);
        assertEquals("running", second.json().get("status").asText());
        awaitStatus(http, id, "succeeded");
        List<ToolServer.Call> calls = tools.calls("/refund");
        assertEquals(1, calls.size());
        assertEquals(id + ":c1", calls.get(0).idempotencyKey());
        List<JsonNode> results = resultsSent(model);
        assertEquals(List.of("c1", "c2"), results.stream().map(m -> m.get("tool_call_id").asText()).toList());
        assertEquals("the call was rejected by the approver: no",
            Api.json(results.get(1).get("content").asText()).get("error").asText());
        List<JsonNode> decisions = events(http, id).stream().filter(e -> e.get("type").asText().startsWith("run.appro"))
            .toList();
        assertEquals(2, decisions.size(), decisions::toString);
        assertEquals(Api.json("[\"c1\"]"), decisions.get(0).get("data").get("tool_call_ids"));
        assertEquals(Api.json("[\"c2\"]"), decisions.get(1).get("data").get("tool_call_ids"));
      });
    }
  }

  @BothDatabases
  void two_calls_needing_approval_are_approved_at_once(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model, s -> s)) {
      model.script(Reply.toolCalls(ToolCall.of("c1", "refund", Map.of("n", 1)), ToolCall.of("c2", "refund",
          Map.of("n", 2))), Reply.text("done"));
      api.test(http -> {
        agent(http, "refunds", tool("refund", tools.url("/refund"), true));
        String id = start(http, "refunds");
        awaitStatus(http, id, "awaiting_approval");
        Http.Reply approved = http.post("/v1/runs/" + id + "/approve", "{\"comment\":\"both fine\"}");
        assertEquals(200, approved.status(), approved::toString);
        assertEquals("running", approved.json().get("status").asText());
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals("approved", run.get("approval").get("status").asText());
        assertEquals(2, tools.calls("/refund").size());
      });
    }
  }

  @BothDatabases
  void the_cap_bounds_the_calls_in_flight(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model, s -> s.with("agents.max_parallel_tool_calls", "2"))) {
      tools.script("/slow", ToolServer.Reply.json(200, "{}").after(Duration.ofMillis(300)));
      List<ToolCall> five = new ArrayList<>();
      for (int i = 1; i <= 5; i++) {
        five.add(ToolCall.of("c" + i, "slow", Map.of("n", i)));
      }
      model.script(Reply.toolCalls(five.toArray(ToolCall[]::new)), Reply.text("done"));
      api.test(http -> {
        agent(http, "capped", tool("slow", tools.url("/slow"), false));
        String id = start(http, "capped");
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals(5, run.get("usage").get("tool_calls").asInt());
        assertEquals(5, tools.calls("/slow").size());
        assertEquals(2, tools.peakConcurrency(), "never more than 2 at once, and 2 at once");
        assertEquals(List.of("c1", "c2", "c3", "c4", "c5"), resultsSent(model).stream()
            .map(m -> m.get("tool_call_id").asText()).toList());
      });
    }
  }

  @BothDatabases
  void an_agents_limits_lower_the_servers_cap_for_its_runs(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model, s -> s.with("agents.max_parallel_tool_calls", "8"))) {
      tools.script("/slow", ToolServer.Reply.json(200, "{}").after(Duration.ofMillis(300)));
      List<ToolCall> four = new ArrayList<>();
      for (int i = 1; i <= 4; i++) {
        four.add(ToolCall.of("c" + i, "slow", Map.of("n", i)));
      }
      model.script(Reply.toolCalls(four.toArray(ToolCall[]::new)), Reply.text("done"));
      api.test(http -> {
        Http.Reply put = http.put("/v1/agents/one-at-a-time", "{\"model\":\"test-model\",\"tools\":["
            + tool("slow", tools.url("/slow"), false) + "],\"limits\":{\"max_parallel_tool_calls\":1}}");
        assertEquals(201, put.status(), put::toString);
        assertEquals(1, put.json().get("limits").get("max_parallel_tool_calls").asInt(), put::toString);
        String id = start(http, "one-at-a-time");
        awaitStatus(http, id, "succeeded");
        assertEquals(4, tools.calls("/slow").size());
        assertEquals(1, tools.peakConcurrency(), "one call at a time, as the agent's limits say");

        assertProblem(http.put("/v1/agents/bad", "{\"model\":\"m\",\"limits\":{\"max_parallel_tool_calls\":0}}"),
            400, "validation_failed", "limits.max_parallel_tool_calls");
        assertProblem(http.put("/v1/agents/bad", "{\"model\":\"m\",\"limits\":{\"max_parallel_tool_calls\":\"2\"}}"),
            400, "validation_failed", "limits.max_parallel_tool_calls");
        // Without the field, the agent shows none: the server's cap applies.
        Http.Reply plain = http.put("/v1/agents/plain", "{\"model\":\"m\"}");
        assertFalse(plain.json().get("limits").has("max_parallel_tool_calls"), plain::toString);
      });
    }
  }

  @BothDatabases
  void a_restart_mid_turn_sends_again_only_the_calls_without_an_outcome(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start()) {
      tools.script("/a", ToolServer.Reply.json(200, "{\"a\":1}"));
      CountDownLatch b = tools.hold("/b");
      CountDownLatch c = tools.hold("/c");
      model.script(Reply.toolCalls(ToolCall.of("call_a", "a", Map.of("n", 1)), ToolCall.of("call_b", "b", Map.of("n", 2)),
          ToolCall.of("call_c", "c", Map.of("n", 3))), Reply.text("done"));
      api.test(http -> {
        agent(http, "three", tool("a", tools.url("/a"), false), tool("b", tools.url("/b"), false),
            tool("c", tools.url("/c"), false));
        String id;
        try (Engine first = engine(api, model, s -> s.with("shutdown.grace_seconds", "0"))) {
          id = start(http, "three");
          await(http, id, "a finished", r -> toolEvents(http, id, "tool_call.finished").equals(List.of("call_a")));
          awaitCalls(tools, 3);
        } // stops with b and c out: the run is given back
        b.countDown();
        c.countDown();
        try (Engine second = engine(api, model, s -> s)) {
          JsonNode run = awaitStatus(http, id, "succeeded");
          assertEquals(3, run.get("usage").get("tool_calls").asInt(), "a call sent again counts once");
        }
        assertEquals(1, tools.calls("/a").size(), "a had its outcome: not sent again");
        assertEquals(2, tools.calls("/b").size());
        assertEquals(2, tools.calls("/c").size());
        assertEquals(id + ":call_b", tools.calls("/b").get(1).idempotencyKey());
        assertEquals(id + ":call_c", tools.calls("/c").get(1).idempotencyKey());
        assertEquals(List.of("call_a", "call_b", "call_c"), model.requests().get(1).body().get("messages").findValues(
            "tool_call_id").stream().map(JsonNode::asText).toList());
      });
    }
  }

  @BothDatabases
  void max_tool_calls_still_bounds_the_calls_of_a_turn(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model, s -> s)) {
      model.script(Reply.toolCalls(ToolCall.of("c1", "look", Map.of("n", 1)), ToolCall.of("c2", "look", Map.of("n", 2)),
          ToolCall.of("c3", "look", Map.of("n", 3))), Reply.text("never"));
      api.test(http -> {
        agent(http, "bounded", 2, tool("look", tools.url("/look"), false));
        String id = start(http, "bounded");
        JsonNode run = awaitStatus(http, id, "failed");
        assertEquals("max_tool_calls_exceeded", run.get("error").get("code").asText(), run::toString);
        assertEquals(2, tools.calls("/look").size(), "the first two of the answer, not the third");
        assertEquals(2, run.get("usage").get("tool_calls").asInt());
        assertEquals(1, model.requestCount());
      });
    }
  }

  @BothDatabases
  void cancel_during_a_turn_stops_its_calls_and_keeps_no_later_result(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model, s -> s)) {
      CountDownLatch b = tools.hold("/b");
      CountDownLatch c = tools.hold("/c");
      model.script(Reply.toolCalls(ToolCall.of("call_a", "a", Map.of("n", 1)), ToolCall.of("call_b", "b", Map.of("n", 2)),
          ToolCall.of("call_c", "c", Map.of("n", 3))), Reply.text("never"));
      api.test(http -> {
        agent(http, "three", tool("a", tools.url("/a"), false), tool("b", tools.url("/b"), false),
            tool("c", tools.url("/c"), false));
        String id = start(http, "three");
        await(http, id, "a finished", r -> toolEvents(http, id, "tool_call.finished").equals(List.of("call_a")));
        awaitCalls(tools, 3);
        Http.Reply canceled = http.post("/v1/runs/" + id + "/cancel", "{}");
        assertEquals(200, canceled.status(), canceled::toString);
        assertEquals("canceled", canceled.json().get("status").asText());
        b.countDown();
        c.countDown();
        Thread.sleep(500); // b and c answer meanwhile
        assertEquals("canceled", http.get("/v1/runs/" + id).json().get("status").asText());
        assertEquals(List.of("call_a"), toolEvents(http, id, "tool_call.finished"), "b's and c's answers are dropped");
        assertEquals(1, model.requestCount(), "the model is not called again");
        assertEquals(3, tools.calls().size(), "nothing sent again");
      });
    }
  }
}
