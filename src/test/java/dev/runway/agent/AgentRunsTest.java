package dev.runway.agent;

import static dev.runway.agent.SandboxAgentRunsTest.roles;
import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.await;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.Scope;
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
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Timeout;

/**
 * Agent runs against a scripted model that speaks the Chat Completions wire format and a local tool
 * server: the loop, bad tool calls, the model's failures, approvals, limits, cancel, and the start
 * endpoint's checks.
 */
class AgentRunsTest {
  private static final String LOOKUP_PARAMS = "{\"type\":\"object\",\"properties\":{\"email\":{\"type\":\"string\","
      + "\"format\":\"email\"}},\"required\":[\"email\"],\"additionalProperties\":false}";

  // ---- helpers ----

  private static Engine engine(Api api, FakeModel model) {
    return engine(api, model, s -> s);
  }

  private static Engine engine(Api api, FakeModel model, UnaryOperator<Settings> more) {
    return api.database().startEngine(s -> more.apply(s.with("agents.model.base_url", model.baseUrl())
        .with("agents.model.api_key", "sk-test-secret").with("agents.model.retry_base_ms", "20")));
  }

  private static String tool(String name, String url, boolean requiresApproval) {
    return "{\"name\":\"" + name + "\",\"description\":\"Find a customer by email\",\"parameters\":" + LOOKUP_PARAMS
        + ",\"url\":\"" + url + "\",\"timeout_ms\":1000,\"requires_approval\":" + requiresApproval + "}";
  }

  private static void agent(Http http, String id, String limits, String... tools) {
    Http.Reply put = http.put("/v1/agents/" + id, "{\"model\":\"test-model\",\"instructions\":\"Be brief.\","
        + "\"tools\":[" + String.join(",", tools) + "]" + (limits == null ? "" : ",\"limits\":" + limits) + "}");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
  }

  private static String start(Http http, String agent, String input) {
    Http.Reply reply = http.post("/v1/agents/" + agent + "/runs", "{\"project\":\"demo\",\"input\":" + input + "}");
    assertEquals(200, reply.status(), reply::toString);
    assertEquals("running", reply.json().get("status").asText());
    return reply.json().get("id").asText();
  }

  private static List<JsonNode> messages(Http http, String runId) {
    Http.Reply reply = http.get("/v1/runs/" + runId + "/messages?limit=1000");
    assertEquals(200, reply.status(), reply::toString);
    List<JsonNode> out = new ArrayList<>();
    reply.json().get("data").forEach(out::add);
    return out;
  }

  private static List<String> eventTypes(Http http, String runId) {
    List<String> types = new ArrayList<>();
    http.get("/v1/runs/" + runId + "/events?limit=1000").json().get("data").forEach(e -> types.add(e.get("type").asText()));
    return types;
  }

  private static JsonNode failedWith(Http http, String runId, String code) {
    JsonNode run = awaitStatus(http, runId, "failed");
    assertEquals(code, run.get("error").get("code").asText(), run::toString);
    return run;
  }

  // ---- the loop ----

  @BothDatabases
  void an_agents_runs_are_listed_newest_first_in_pages(Api api) {
    // No engine: the runs stay running, which is all the list needs.
    api.test(http -> {
      agent(http, "greeter", null);
      agent(http, "other", null);
      List<String> mine = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        mine.add(0, start(http, "greeter", "\"Hi\""));
        start(http, "other", "\"Hi\"");
      }
      JsonNode page = http.get("/v1/runs?agent=greeter&limit=2").json();
      assertEquals(mine.subList(0, 2), ids(page));
      assertTrue(page.get("has_more").asBoolean(), page::toString);
      JsonNode rest = http.get("/v1/runs?agent=greeter&limit=2&starting_after=" + mine.get(1)).json();
      assertEquals(mine.subList(2, 3), ids(rest));
      assertFalse(rest.get("has_more").asBoolean(), rest::toString);
      assertEquals(mine.subList(1, 3), ids(http.get("/v1/runs?kind=agent&agent=greeter&status=running&starting_after="
          + mine.get(0)).json()));
      assertEquals(List.of(), ids(http.get("/v1/runs?agent=greeter&status=succeeded").json()));
      assertEquals(3, ids(http.get("/v1/runs?agent=other").json()).size());
    });
  }

  private static List<String> ids(JsonNode page) {
    List<String> ids = new ArrayList<>();
    page.get("data").forEach(r -> ids.add(r.get("id").asText()));
    return ids;
  }

  @BothDatabases
  void a_plain_answer_ends_the_run_with_its_output_and_the_models_usage(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model)) {
      model.script(Reply.text("Hello there").usage(12, 3));
      api.test(http -> {
        agent(http, "greeter", null);
        String id = start(http, "greeter", "\"Hi\"");
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals("Hello there", run.get("output").asText());
        assertEquals(Api.json("{\"model_calls\":1,\"tool_calls\":0,\"prompt_tokens\":12,\"completion_tokens\":3,"
            + "\"total_tokens\":15}"), run.get("usage"));
        assertEquals(model.baseUrl(), run.get("model_endpoint").asText());
        assertEquals("test-model", run.get("model").asText());
        assertFalse(run.toString().contains("sk-test-secret"), "the model's key is never shown");

        FakeModel.Request request = model.lastRequest();
        assertEquals("Bearer sk-test-secret", request.headers().get("Authorization"));
        assertEquals("test-model", request.body().get("model").asText());
        assertEquals(Api.json("[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi\"}]"),
            request.body().get("messages"));
        assertFalse(request.body().has("tools"), "no tools: no tools field");
        assertEquals(List.of("system", "user", "assistant"), messages(http, id).stream().map(m -> m.get("role").asText())
            .toList());
        assertEquals(List.of("run.started", "model_call.started", "model_call.finished", "run.succeeded"),
            eventTypes(http, id));
      });
    }
  }

  @BothDatabases
  void several_tool_calls_in_one_answer_are_all_made_and_answered_before_the_next_turn(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model)) {
      tools.script("/lookup", ToolServer.Reply.json(200, "{\"name\":\"Ada\"}"));
      model.script(
          Reply.toolCalls(ToolCall.of("call_a", "lookup", Map.of("email", "ada@example.com")),
              ToolCall.of("call_b", "lookup", Map.of("email", "bob@example.com"))),
          Reply.text("Ada and Ada"));
      api.test(http -> {
        agent(http, "crm", null, tool("lookup", tools.url("/lookup"), false));
        String id = start(http, "crm", "{\"emails\":[\"ada@example.com\",\"bob@example.com\"]}");
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals("Ada and Ada", run.get("output").asText());
        assertEquals(2, run.get("usage").get("tool_calls").asInt());
        assertEquals(2, run.get("usage").get("model_calls").asInt());

        List<ToolServer.Call> calls = new ArrayList<>(tools.calls("/lookup"));
        calls.sort(java.util.Comparator.comparing(ToolServer.Call::idempotencyKey)); // made at once: any order
        assertEquals(2, calls.size());
        assertEquals(id + ":call_a", calls.get(0).idempotencyKey());
        assertEquals(Api.json("{\"run_id\":\"" + id + "\",\"agent\":\"crm\",\"tool_call_id\":\"call_a\","
            + "\"name\":\"lookup\",\"arguments\":{\"email\":\"ada@example.com\"}}"), calls.get(0).body());
        assertEquals(id + ":call_b", calls.get(1).idempotencyKey());

        JsonNode second = model.requests().get(1).body();
        JsonNode sent = second.get("messages");
        assertEquals(5, sent.size(), sent::toString);
        assertEquals("assistant", sent.get(2).get("role").asText());
        assertEquals("{\"email\":\"ada@example.com\"}",
            sent.get(2).get("tool_calls").get(0).get("function").get("arguments").asText(), "arguments as a JSON string");
        assertEquals(Api.json("{\"role\":\"tool\",\"content\":\"{\\\"name\\\":\\\"Ada\\\"}\",\"tool_call_id\":\"call_a\"}"),
            sent.get(3));
        assertEquals("call_b", sent.get(4).get("tool_call_id").asText());
        JsonNode toolsSent = model.requests().get(0).body().get("tools");
        assertEquals(Api.json("[{\"type\":\"function\",\"function\":{\"name\":\"lookup\",\"description\":"
            + "\"Find a customer by email\",\"parameters\":" + LOOKUP_PARAMS + "}}]"), toolsSent);

        List<JsonNode> transcript = messages(http, id);
        assertEquals(List.of("system", "user", "assistant", "tool", "tool", "assistant"),
            transcript.stream().map(m -> m.get("role").asText()).toList());
        for (int i = 0; i < transcript.size(); i++) {
          assertEquals(i, transcript.get(i).get("index").asInt());
        }
        assertEquals(List.of("run.started", "model_call.started", "model_call.finished", "tool_call.started",
            "tool_call.started", "tool_call.finished", "tool_call.finished", "model_call.started", "model_call.finished",
            "run.succeeded"), eventTypes(http, id));
      });
    }
  }

  @BothDatabases
  void each_kind_of_bad_tool_call_goes_back_to_the_model_as_an_error_and_the_run_goes_on(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model)) {
      tools.script("/broken", ToolServer.Reply.json(500, "{\"oops\":true}"));
      tools.script("/slow", ToolServer.Reply.json(200, "{}").after(Duration.ofSeconds(3)));
      model.script(
          Reply.toolCalls(ToolCall.of("c1", "nope", Map.of())),
          Reply.toolCalls(new ToolCall("c2", "lookup", "{\"email\": ")),
          // a good call between: two bad ones in a row do not end the run, and the count starts again
          Reply.toolCalls(ToolCall.of("ok", "lookup", Map.of("email", "a@example.com"))),
          Reply.toolCalls(ToolCall.of("c3", "lookup", Map.of("mail", "x"))),
          Reply.toolCalls(ToolCall.of("c4", "broken", Map.of("email", "a@example.com"))),
          Reply.text("done"));
      api.test(http -> {
        agent(http, "bad", null, tool("lookup", tools.url("/lookup"), false), tool("broken", tools.url("/broken"), false));
        String id = start(http, "bad", "\"go\"");
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals("done", run.get("output").asText());
        List<JsonNode> transcript = messages(http, id);
        List<String> errors = transcript.stream().filter(m -> m.get("role").asText().equals("tool"))
            .filter(m -> !m.get("tool_call_id").asText().equals("ok"))
            .map(m -> Api.json(m.get("content").asText()).get("error").asText()).toList();
        assertEquals(4, errors.size(), transcript::toString);
        assertTrue(errors.get(0).contains("no tool named 'nope'") && errors.get(0).contains("lookup, broken"),
            errors.get(0));
        assertTrue(errors.get(1).startsWith("the arguments are not a JSON object"), errors.get(1));
        assertTrue(errors.get(2).startsWith("the arguments do not match the tool's parameters")
            && errors.get(2).contains("email"), errors.get(2));
        assertTrue(errors.get(3).contains("HTTP 500"), errors.get(3));
        assertEquals(1, tools.calls("/lookup").size(), "bad arguments never reach the tool");
        assertEquals("ok", tools.calls("/lookup").get(0).body().get("tool_call_id").asText());
        assertEquals(1, tools.calls("/broken").size());
        assertEquals(2, run.get("usage").get("tool_calls").asInt(), "only calls made count");
      });
    }
  }

  @BothDatabases
  void three_bad_tool_calls_in_a_row_fail_the_run_and_a_timeout_is_one_of_them(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model)) {
      tools.script("/slow", ToolServer.Reply.json(200, "{}").after(Duration.ofSeconds(3)));
      model.script(
          Reply.toolCalls(ToolCall.of("c1", "slow", Map.of("email", "a@example.com"))),
          Reply.toolCalls(ToolCall.of("c2", "nope", Map.of())),
          Reply.toolCalls(new ToolCall("c3", "slow", "not json")),
          Reply.text("never"));
      api.test(http -> {
        agent(http, "flaky", null, tool("slow", tools.url("/slow"), false));
        String id = start(http, "flaky", "\"go\"");
        JsonNode run = failedWith(http, id, "invalid_tool_calls");
        assertTrue(run.get("error").get("message").asText().contains("not a JSON object"), run::toString);
        assertTrue(run.get("output").isNull());
        assertEquals(3, model.requestCount(), "the model is not called after the third bad call");
        JsonNode timeout = Api.json(messages(http, id).get(3).get("content").asText());
        assertEquals("the tool did not answer within 1000 ms", timeout.get("error").asText());
        assertEquals(8, messages(http, id).size(), "the transcript stays");
      });
    }
  }

  @BothDatabases
  void the_model_answering_429_then_503_is_retried_honouring_retry_after(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model)) {
      model.script(Reply.status(429, "Rate limit reached").retryAfter("1"), Reply.status(503, "overloaded"),
          Reply.text("finally"));
      api.test(http -> {
        agent(http, "patient", null);
        String id = start(http, "patient", "\"hi\"");
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals("finally", run.get("output").asText());
        assertEquals(3, model.requestCount());
        List<FakeModel.Request> requests = model.requests();
        Duration waited = Duration.between(requests.get(0).at(), requests.get(1).at());
        assertTrue(waited.toMillis() >= 950, "Retry-After: 1 was honoured, waited " + waited);
        assertEquals(1, run.get("usage").get("model_calls").asInt(), "retries are one model call");
        List<String> types = eventTypes(http, id);
        assertEquals(List.of("run.started", "model_call.started", "model_call.finished", "model_call.started",
            "model_call.finished", "model_call.started", "model_call.finished", "run.succeeded"), types);
        JsonNode first = http.get("/v1/runs/" + id + "/events").json().get("data").get(2);
        assertEquals(429, first.get("data").get("http_status").asInt());
        assertEquals("failed", first.get("data").get("outcome").asText());
      });
    }
  }

  @BothDatabases
  void past_the_last_retry_the_run_fails_with_model_error(Api api) throws Exception {
    try (FakeModel model = FakeModel.start();
        Engine engine = engine(api, model, s -> s.with("agents.model.max_retries", "2"))) {
      model.script(Reply.status(500, "boom"));
      api.test(http -> {
        agent(http, "doomed", null);
        String id = start(http, "doomed", "\"hi\"");
        JsonNode run = failedWith(http, id, "model_error");
        assertEquals(500, run.get("error").get("http_status").asInt());
        assertEquals(3, run.get("error").get("attempts").asInt());
        assertEquals("the model answered HTTP 500: boom (after 3 attempts)", run.get("error").get("message").asText());
        assertEquals(3, model.requestCount());
      });
    }
  }

  @BothDatabases
  void a_model_error_that_a_retry_cannot_mend_fails_at_once(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model)) {
      model.script(Reply.status(400, "model 'test-model' not found"));
      api.test(http -> {
        agent(http, "typo", null);
        JsonNode run = failedWith(http, start(http, "typo", "\"hi\""), "model_error");
        assertEquals(400, run.get("error").get("http_status").asInt());
        assertTrue(run.get("error").get("message").asText().contains("model 'test-model' not found"), run::toString);
        assertEquals(1, model.requestCount());
      });
    }
  }

  // ---- approvals ----

  @BothDatabases
  void a_tool_that_requires_approval_pauses_the_run_until_approved(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model)) {
      model.script(Reply.toolCalls(ToolCall.of("c1", "refund", Map.of("email", "a@example.com"))), Reply.text("refunded"));
      api.test(http -> {
        agent(http, "refunds", null, tool("refund", tools.url("/refund"), true));
        String id = start(http, "refunds", "\"refund a@example.com\"");
        JsonNode waiting = awaitStatus(http, id, "awaiting_approval");
        assertEquals(Api.json("{\"id\":\"c1\",\"name\":\"refund\",\"arguments\":{\"email\":\"a@example.com\"}}"),
            waiting.get("approval").get("tool_call"));
        assertEquals("pending", waiting.get("approval").get("status").asText());
        assertEquals(0, tools.calls("/refund").size(), "nothing is called before the approval");
        Http.Reply approved = http.post("/v1/runs/" + id + "/approve", "{\"comment\":\"ok\"}");
        assertEquals(200, approved.status(), approved::toString);
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals("refunded", run.get("output").asText());
        assertEquals(1, tools.calls("/refund").size());
        assertEquals("approved", run.get("approval").get("status").asText());
      });
    }
  }

  @BothDatabases
  void a_rejected_tool_call_tells_the_model_why_and_the_run_goes_on(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model)) {
      model.script(Reply.toolCalls(ToolCall.of("c1", "refund", Map.of("email", "a@example.com"))),
          Reply.text("I could not refund"));
      api.test(http -> {
        agent(http, "refunds", null, tool("refund", tools.url("/refund"), true));
        String id = start(http, "refunds", "\"refund\"");
        awaitStatus(http, id, "awaiting_approval");
        assertEquals(200, http.post("/v1/runs/" + id + "/reject", "{\"comment\":\"too large\"}").status());
        JsonNode run = awaitStatus(http, id, "succeeded");
        assertEquals("I could not refund", run.get("output").asText());
        assertEquals(0, tools.calls("/refund").size());
        JsonNode result = model.requests().get(1).body().get("messages").get(3);
        assertEquals("tool", result.get("role").asText());
        assertEquals("c1", result.get("tool_call_id").asText());
        assertEquals("the call was rejected by the approver: too large",
            Api.json(result.get("content").asText()).get("error").asText());
        assertTrue(eventTypes(http, id).contains("run.approval_rejected"));
      });
    }
  }

  @BothDatabases
  void an_agent_that_requires_approval_waits_before_its_first_model_call(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model)) {
      model.script(Reply.text("ok"));
      api.test(http -> {
        assertEquals(201, http.put("/v1/agents/gated", "{\"model\":\"m\",\"requires_approval\":true,"
            + "\"limits\":{\"timeout_s\":1}}").status());
        String approvedRun = start(http, "gated", "\"a\"");
        String rejectedRun = start(http, "gated", "\"b\"");
        assertTrue(awaitStatus(http, approvedRun, "awaiting_approval").get("requires_approval").asBoolean());
        awaitStatus(http, rejectedRun, "awaiting_approval");
        assertEquals(0, model.requestCount());
        Thread.sleep(1_200); // longer than the agent's timeout_s: waiting for a person does not count
        assertEquals(200, http.post("/v1/runs/" + approvedRun + "/approve", "{}").status());
        awaitStatus(http, approvedRun, "succeeded");
        assertEquals(200, http.post("/v1/runs/" + rejectedRun + "/reject", "{}").status());
        assertEquals("rejected", http.get("/v1/runs/" + rejectedRun).json().get("status").asText());
        assertEquals(1, model.requestCount());
      });
    }
  }

  // ---- limits ----

  @BothDatabases
  void each_limit_ends_the_run_with_its_code_and_the_transcript_stays(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model)) {
      model.respondWith(request -> {
        String agent = request.get("messages").get(0).get("content").asText();
        if (agent.equals("tokens")) {
          return Reply.text("long answer").usage(90, 20);
        }
        if (agent.equals("slow")) {
          return Reply.toolCalls(ToolCall.of("c" + request.get("messages").size(), "lookup",
              Map.of("email", "a@example.com"))).after(Duration.ofMillis(600));
        }
        return Reply.toolCalls(ToolCall.of("c" + request.get("messages").size(), "lookup", Map.of("email", "a@example.com")),
            ToolCall.of("d" + request.get("messages").size(), "lookup", Map.of("email", "b@example.com")));
      });
      api.test(http -> {
        String lookup = tool("lookup", tools.url("/lookup"), false);
        putAgent(http, "turns", "{\"max_turns\":2,\"max_tool_calls\":100}", lookup);
        putAgent(http, "calls", "{\"max_turns\":10,\"max_tool_calls\":3}", lookup);
        putAgent(http, "tokens", "{\"max_total_tokens\":100}", lookup);
        putAgent(http, "slow", "{\"timeout_s\":1}", lookup);

        JsonNode turns = failedWith(http, start(http, "turns", "\"x\""), "max_turns_exceeded");
        assertEquals(2, turns.get("usage").get("model_calls").asInt());
        assertEquals(4, turns.get("usage").get("tool_calls").asInt());
        JsonNode calls = failedWith(http, start(http, "calls", "\"x\""), "max_tool_calls_exceeded");
        assertEquals(3, calls.get("usage").get("tool_calls").asInt());
        JsonNode tokens = failedWith(http, start(http, "tokens", "\"x\""), "token_budget_exceeded");
        assertEquals("long answer", tokens.get("output").asText(), "partial output stays");
        assertEquals(110, tokens.get("usage").get("total_tokens").asInt());
        String slowId = start(http, "slow", "\"x\"");
        JsonNode slow = failedWith(http, slowId, "timeout");
        assertTrue(messages(http, slowId).size() >= 3, "the transcript stays");
        assertTrue(Duration.between(Instant.parse(slow.get("created_at").asText()),
            Instant.parse(slow.get("finished_at").asText())).toMillis() < 3_000, slow::toString);
      });
    }
  }

  private static void putAgent(Http http, String id, String limits, String tool) {
    Http.Reply put = http.put("/v1/agents/" + id, "{\"model\":\"m\",\"instructions\":\"" + id + "\",\"tools\":[" + tool
        + "],\"limits\":" + limits + "}");
    assertEquals(201, put.status(), put::toString);
  }

  // ---- cancel ----

  @BothDatabases
  void cancel_during_a_model_call_ends_the_run_at_once_and_nothing_more_is_called(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model)) {
      model.script(Reply.toolCalls(ToolCall.of("c1", "lookup", Map.of("email", "a@example.com")))
          .after(Duration.ofSeconds(1)));
      api.test(http -> {
        agent(http, "slowpoke", null, tool("lookup", tools.url("/lookup"), false));
        String id = start(http, "slowpoke", "\"x\"");
        await(http, id, "a model call in flight", run -> model.requestCount() == 1);
        Http.Reply canceled = http.post("/v1/runs/" + id + "/cancel", "{}");
        assertEquals(200, canceled.status(), canceled::toString);
        assertEquals("canceled", canceled.json().get("status").asText());
        Thread.sleep(1_500); // the model answers meanwhile
        assertEquals("canceled", http.get("/v1/runs/" + id).json().get("status").asText());
        assertEquals(0, tools.calls("/lookup").size(), "the answer's tool call is never made");
        assertEquals(1, model.requestCount());
        assertEquals(2, messages(http, id).size(), "the answer that came after the cancel is not kept");
      });
    }
  }

  @BothDatabases
  void cancel_during_a_tool_call_ends_the_run_at_once_and_its_result_is_not_kept(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model)) {
      tools.script("/lookup", ToolServer.Reply.json(200, "{\"name\":\"Ada\"}").after(Duration.ofMillis(800)));
      model.script(Reply.toolCalls(ToolCall.of("c1", "lookup", Map.of("email", "a@example.com"))), Reply.text("never"));
      api.test(http -> {
        agent(http, "slowtool", null, tool("lookup", tools.url("/lookup"), false));
        String id = start(http, "slowtool", "\"x\"");
        await(http, id, "a tool call in flight", run -> tools.calls("/lookup").size() == 1);
        Http.Reply canceled = http.post("/v1/runs/" + id + "/cancel", "{}");
        assertEquals(200, canceled.status(), canceled::toString);
        assertEquals("canceled", canceled.json().get("status").asText());
        Thread.sleep(1_200); // the tool answers meanwhile
        assertEquals("canceled", http.get("/v1/runs/" + id).json().get("status").asText());
        assertEquals(1, model.requestCount(), "the model is not called again");
        assertEquals(List.of("system", "user", "assistant"),
            messages(http, id).stream().map(m -> m.get("role").asText()).toList(), "the tool's result is not kept");
      });
    }
  }

  @BothDatabases
  void a_tool_call_nobody_approves_in_time_fails_the_run_with_approval_expired(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model, s -> s.with("engine.approval_timeout_s", "1"))) {
      model.script(Reply.toolCalls(ToolCall.of("c1", "refund", Map.of("email", "a@example.com"))), Reply.text("never"));
      api.test(http -> {
        agent(http, "unattended", null, tool("refund", tools.url("/refund"), true));
        String id = start(http, "unattended", "\"refund\"");
        awaitStatus(http, id, "awaiting_approval");
        JsonNode run = failedWith(http, id, "approval_expired");
        assertEquals("expired", run.get("approval").get("status").asText());
        assertEquals("c1", run.get("approval").get("tool_call").get("id").asText());
        assertEquals(0, tools.calls("/refund").size());
        assertEquals(1, model.requestCount());
      });
    }
  }

  // ---- the start endpoint ----

  @BothDatabases
  void bad_start_requests_get_a_problem_naming_the_field(Api api) {
    api.test(http -> {
      assertEquals(201, http.put("/v1/agents/a", "{\"model\":\"m\"}").status());
      assertProblem(http.post("/v1/agents/a/runs", "{\"input\":\"x\"}"), 400, "validation_failed", "project");
      assertProblem(http.post("/v1/agents/a/runs", "{\"project\":\"demo\"}"), 400, "validation_failed", "input");
      assertProblem(http.post("/v1/agents/a/runs", "{\"project\":\"demo\",\"input\":[1]}"), 400, "validation_failed",
          "input");
      assertProblem(http.post("/v1/agents/a/runs", "{\"project\":\"demo\",\"input\":\"x\",\"model\":5}"), 400,
          "validation_failed", "model");
      assertProblem(http.post("/v1/agents/a/runs", "{\"project\":\"demo\",\"input\":\"x\",\"extra\":1}"), 400,
          "unknown_parameter", "extra");
      assertProblem(http.post("/v1/agents/nobody/runs", "{\"project\":\"demo\",\"input\":\"x\"}"), 404,
          "agent_not_found");
      assertProblem(http.get("/v1/runs?kind=robot"), 400, "validation_failed", "kind");
      assertEquals(200, http.delete("/v1/agents/a").status());
      assertProblem(http.post("/v1/agents/a/runs", "{\"project\":\"demo\",\"input\":\"x\"}"), 404, "agent_not_found");
      assertEquals(0, api.countRuns(""));
    });
  }

  @BothDatabases
  void another_workspaces_agent_and_a_key_without_the_scope_are_refused(Api api) {
    String otherWorkspace = Api.newWorkspaceId();
    String otherKey = api.keyIn(otherWorkspace, null, Scope.all().toArray(new Scope[0]));
    String readOnly = api.key(Scope.RUNS_READ);
    api.test(http -> {
      // Gated, so that the run this test leaves is not taken up by a later test's engine and model.
      assertEquals(201, http.put("/v1/agents/mine", "{\"model\":\"m\",\"requires_approval\":true}").status());
      String body = "{\"project\":\"demo\",\"input\":\"x\"}";
      assertProblem(http.post("/v1/agents/mine/runs", otherKey, body), 404, "agent_not_found");
      assertProblem(http.post("/v1/agents/mine/runs", readOnly, body), 403, "insufficient_scope");
      String id = start(http, "mine", "\"x\"");
      assertProblem(http.get("/v1/runs/" + id + "/messages", otherKey), 404, "run_not_found");
      assertEquals(0, api.countRuns("") - 1);
    });
  }

  @BothDatabases
  void an_idempotency_key_replays_the_first_start(Api api) {
    api.test(http -> {
      assertEquals(201, http.put("/v1/agents/once", "{\"model\":\"m\",\"requires_approval\":true}").status());
      String body = "{\"project\":\"demo\",\"input\":{\"ticket\":42}}";
      Http.Reply first = http.post("/v1/agents/once/runs", api.key, body, "Idempotency-Key", "k-1");
      Http.Reply again = http.post("/v1/agents/once/runs", api.key, body, "Idempotency-Key", "k-1");
      assertEquals(200, again.status());
      assertEquals("true", again.header("Idempotent-Replayed"));
      assertEquals(first.json(), again.json());
      assertEquals(Api.json("{\"ticket\":42}"), first.json().get("input"));
      assertProblem(http.post("/v1/agents/once/runs", api.key, "{\"project\":\"demo\",\"input\":\"other\"}",
          "Idempotency-Key", "k-1"), 422, "idempotency_key_mismatch");
      assertEquals(1, api.countRuns("kind = 'agent'"));
      JsonNode messages = http.get("/v1/runs/" + first.json().get("id").asText() + "/messages").json();
      assertEquals(List.of("user"), roles(messages), "no instructions: no system message");
      assertEquals("{\"ticket\":42}", messages.get("data").get(0).get("content").asText());
    });
  }

  // ---- tenants' schemas against the engine's threads ----

  /** Answers "Search." agents with one tool call of {@code arguments}, and any tool result or other agent with text. */
  private static Reply searchOnce(JsonNode body, Map<String, Object> arguments) {
    JsonNode messages = body.get("messages");
    if (messages.get(messages.size() - 1).get("role").asText().equals("tool")) {
      return Reply.text("gave up");
    }
    return messages.get(0).get("content").asText().equals("Search.")
        ? Reply.toolCalls(ToolCall.of("c1", "search", arguments)) : Reply.text("hello");
  }

  @BothDatabases
  @Timeout(value = 60, unit = TimeUnit.SECONDS) // java.util.regex spends minutes on each of these calls
  void a_pattern_that_would_backtrack_is_checked_in_linear_time_and_another_tenants_run_goes_on(Api api)
      throws Exception {
    String params = "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\","
        + "\"pattern\":\"^(.*a){12}$\"}},\"required\":[\"q\"]}";
    String otherWorkspace = Api.newWorkspaceId();
    String otherKey = api.keyIn(otherWorkspace, null, Scope.all().toArray(new Scope[0]));
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model)) {
      model.respondWith(body -> searchOnce(body, Map.of("q", "a".repeat(60) + "!")));
      api.test(http -> {
        assertEquals(201, http.put("/v1/agents/searcher", "{\"model\":\"m\",\"instructions\":\"Search.\","
            + "\"tools\":[{\"name\":\"search\",\"parameters\":" + params + ",\"url\":\"" + tools.url("/search")
            + "\"}]}").status());
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
          ids.add(start(http, "searcher", "\"find\""));
        }
        assertEquals(201, http.send("PUT", "/v1/agents/greeter", otherKey, "{\"model\":\"m\",\"instructions\":"
            + "\"Greet.\"}", "application/json").status());
        Http.Reply other = http.post("/v1/agents/greeter/runs", otherKey, "{\"project\":\"demo\",\"input\":\"hi\"}");
        assertEquals(200, other.status(), other::toString);
        assertEquals("hello", awaitStatus(http, otherKey, other.json().get("id").asText(), "succeeded").get("output")
            .asText());
        for (String id : ids) {
          assertEquals("gave up", awaitStatus(http, id, "succeeded").get("output").asText());
          String error = messages(http, id).stream().filter(m -> m.get("role").asText().equals("tool")).findFirst()
              .map(m -> Api.json(m.get("content").asText()).get("error").asText()).orElseThrow();
          assertTrue(error.startsWith("the arguments do not match the tool's parameters") && error.contains("q"), error);
        }
        assertEquals(0, tools.calls("/search").size(), "arguments that do not match never reach the tool");
      });
    }
  }

  @BothDatabases
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void arguments_that_take_a_schema_past_its_budget_fail_the_run_and_free_the_engine(Api api) throws Exception {
    // each level of nesting tries both branches of anyOf, and both fail at the bottom: 2^40 steps unbounded
    String params = "{\"type\":\"object\",\"properties\":{\"q\":{\"$ref\":\"#/$defs/n\"}},\"$defs\":{\"n\":"
        + "{\"type\":\"array\",\"items\":{\"anyOf\":[{\"$ref\":\"#/$defs/n\"},{\"$ref\":\"#/$defs/n\"}]}}}}";
    Object nested = 1;
    for (int i = 0; i < 40; i++) {
      nested = List.of(nested);
    }
    Map<String, Object> arguments = Map.of("q", nested);
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model)) {
      model.respondWith(body -> searchOnce(body, arguments));
      api.test(http -> {
        assertEquals(201, http.put("/v1/agents/searcher", "{\"model\":\"m\",\"instructions\":\"Search.\","
            + "\"tools\":[{\"name\":\"search\",\"parameters\":" + params + ",\"url\":\"" + tools.url("/search")
            + "\"}]}").status());
        String id = start(http, "searcher", "\"find\"");
        JsonNode run = failedWith(http, id, "schema_budget_exceeded");
        assertTrue(run.get("error").get("message").asText().contains("'search'"), run::toString);
        assertEquals(0, tools.calls("/search").size());
        assertEquals(201, http.put("/v1/agents/greeter", "{\"model\":\"m\",\"instructions\":\"Greet.\"}")
            .status());
        assertEquals("hello", awaitStatus(http, start(http, "greeter", "\"hi\""), "succeeded").get("output").asText());
      });
    }
  }
}
