package dev.runway.usage;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * The daily token quota of a workspace (agents.workspace_tokens_per_day): each model answer's
 * total_tokens counted in token_usage, starts refused with 429 once the day's tokens are used, a
 * running run stopped before a call that would pass them, GET /v1/usage; and the per-run bound on
 * max_total_tokens.
 */
class TokenQuotaTest {
  /** A tool the model may call that Runway answers itself: no tool server needed. */
  private static final String CLOCK = "{\"name\":\"clock\",\"url\":\"builtin:current_time\",\"parameters\":{\"type\":"
      + "\"object\",\"properties\":{\"timezone\":{\"type\":\"string\"}},\"required\":[\"timezone\"]}}";

  private static UnaryOperator<Settings> quota(long tokens) {
    return s -> s.with("agents.workspace_tokens_per_day", Long.toString(tokens));
  }

  private static Engine engine(Api api, FakeModel model, long tokensPerDay) {
    return api.database().startEngine(s -> quota(tokensPerDay).apply(s.with("agents.model.base_url", model.baseUrl())));
  }

  private static String start(Http http, String agent) {
    Http.Reply started = http.post("/v1/agents/" + agent + "/runs", "{\"project\":\"demo\",\"input\":\"UTC\"}");
    assertEquals(200, started.status(), started::toString);
    return started.json().get("id").asText();
  }

  /** The workspace's counted tokens over every day (a test that crosses midnight still sees them all). */
  private static long counted(Api api) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COALESCE(SUM(tokens), 0) FROM token_usage "
        + "WHERE workspace_id = :ws").bind("ws", api.workspace).mapTo(Long.class).one());
  }

  private static long countedOn(Api api, LocalDate day) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COALESCE(SUM(tokens), 0) FROM token_usage "
        + "WHERE workspace_id = :ws AND day_utc = :day").bind("ws", api.workspace).bind("day", day)
        .mapTo(Long.class).one());
  }

  /** Stores {@code tokens} as used today and tomorrow (UTC), so that midnight passing mid-test changes nothing. */
  private static void used(Api api, long tokens) {
    LocalDate today = LocalDate.now(ZoneOffset.UTC);
    api.jdbi().useHandle(h -> {
      for (LocalDate day : new LocalDate[] {today, today.plusDays(1)}) {
        h.createUpdate("INSERT INTO token_usage (workspace_id, day_utc, tokens) VALUES (:ws, :day, :tokens)")
            .bind("ws", api.workspace).bind("day", day).bind("tokens", tokens).execute();
      }
    });
  }

  /**
   * Answers the requests for {@code name} with {@code replies} in order (the last repeats), any other
   * with "ok": runs other tests left running on this database may be claimed by this test's engine.
   */
  private static void answer(FakeModel model, String name, Reply... replies) {
    Deque<Reply> queue = new ArrayDeque<>(List.of(replies));
    model.respondWith(body -> {
      if (!body.path("model").asText().equals(name)) {
        return Reply.text("ok");
      }
      synchronized (queue) {
        return queue.size() > 1 ? queue.poll() : queue.peek();
      }
    });
  }

  /** The requests for model {@code name}. */
  private static long calls(FakeModel model, String name) {
    return model.requests().stream().filter(r -> r.body().path("model").asText().equals(name)).count();
  }

  /** Cancels the runs a test without an engine left running, so that no later test's engine takes them up. */
  static void cancelRunning(Http http) {
    for (JsonNode run : http.get("/v1/runs?status=running,awaiting_approval&limit=100").json().get("data")) {
      http.post("/v1/runs/" + run.get("id").asText() + "/cancel", "{}");
    }
  }

  private static int runs(Api api) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM run WHERE workspace_id = :ws")
        .bind("ws", api.workspace).mapTo(Integer.class).one());
  }

  @BothDatabases
  void each_answers_total_tokens_count_for_the_workspace_and_its_utc_day(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model, 2_000_000)) {
      answer(model, "tq-counted", Reply.toolCalls(ToolCall.of("c1", "clock", Map.of("timezone", "UTC"))).usage(100, 20),
          Reply.text("It is noon.").usage(150, 10));
      api.test(http -> {
        assertEquals(201, http.put("/v1/agents/clock", "{\"model\":\"tq-counted\",\"tools\":[" + CLOCK + "]}")
            .status());
        JsonNode run = awaitStatus(http, start(http, "clock"), "succeeded");
        assertEquals(280, run.get("usage").get("total_tokens").asLong());
        assertEquals(280, counted(api), "both answers counted");

        Http.Reply usage = http.get("/v1/usage");
        assertEquals(200, usage.status(), usage::toString);
        JsonNode u = usage.json();
        LocalDate day = LocalDate.parse(u.get("day").asText());
        assertEquals(countedOn(api, day), u.get("tokens_used").asLong());
        assertEquals(2_000_000, u.get("tokens_per_day").asLong());
        assertEquals(2_000_000 - u.get("tokens_used").asLong(), u.get("tokens_remaining").asLong());
        assertEquals(day.plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant(), Instant.parse(u.get("resets_at").asText()));
        assertProblem(http.get("/v1/usage?day=2026-01-01"), 400, "unknown_parameter", "day");
      });
      // Another workspace's tokens are its own.
      Api other = Api.on(api.database());
      other.test(http -> assertEquals(0, http.get("/v1/usage").json().get("tokens_used").asLong()));
    }
  }

  @BothDatabases
  void each_agents_tokens_count_for_it_and_get_usage_lists_the_agents_of_today(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model, 2_000_000)) {
      model.respondWith(body -> body.path("model").asText().equals("big") ? Reply.text("long").usage(300, 50)
          : Reply.text("short").usage(20, 5));
      api.test(http -> {
        assertEquals(201, http.put("/v1/agents/big-spender", "{\"model\":\"big\"}").status());
        assertEquals(201, http.put("/v1/agents/small-spender", "{\"model\":\"small\"}").status());
        awaitStatus(http, start(http, "big-spender"), "succeeded");
        awaitStatus(http, start(http, "small-spender"), "succeeded");
        awaitStatus(http, start(http, "small-spender"), "succeeded");
        JsonNode u = http.get("/v1/usage").json();
        JsonNode agents = u.get("agents");
        assertEquals(2, agents.size(), u::toString);
        assertEquals("big-spender", agents.get(0).get("agent").asText(), "the agent that used the most first");
        assertEquals(350, agents.get(0).get("tokens_used").asLong());
        assertEquals("small-spender", agents.get(1).get("agent").asText());
        assertEquals(50, agents.get(1).get("tokens_used").asLong());
        long stored = api.jdbi().withHandle(h -> h.createQuery("SELECT COALESCE(SUM(tokens), 0) FROM agent_token_usage "
            + "WHERE workspace_id = :ws").bind("ws", api.workspace).mapTo(Long.class).one());
        assertEquals(counted(api), stored, "the agents' counts add up to the workspace's");
      });
      Api other = Api.on(api.database());
      other.test(http -> assertEquals(0, http.get("/v1/usage").json().get("agents").size()));
    }
  }

  @BothDatabases
  void a_start_once_the_days_tokens_are_used_is_429_until_utc_midnight_and_starts_nothing(Api api) {
    used(api, 1_000);
    api.testWithServices(quota(1_000), http -> {
      assertEquals(201, http.put("/v1/agents/spender", "{\"model\":\"m\"}").status());
      Http.Reply refused = http.post("/v1/agents/spender/runs", "{\"project\":\"demo\",\"input\":\"hi\"}");
      JsonNode problem = assertProblem(refused, 429, "token_quota_exceeded");
      assertEquals(1_000, problem.get("tokens_used").asLong());
      assertEquals(1_000, problem.get("tokens_per_day").asLong());
      Instant resets = Instant.parse(problem.get("resets_at").asText());
      assertEquals(0, resets.atZone(ZoneOffset.UTC).toLocalTime().toSecondOfDay(), "UTC midnight: " + resets);
      long retryAfter = Long.parseLong(refused.header("Retry-After"));
      long untilMidnight = Duration.between(Instant.now(), resets).toSeconds();
      assertTrue(retryAfter >= 1 && retryAfter <= 86_400 && Math.abs(retryAfter - untilMidnight) <= 60,
          "Retry-After " + retryAfter + " s, " + untilMidnight + " s until " + resets);
      assertEquals(0, runs(api), "no run was stored");

      JsonNode usage = http.get("/v1/usage").json();
      assertEquals(0, usage.get("tokens_remaining").asLong());
      // A workflow run is not an agent run: it starts.
      api.workflow("plain", false);
      assertEquals(200, http.startRun("plain", "demo").status());
    });
    api.testWithServices(quota(1_001), http -> {
      assertEquals(200, http.post("/v1/agents/spender/runs", "{\"project\":\"demo\",\"input\":\"hi\"}").status(),
          "a token left: the run starts");
      cancelRunning(http);
    });
  }

  @BothDatabases
  void a_running_run_fails_with_token_quota_exceeded_before_a_model_call_that_would_pass_the_quota(Api api)
      throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model, 1_000)) {
      // 600 tokens for the first call: the second sends all of it again, so it would use more than the 400 left.
      answer(model, "tq-stopped", Reply.toolCalls(ToolCall.of("c1", "clock", Map.of("timezone", "UTC"))).usage(500, 100),
          Reply.text("short").usage(300, 50));
      api.testWithServices(quota(1_000), http -> {
        assertEquals(201, http.put("/v1/agents/clock", "{\"model\":\"tq-stopped\",\"tools\":[" + CLOCK + "]}")
            .status());
        String id = start(http, "clock");
        JsonNode run = awaitStatus(http, id, "failed");
        JsonNode error = run.get("error");
        assertEquals("token_quota_exceeded", error.get("code").asText(), run::toString);
        assertTrue(error.get("message").asText().contains("400 are left of 1000"), error::toString);
        assertEquals(600, error.get("tokens_used").asLong());
        assertEquals(1_000, error.get("tokens_per_day").asLong());
        assertEquals(Instant.parse(error.get("resets_at").asText()),
            LocalDate.parse(http.get("/v1/usage").json().get("day").asText()).plusDays(1)
                .atStartOfDay(ZoneOffset.UTC).toInstant());
        assertEquals(1, calls(model, "tq-stopped"), "the call that would pass the quota was not made");
        assertEquals(600, run.get("usage").get("total_tokens").asLong());
        assertEquals(600, counted(api));

        // 400 left: a new run starts, and its first call (nothing sent yet) goes out.
        JsonNode second = awaitStatus(http, start(http, "clock"), "succeeded");
        assertEquals(350, second.get("usage").get("total_tokens").asLong());
        assertEquals(950, counted(api));
      });
    }
  }

  @BothDatabases
  void an_answer_that_arrives_after_a_cancel_still_counts(Api api) throws Exception {
    try (FakeModel model = FakeModel.start(); Engine engine = engine(api, model, 2_000_000)) {
      answer(model, "tq-late", Reply.text("late").usage(70, 7).after(Duration.ofMillis(800)));
      api.test(http -> {
        assertEquals(201, http.put("/v1/agents/slow", "{\"model\":\"tq-late\"}").status());
        String id = start(http, "slow");
        dev.runway.support.Runs.await(http, id, "the model call in flight", run -> calls(model, "tq-late") == 1);
        assertEquals(200, http.post("/v1/runs/" + id + "/cancel", "{}").status());
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (counted(api) == 0 && System.nanoTime() < deadline) {
          Thread.sleep(50);
        }
        assertEquals(77, counted(api), "the model used them: they count");
        assertEquals("canceled", http.get("/v1/runs/" + id).json().get("status").asText());
      });
    }
  }

  @BothDatabases
  void zero_means_no_quota(Api api) {
    used(api, 5_000_000);
    api.testWithServices(quota(0), http -> {
      JsonNode usage = http.get("/v1/usage").json();
      assertEquals(5_000_000, usage.get("tokens_used").asLong());
      assertTrue(usage.get("tokens_per_day").isNull() && usage.get("tokens_remaining").isNull(), usage::toString);
      assertEquals(201, http.put("/v1/agents/free", "{\"model\":\"m\"}").status());
      assertEquals(200, http.post("/v1/agents/free/runs", "{\"project\":\"demo\",\"input\":\"hi\"}").status());
      cancelRunning(http);
    });
  }

  @BothDatabases
  void max_total_tokens_is_at_most_a_million_and_an_agent_saved_with_more_is_held_to_it(Api api) {
    api.test(http -> {
      Http.Reply refused = http.put("/v1/agents/big", "{\"model\":\"m\",\"limits\":{\"max_total_tokens\":1000001}}");
      assertProblem(refused, 400, "validation_failed", "limits.max_total_tokens");
      Http.Reply most = http.put("/v1/agents/big", "{\"model\":\"m\",\"limits\":{\"max_total_tokens\":1000000}}");
      assertEquals(201, most.status(), most::toString);

      // Saved when the bound was 10 million.
      api.jdbi().useHandle(h -> h.createUpdate("UPDATE agent SET definition = REPLACE(definition, "
          + "'\"max_total_tokens\":1000000', '\"max_total_tokens\":10000000') WHERE workspace_id = :ws AND id = 'big'")
          .bind("ws", api.workspace).execute());
      assertEquals(1_000_000, http.get("/v1/agents/big").json().get("limits").get("max_total_tokens").asLong());
      Http.Reply started = http.post("/v1/agents/big/runs", "{\"project\":\"demo\",\"input\":\"hi\"}");
      assertEquals(200, started.status(), started::toString);
      String definition = api.jdbi().withHandle(h -> h.createQuery("SELECT definition FROM run WHERE id = :id")
          .bind("id", started.json().get("id").asText()).mapTo(String.class).one());
      assertTrue(definition.contains("\"max_total_tokens\":1000000,"), definition);
      cancelRunning(http);
    });
  }
}
