package dev.runway.agent;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.await;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.config.Settings;
import dev.runway.core.Ids;
import dev.runway.engine.Engine;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.FakeModel;
import dev.runway.support.FakeModel.Reply;
import dev.runway.support.FakeModel.ToolCall;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import dev.runway.support.TestDatabase;
import dev.runway.support.ToolServer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Threads of agent runs through HTTP: a run continues its thread's conversation (the model sees the
 * earlier runs' messages, within the window), a thread's runs take turns, and the thread and its
 * messages can be read, by keys that may see its project.
 */
class ThreadsTest {
  private static final String PARAMS = "{\"type\":\"object\",\"properties\":{\"email\":{\"type\":\"string\"}},"
      + "\"required\":[\"email\"]}";

  private static Engine engine(Api api, FakeModel model, UnaryOperator<Settings> more) {
    return api.database().startEngine(s -> more.apply(s.with("agents.model.base_url", model.baseUrl())
        .with("agents.model.retry_base_ms", "20")));
  }

  private static void agent(Http http, String id, boolean requiresApproval, String tools) {
    Http.Reply put = http.put("/v1/agents/" + id, "{\"model\":\"test-model\",\"instructions\":\"Be brief.\","
        + "\"requires_approval\":" + requiresApproval + ",\"tools\":[" + tools + "]}");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
  }

  private static String lookup(String url) {
    return "{\"name\":\"lookup\",\"description\":\"Find a customer\",\"parameters\":" + PARAMS + ",\"url\":\"" + url
        + "\",\"timeout_ms\":5000}";
  }

  /** Starts a run of {@code agent} (200, running), in thread {@code thread} (null: a new one); the run record. */
  private static JsonNode start(Http http, String agent, String input, String thread) {
    Http.Reply reply = http.post("/v1/agents/" + agent + "/runs", "{\"project\":\"demo\",\"input\":\"" + input + "\""
        + (thread == null ? "" : ",\"thread_id\":\"" + thread + "\"") + "}");
    assertEquals(200, reply.status(), reply::toString);
    assertEquals("running", reply.json().get("status").asText(), "the start answers running, as workflow runs do");
    return reply.json();
  }

  /** A model request's messages as "role:content" (tool calls as "role:tool_calls"). */
  private static List<String> sent(FakeModel.Request request) {
    List<String> out = new ArrayList<>();
    for (JsonNode m : request.body().get("messages")) {
      out.add(m.get("role").asText() + ":" + (m.hasNonNull("content") ? m.get("content").asText()
          : m.has("tool_calls") ? "tool_calls" : "null"));
    }
    return out;
  }

  private static List<String> roles(Http http, String path) {
    List<String> roles = new ArrayList<>();
    http.all(path).forEach(m -> roles.add(m.get("role").asText()));
    return roles;
  }

  @BothDatabases
  void a_run_without_thread_id_starts_a_thread_and_a_run_naming_it_continues_the_conversation(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model, s -> s)) {
      model.script(Reply.text("Paris."), Reply.text("About 2.1 million."));
      api.test(http -> {
        agent(http, "chat", false, "");
        JsonNode first = start(http, "chat", "Capital of France?", null);
        String thread = first.get("thread_id").asText();
        assertTrue(Ids.looksLike("thr", thread), first::toString);
        awaitStatus(http, first.get("id").asText(), "succeeded");

        JsonNode second = start(http, "chat", "Its population?", thread);
        assertEquals(thread, second.get("thread_id").asText());
        JsonNode done = awaitStatus(http, second.get("id").asText(), "succeeded");
        assertEquals("About 2.1 million.", done.get("output").asText());
        assertEquals(thread, done.get("thread_id").asText());
        assertEquals(List.of("system:Be brief.", "user:Capital of France?", "assistant:Paris.", "user:Its population?"),
            sent(model.requests().get(1)), "its own instructions, the thread's earlier messages, then the new input");
        assertEquals(List.of("system:Be brief.", "user:Capital of France?"), sent(model.requests().get(0)));
        // The run's own transcript is unchanged: the thread's messages are not copied into it.
        assertEquals(List.of("system", "user", "assistant"), roles(http, "/v1/runs/" + second.get("id").asText()
            + "/messages"));

        Http.Reply got = http.get("/v1/threads/" + thread);
        assertEquals(200, got.status(), got::toString);
        JsonNode view = got.json();
        assertEquals("thread", view.get("object").asText());
        assertEquals("demo", view.get("project").asText());
        assertEquals(2, view.get("run_count").asInt());
        assertEquals(second.get("id").asText(), view.get("last_run_id").asText());
        assertTrue(view.get("active_run_id").isNull());
        assertEquals(first.get("created_at").asText(), view.get("created_at").asText());
        assertEquals(done.get("updated_at").asText(), view.get("updated_at").asText());

        // Every run's messages, oldest first, each naming its run, page after page.
        List<String> pages = new ArrayList<>();
        String cursor = null;
        int pageCount = 0;
        do {
          Http.Reply page = http.get("/v1/threads/" + thread + "/messages?limit=2"
              + (cursor == null ? "" : "&starting_after=" + cursor));
          assertEquals(200, page.status(), page::toString);
          page.json().get("data").forEach(m -> pages.add(m.get("run_id").asText().equals(first.get("id").asText())
              ? "1 " + m.get("index").asInt() + " " + m.get("role").asText()
              : "2 " + m.get("index").asInt() + " " + m.get("role").asText()));
          cursor = page.json().get("has_more").asBoolean() ? page.json().get("next_cursor").asText() : null;
          pageCount++;
        } while (cursor != null);
        assertEquals(List.of("1 0 system", "1 1 user", "1 2 assistant", "2 0 system", "2 1 user", "2 2 assistant"), pages);
        assertEquals(3, pageCount);
        assertProblem(http.get("/v1/threads/" + thread + "/messages?starting_after=nonsense"), 400, "validation_failed",
            "starting_after");

        // Every run starts a thread of its own unless it names one.
        JsonNode other = start(http, "chat", "Hello", null);
        assertFalse(other.get("thread_id").asText().equals(thread));
        awaitStatus(http, other.get("id").asText(), "succeeded");
        assertEquals(1, http.get("/v1/threads/" + other.get("thread_id").asText()).json().get("run_count").asInt());
      });
    }
  }

  @BothDatabases
  void the_window_drops_the_oldest_messages_whole_never_a_tool_result_without_its_call(Api api) throws Exception {
    UnaryOperator<Settings> window = s -> s.with("agents.thread_window_messages", "4");
    try (FakeModel model = FakeModel.start(); ToolServer tools = ToolServer.start();
        Engine engine = engine(api, model, window)) {
      tools.script("/lookup", ToolServer.Reply.json(200, "{\"name\":\"Ada\"}"));
      model.script(Reply.toolCalls(ToolCall.of("call_1", "lookup", Map.of("email", "ada@example.com"))),
          Reply.text("It is Ada."), Reply.text("A2"), Reply.text("A3"));
      api.testWithServices(window, http -> {
        agent(http, "crm", false, lookup(tools.url("/lookup")));
        JsonNode first = start(http, "crm", "Q1", null);
        String thread = first.get("thread_id").asText();
        awaitStatus(http, first.get("id").asText(), "succeeded");
        // Four earlier messages fit: the user's, the call, its result, the answer.
        String second = start(http, "crm", "Q2", thread).get("id").asText();
        awaitStatus(http, second, "succeeded");
        assertEquals(List.of("system:Be brief.", "user:Q1", "assistant:tool_calls", "tool:{\"name\":\"Ada\"}",
            "assistant:It is Ada.", "user:Q2"), sent(model.requests().get(2)));
        JsonNode call = model.requests().get(2).body().get("messages").get(2).get("tool_calls").get(0);
        assertEquals("call_1", call.get("id").asText());
        assertEquals("call_1", model.requests().get(2).body().get("messages").get(3).get("tool_call_id").asText());
        // The four most recent are the result, the answer, Q2 and A2: the result goes with its call.
        String third = start(http, "crm", "Q3", thread).get("id").asText();
        awaitStatus(http, third, "succeeded");
        assertEquals(List.of("system:Be brief.", "assistant:It is Ada.", "user:Q2", "assistant:A2", "user:Q3"),
            sent(model.requests().get(3)));
        JsonNode progress = Api.json(api.storedRun(third).orElseThrow().get("steps").toString());
        assertEquals(3, progress.get("thread_context_messages").asInt(), progress::toString);
      });
    }
  }

  @BothDatabases
  void a_second_run_of_a_busy_thread_waits_queued_and_then_sees_the_first_runs_answer(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model, s -> s)) {
      model.script(Reply.text("First answer."), Reply.text("Second answer."));
      api.test(http -> {
        agent(http, "gated", true, "");
        JsonNode first = start(http, "gated", "One", null);
        String firstId = first.get("id").asText();
        String thread = first.get("thread_id").asText();
        awaitStatus(http, firstId, "awaiting_approval");
        String secondId = start(http, "gated", "Two", thread).get("id").asText();
        String thirdId = start(http, "gated", "Three", thread).get("id").asText();
        assertEquals("queued", http.get("/v1/runs/" + secondId).json().get("status").asText());
        assertEquals("queued", api.storedRun(thirdId).orElseThrow().get("status"));
        assertEquals(List.of(), http.all("/v1/runs/" + secondId + "/messages"), "a queued run has not begun");
        JsonNode view = http.get("/v1/threads/" + thread).json();
        assertEquals(firstId, view.get("active_run_id").asText());
        assertEquals(2, view.get("queued_run_count").asInt());
        assertEquals(thirdId, view.get("last_run_id").asText());
        // A queued run canceled leaves the line; the others keep their turn.
        String dropped = start(http, "gated", "Dropped", thread).get("id").asText();
        Http.Reply canceled = http.post("/v1/runs/" + dropped + "/cancel", "{}");
        assertEquals(200, canceled.status(), canceled::toString);
        assertEquals("canceled", canceled.json().get("status").asText());
        assertEquals(firstId, http.get("/v1/threads/" + thread).json().get("active_run_id").asText());

        assertEquals(200, http.post("/v1/runs/" + firstId + "/approve", "{}").status());
        awaitStatus(http, firstId, "succeeded");
        // The first run's end began the second (its own approval gate), not the third.
        awaitStatus(http, secondId, "awaiting_approval");
        assertEquals("queued", http.get("/v1/runs/" + thirdId).json().get("status").asText());
        List<String> types = new ArrayList<>();
        http.all("/v1/runs/" + secondId + "/events").forEach(e -> types.add(e.get("type").asText()));
        assertEquals("run.queued", types.get(0), types::toString);
        assertEquals("run.started", types.get(1), types::toString);

        assertEquals(200, http.post("/v1/runs/" + secondId + "/approve", "{}").status());
        awaitStatus(http, secondId, "succeeded");
        assertEquals(List.of("system:Be brief.", "user:One", "assistant:First answer.", "user:Two"),
            sent(model.requests().get(1)), "the queued run read the thread after the first run ended");
        // Canceling the active run hands the thread on too.
        awaitStatus(http, thirdId, "awaiting_approval");
        assertEquals(200, http.post("/v1/runs/" + thirdId + "/cancel", "{}").status());
        JsonNode ended = http.get("/v1/threads/" + thread).json();
        assertTrue(ended.get("active_run_id").isNull(), ended::toString);
        assertEquals(0, ended.get("queued_run_count").asInt());
        assertEquals(4, ended.get("run_count").asInt());
        int free = api.jdbi().withHandle(h -> h.createQuery("SELECT active FROM concurrency_slot WHERE workspace_id = "
            + ":ws AND concurrency_key = :t").bind("ws", api.workspace).bind("t", thread).mapTo(Integer.class).one());
        assertEquals(0, free, "the thread's place is given back");
        // A new run of the idle thread starts at once.
        String fourth = start(http, "gated", "Four", thread).get("id").asText();
        awaitStatus(http, fourth, "awaiting_approval");
      });
    }
  }

  @BothDatabases
  void a_bad_unknown_or_foreign_thread_is_refused_naming_thread_id(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model, s -> s)) {
      model.script(Reply.text("ok"));
      api.test(http -> {
        agent(http, "chat", false, "");
        JsonNode first = start(http, "chat", "Hi", null);
        String thread = first.get("thread_id").asText();
        awaitStatus(http, first.get("id").asText(), "succeeded");
        for (String bad : List.of("\"nope\"", "42", "\"run_" + thread.substring(4) + "\"", "{}")) {
          assertProblem(http.post("/v1/agents/chat/runs", "{\"project\":\"demo\",\"input\":\"x\",\"thread_id\":" + bad
              + "}"), 400, "validation_failed", "thread_id");
        }
        String unknown = Ids.newId("thr");
        assertProblem(http.post("/v1/agents/chat/runs", "{\"project\":\"demo\",\"input\":\"x\",\"thread_id\":\""
            + unknown + "\"}"), 404, "thread_not_found", "thread_id");
        assertProblem(http.post("/v1/agents/chat/runs", "{\"project\":\"ops\",\"input\":\"x\",\"thread_id\":\""
            + thread + "\"}"), 409, "thread_project_mismatch", "thread_id");
        assertProblem(http.get("/v1/threads/" + unknown), 404, "thread_not_found");
        assertProblem(http.get("/v1/threads/nope"), 404, "thread_not_found");
        assertProblem(http.get("/v1/threads/" + unknown + "/messages"), 404, "thread_not_found");

        // Another workspace's key sees no such thread, nor may it continue it.
        String foreign = Api.on(api.database()).key;
        assertProblem(http.get("/v1/threads/" + thread, foreign), 404, "thread_not_found");
        assertProblem(http.get("/v1/threads/" + thread + "/messages", foreign), 404, "thread_not_found");
        // A key limited to other projects does not see it; one limited to its project does.
        String opsOnly = api.keyForProjects("ops");
        assertProblem(http.get("/v1/threads/" + thread, opsOnly), 404, "thread_not_found");
        assertProblem(http.get("/v1/threads/" + thread + "/messages", opsOnly), 404, "thread_not_found");
        String demoOnly = api.keyForProjects("demo");
        assertEquals(200, http.get("/v1/threads/" + thread, demoOnly).status());
        assertEquals(3, http.get("/v1/threads/" + thread + "/messages", demoOnly).json().get("data").size());
        assertEquals(1, api.countRuns(""), "no refused start stored a run");

        // The list: newest first, only the threads of the projects a key may see.
        JsonNode later = start(http, "chat", "Again", null);
        awaitStatus(http, later.get("id").asText(), "succeeded");
        Http.Reply page = http.get("/v1/threads?limit=1");
        assertEquals(200, page.status(), page::toString);
        assertEquals(later.get("thread_id").asText(), page.json().get("data").get(0).get("id").asText());
        assertEquals(1, page.json().get("data").get(0).get("run_count").asInt());
        assertTrue(page.json().get("has_more").asBoolean());
        Http.Reply rest = http.get("/v1/threads?limit=1&starting_after=" + page.json().get("next_cursor").asText());
        assertEquals(thread, rest.json().get("data").get(0).get("id").asText());
        assertFalse(rest.json().get("has_more").asBoolean());
        assertEquals(2, http.get("/v1/threads", demoOnly).json().get("data").size());
        assertEquals(0, http.get("/v1/threads", opsOnly).json().get("data").size());
        assertEquals(0, http.get("/v1/threads", foreign).json().get("data").size());
        assertProblem(http.get("/v1/threads?project=demo", opsOnly), 403, "project_forbidden");
        assertEquals(2, http.get("/v1/threads?project=demo").json().get("data").size());
        assertEquals(0, http.get("/v1/threads?project=ops").json().get("data").size());
        assertProblem(http.get("/v1/threads?starting_after=nope"), 400, "validation_failed", "starting_after");
      });
    }
  }

  /** Two instances on one PostgreSQL never let two runs of one thread be active at once. */
  @Test
  void two_instances_on_one_postgresql_run_one_run_of_a_thread_at_a_time_in_creation_order() throws Exception {
    Assumptions.assumeTrue(TestDatabase.postgresReachable() || TestDatabase.PG_REQUIRED, "PostgreSQL is not reachable");
    Api api = Api.on(TestDatabase.POSTGRESQL);
    api.testTwoInstances((first, second) -> {
      agent(first, "gated", true, "");
      JsonNode opening = start(first, "gated", "zero", null);
      String thread = opening.get("thread_id").asText();
      ExecutorService pool = Executors.newFixedThreadPool(6);
      try {
        List<Future<String>> starts = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
          Http http = i % 2 == 0 ? first : second;
          String input = "n" + i;
          starts.add(pool.submit(() -> start(http, "gated", input, thread).get("id").asText()));
        }
        for (Future<String> f : starts) {
          f.get();
        }
        List<String> startedInOrder = new ArrayList<>();
        for (int round = 0; round < 13; round++) {
          List<String> active = active(api, thread);
          assertEquals(1, active.size(), () -> "round " + active);
          startedInOrder.add(active.get(0));
          // Both instances cancel the active run at once: one wins, the other gets 409.
          String id = active.get(0);
          Future<Integer> a = pool.submit(() -> first.post("/v1/runs/" + id + "/cancel", "{}").status());
          Future<Integer> b = pool.submit(() -> second.post("/v1/runs/" + id + "/cancel", "{}").status());
          List<Integer> statuses = List.of(a.get(), b.get());
          assertTrue(statuses.contains(200) && (statuses.contains(409) || statuses.equals(List.of(200, 200))),
              statuses::toString);
        }
        assertEquals(List.of(), active(api, thread));
        List<String> ids = api.jdbi().withHandle(h -> h.createQuery("SELECT id FROM run WHERE thread_id = :t ORDER BY id")
            .bind("t", thread).mapTo(String.class).list());
        assertEquals(ids, startedInOrder, "one at a time, in creation order");
      } finally {
        pool.shutdownNow();
      }
    });
  }

  private static List<String> active(Api api, String thread) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT id FROM run WHERE thread_id = :t AND status IN "
        + "('running', 'awaiting_approval', 'queued') ORDER BY id").bind("t", thread).mapTo(String.class).list())
        .stream().filter(id -> !"queued".equals(api.storedRun(id).orElseThrow().get("status"))).toList();
  }
}
