package dev.runway.trigger;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.Services;
import dev.runway.core.Json;
import dev.runway.db.Database;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Workflow schedules through the API: each shows its next time; each time starts one run (with the
 * trigger's project and inputs, and a schedule.fired event), also when two schedulers race for it;
 * missed times after downtime per {@code missed}; an edit takes effect for the next time; a removed
 * schedule or an archived workflow starts nothing. The scheduler is driven with a clock the test
 * chooses ({@link Scheduler#round}), and once for real.
 */
class SchedulesTest {
  private static final Duration HOUR = Duration.ofHours(1);

  private static Scheduler scheduler(Api api) {
    Database db = api.services().database();
    return Scheduler.idle(db.jdbi(), db.committer(), api.services().starts());
  }

  private static JsonNode put(Http http, String id, String triggers) {
    Http.Reply put = http.put("/v1/workflows/" + id, "{\"triggers\": " + triggers + "}");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
    return put.json();
  }

  private static Instant nextRunAt(JsonNode workflow, int trigger) {
    JsonNode at = workflow.get("triggers").get(trigger).get("next_run_at");
    return at.isNull() ? null : Instant.parse(at.asText());
  }

  private static List<JsonNode> runs(Http http, String workflow) {
    List<JsonNode> runs = new ArrayList<>();
    http.get("/v1/runs?limit=100&workflow=" + workflow).json().get("data").forEach(runs::add);
    return runs;
  }

  private static JsonNode firstEvent(Http http, String runId) {
    return http.get("/v1/runs/" + runId + "/events").json().get("data").get(0);
  }

  @BothDatabases
  void a_schedule_shows_its_next_time_and_each_time_starts_one_run(Api api) {
    api.test(http -> {
      Instant before = Instant.now();
      JsonNode made = put(http, "report", "[{\"schedule\": {\"every\": \"1h\"}, \"project\": \"ops\", "
          + "\"inputs\": {\"region\": \"eu\"}}]");
      assertEquals(Json.tree("{\"every\": \"1h\", \"missed\": \"run_once\"}"), made.get("triggers").get(0).get("schedule"));
      Instant next = nextRunAt(made, 0);
      assertTrue(next.isAfter(before) && !next.isAfter(before.plus(HOUR)) && next.toEpochMilli() % HOUR.toMillis() == 0,
          "the next full hour: " + next);
      assertEquals(next, nextRunAt(http.get("/v1/workflows/report").json(), 0));

      Scheduler scheduler = scheduler(api);
      scheduler.round(next.minusMillis(1));
      assertEquals(0, runs(http, "report").size(), "not yet due");
      scheduler.round(next.plusMillis(10));
      scheduler.round(next.plusMillis(20));
      List<JsonNode> runs = runs(http, "report");
      assertEquals(1, runs.size(), "one run for the time, however often the scheduler looks");
      JsonNode run = runs.get(0);
      assertEquals("ops", run.get("project").asText());
      assertEquals(Json.tree("{\"region\": \"eu\"}"), run.get("inputs"));
      assertEquals("succeeded", run.get("status").asText(), "no steps: done at once");
      JsonNode fired = firstEvent(http, run.get("id").asText());
      assertEquals("schedule.fired", fired.get("type").asText(), fired::toString);
      assertEquals("schedule", fired.get("actor").asText());
      assertEquals(Json.tree("{\"trigger\": 0, \"scheduled_at\": \"" + Json.TIME.format(next) + "\"}"), fired.get("data"));
      assertEquals(next.plus(HOUR), nextRunAt(http.get("/v1/workflows/report").json(), 0));
      assertEquals(1, (int) api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM workflow_schedule WHERE "
          + "workspace_id = :ws AND last_run_id = :id AND last_run_at = :at").bind("ws", api.workspace)
          .bind("id", run.get("id").asText()).bind("at", next).mapTo(Integer.class).one()));

      scheduler.round(next.plus(HOUR).plusMillis(5));
      assertEquals(2, runs(http, "report").size(), "the next hour's run");
    });
  }

  @BothDatabases
  void after_downtime_missed_times_start_one_run_or_none(Api api) {
    api.test(http -> {
      Instant next = nextRunAt(put(http, "catch-up", "[{\"schedule\": {\"every\": \"1h\"}}]"), 0);
      put(http, "skip-missed", "[{\"schedule\": {\"every\": \"1h\", \"missed\": \"skip\"}}]");
      Instant back = next.plus(HOUR.multipliedBy(5)).plus(Duration.ofMinutes(5)); // six times missed
      scheduler(api).round(back);
      List<JsonNode> caughtUp = runs(http, "catch-up");
      assertEquals(1, caughtUp.size(), "run_once: one run for the times missed");
      assertEquals(Json.TIME.format(next.plus(HOUR.multipliedBy(5))),
          firstEvent(http, caughtUp.get(0).get("id").asText()).get("data").get("scheduled_at").asText(), "the latest of them");
      assertEquals(0, runs(http, "skip-missed").size(), "skip: none");
      Instant after = next.plus(HOUR.multipliedBy(6));
      assertEquals(after, nextRunAt(http.get("/v1/workflows/catch-up").json(), 0));
      assertEquals(after, nextRunAt(http.get("/v1/workflows/skip-missed").json(), 0));

      // Less than a minute late is not missed: skip runs it too.
      scheduler(api).round(after.plusSeconds(30));
      assertEquals(1, runs(http, "skip-missed").size());
    });
  }

  @BothDatabases
  void an_edit_takes_effect_for_the_next_time_and_a_removed_or_archived_schedule_starts_nothing(Api api) {
    api.test(http -> {
      Instant next = nextRunAt(put(http, "nightly", "[{\"schedule\": {\"every\": \"1h\"}}]"), 0);
      Http.Reply renamed = http.put("/v1/workflows/nightly", "{\"description\": \"renamed\", \"triggers\": "
          + "[{\"schedule\": {\"every\": \"1h\"}}]}");
      assertEquals(next, nextRunAt(renamed.json(), 0), "a put that keeps the schedule keeps its time");
      Instant twoHourly = nextRunAt(put(http, "nightly", "[{\"schedule\": {\"every\": \"2h\"}}]"), 0);
      assertEquals(0, twoHourly.toEpochMilli() % (2 * HOUR.toMillis()), "a changed schedule counts anew: " + twoHourly);

      JsonNode none = put(http, "nightly", "[]");
      assertEquals(0, none.get("triggers").size());
      Scheduler scheduler = scheduler(api);
      scheduler.round(twoHourly.plusSeconds(1));
      assertEquals(0, runs(http, "nightly").size(), "a removed schedule starts nothing");

      Instant again = nextRunAt(put(http, "nightly", "[{\"crm\": \"contacts\", \"on\": [\"created\"]}, "
          + "{\"schedule\": {\"cron\": \"0 9 * * *\", \"timezone\": \"Europe/Paris\"}}]"), 1);
      assertEquals(Json.tree("{\"crm\": \"contacts\", \"on\": [\"created\"], \"project\": \"crm\"}"),
          http.get("/v1/workflows/nightly").json().get("triggers").get(0), "a crm trigger shows no next time");
      Http.Reply archived = http.delete("/v1/workflows/nightly");
      assertEquals(200, archived.status(), archived::toString);
      assertTrue(archived.json().get("triggers").get(1).get("next_run_at").isNull(), archived::toString);
      scheduler.round(again.plusSeconds(1));
      assertEquals(0, runs(http, "nightly").size(), "an archived workflow starts nothing");
      Instant restored = nextRunAt(put(http, "nightly", "[{\"crm\": \"contacts\", \"on\": [\"created\"]}, "
          + "{\"schedule\": {\"cron\": \"0 9 * * *\", \"timezone\": \"Europe/Paris\"}}]"), 1);
      assertTrue(restored.isAfter(Instant.now()), "restored: scheduled from now on: " + restored);
    });
  }

  @BothDatabases
  void bad_schedules_are_400s_naming_the_field(Api api) {
    api.test(http -> {
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\": [{\"schedule\": {\"cron\": \"0 25 * * *\"}}]}"),
          400, "validation_failed", "triggers[0].schedule.cron");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\": [{\"crm\": \"contacts\", \"on\": [\"created\"]}, "
          + "{\"schedule\": {\"cron\": \"0 9 * * *\", \"timezone\": \"Paris\"}}]}"), 400, "validation_failed",
          "triggers[1].schedule.timezone");
      assertProblem(http.put("/v1/workflows/w", "{\"triggers\": [{\"schedule\": {\"every\": \"soon\"}}]}"),
          400, "validation_failed", "triggers[0].schedule.every");
      assertProblem(http.put("/v1/workflows/w", "{\"inputs_schema\": {\"type\": \"object\", \"required\": "
          + "[\"region\"]}, \"triggers\": [{\"schedule\": {\"every\": \"1h\"}, \"inputs\": {\"other\": 1}}]}"),
          400, "validation_failed", "triggers[0].inputs.region");
      assertEquals(404, http.get("/v1/workflows/w").status(), "nothing stored");
    });
  }

  /**
   * Two schedulers (two instances on PostgreSQL, each with its own pool and group commit; on H2 two
   * in one process) fire 40 schedules' three next times side by side: each time starts exactly one run.
   */
  @BothDatabases
  void two_schedulers_racing_start_each_time_once(Api api) throws Exception {
    int workflows = 40;
    api.test(http -> {
      Instant next = null;
      for (int i = 0; i < workflows; i++) {
        next = nextRunAt(put(http, "race-" + i, "[{\"schedule\": {\"every\": \"1h\"}}]"), 0);
      }
      Database second = api.database() == TestDatabase.POSTGRESQL
          ? Database.open(api.database().open().serverSettings().database()) : null;
      try {
        Scheduler a = scheduler(api);
        Services other = second == null ? null : Services.over(second, api.database().open().serverSettings(), () -> { });
        Scheduler b = other == null ? scheduler(api) : Scheduler.idle(second.jdbi(), second.committer(), other.starts());
        for (int round = 0; round < 3; round++) {
          Instant now = next.plus(HOUR.multipliedBy(round)).plusSeconds(1);
          CompletableFuture<Integer> aRound = CompletableFuture.supplyAsync(() -> a.round(now));
          CompletableFuture<Integer> bRound = CompletableFuture.supplyAsync(() -> b.round(now));
          aRound.get(60, TimeUnit.SECONDS);
          bRound.get(60, TimeUnit.SECONDS);
        }
      } finally {
        if (second != null) {
          second.close();
        }
      }
      Set<String> times = new HashSet<>();
      for (int i = 0; i < workflows; i++) {
        List<JsonNode> runs = runs(http, "race-" + i);
        assertEquals(3, runs.size(), "race-" + i);
        for (JsonNode run : runs) {
          times.add("race-" + i + " " + firstEvent(http, run.get("id").asText()).get("data").get("scheduled_at").asText());
        }
      }
      assertEquals(workflows * 3, times.size(), "three different times per workflow");
    });
  }

  @BothDatabases
  void a_running_scheduler_starts_runs_as_their_times_come(Api api) {
    api.test(http -> {
      put(http, "every-second", "[{\"schedule\": {\"every\": \"1s\"}}]");
      Database db = api.services().database();
      try (Scheduler running = Scheduler.start(db.jdbi(), db.committer(), api.services().starts(),
          Duration.ofMillis(50))) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (runs(http, "every-second").size() < 3) {
          assertTrue(System.nanoTime() < deadline, "3 runs within 20 s: " + runs(http, "every-second").size());
          Thread.sleep(50);
        }
      }
      put(http, "every-second", "[]"); // no more, for the tests that follow on this database
      List<JsonNode> runs = runs(http, "every-second");
      Set<String> times = new HashSet<>();
      for (JsonNode run : runs) {
        assertEquals("schedule", run.get("project").asText());
        times.add(firstEvent(http, run.get("id").asText()).get("data").get("scheduled_at").asText());
      }
      assertEquals(runs.size(), times.size(), "one run per second: " + times);
    });
  }
}
