package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.config.Settings;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.SharedPostgres;
import dev.runway.support.TempFiles;
import dev.runway.support.TestDatabase;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

/**
 * Schedules across kill -9: the packaged jar fires 10 schedules every second and is killed at
 * random moments (firings in flight) three times, restarted each time at once; and two instances on
 * PostgreSQL fire them side by side while one is killed again and again. Every second from a
 * schedule's first run to its last has exactly one run: none twice (a firing and its run are one
 * commit, conditional on the time read), none lost (times missed by less than a minute are run
 * after the restart).
 */
class ScheduleKillNineIT {
  private static final int WORKFLOWS = 10;

  @BothDatabases
  void each_time_of_a_schedule_starts_one_run_across_kill_9(TestDatabase db) throws Exception {
    RunwayProcess server = RunwayProcess.onFreshDatabase(db, Map.of("RUNWAY_ENGINE_POLL_INTERVAL_MS", "100"),
        "runway-schedule-kill-");
    String key = server.createKey("runs:write,runs:read,workflows:write", "schedules");
    try {
      server.start();
      putSchedules(server.http(key), "{\"every\": \"1s\"}");
      for (int round = 0; round < 3; round++) {
        Thread.sleep(1500 + ThreadLocalRandom.current().nextInt(1500));
        server.kill9();
        server.start();
      }
      Thread.sleep(2500); // the times missed while it was down, then a couple more
      int total = checkEachTimeOnce(server.http(key));
      System.out.printf("schedules kill -9 x3 on %s: %d runs of %d schedules every second, each time once%n",
          db.label(), total, WORKFLOWS);
    } finally {
      server.stop();
    }
  }

  /**
   * Two instances on one PostgreSQL fire the same schedules side by side while one of them is killed
   * -9 and restarted three times: still one run per time, none lost (the other fires alone meanwhile).
   */
  @Test
  void two_instances_fire_each_time_once_while_one_is_killed_again_and_again() throws Exception {
    Settings db = SharedPostgres.freshSchemaOrSkip(ScheduleKillNineIT.class, "two instances' schedules");
    Map<String, String> env = new HashMap<>(Map.of("RUNWAY_DB_URL", db.asMap().get("db.url"),
        "RUNWAY_DB_USER", db.asMap().get("db.user"), "RUNWAY_DB_PASSWORD", db.asMap().get("db.password"),
        "RUNWAY_SECRETS_KEY_FILE", db.asMap().get("secrets.key_file"), "RUNWAY_ENGINE_POLL_INTERVAL_MS", "100"));
    RunwayProcess a = new RunwayProcess(env, TempFiles.dir("runway-schedule-a-"));
    RunwayProcess b = new RunwayProcess(env, TempFiles.dir("runway-schedule-b-"));
    try {
      a.start();
      b.start();
      String key = a.createKey("runs:write,runs:read,workflows:write", "schedules");
      putSchedules(a.http(key), "{\"every\": \"1s\"}");
      for (int round = 0; round < 3; round++) {
        Thread.sleep(1500 + ThreadLocalRandom.current().nextInt(1500));
        a.kill9();
        Thread.sleep(ThreadLocalRandom.current().nextInt(1000));
        a.start();
      }
      Thread.sleep(2000);
      int total = checkEachTimeOnce(b.http(key));
      System.out.printf("schedules on two instances, one killed -9 x3: %d runs of %d schedules every second, "
          + "each time once%n", total, WORKFLOWS);
    } finally {
      a.stop();
      b.stop();
    }
  }

  private static void putSchedules(Http api, String schedule) {
    for (int i = 0; i < WORKFLOWS; i++) {
      Http.Reply put = api.put("/v1/workflows/tick-" + i, "{\"triggers\": [{\"schedule\": " + schedule + "}]}");
      assertEquals(201, put.status(), put::toString);
    }
  }

  /**
   * Ends the schedules, then checks that every second from each one's first run to its last has
   * exactly one run (read from each run's schedule.fired event); returns how many runs there were.
   */
  private static int checkEachTimeOnce(Http api) {
    for (int i = 0; i < WORKFLOWS; i++) {
      api.put("/v1/workflows/tick-" + i, "{\"triggers\": []}"); // no more times
    }
    int total = 0;
    for (int i = 0; i < WORKFLOWS; i++) {
      TreeMap<Instant, Integer> times = new TreeMap<>();
      for (JsonNode run : runs(api, "tick-" + i)) {
        JsonNode fired = api.get("/v1/runs/" + run.get("id").asText() + "/events").json().get("data").get(0);
        assertEquals("schedule.fired", fired.get("type").asText(), fired::toString);
        times.merge(Instant.parse(fired.get("data").get("scheduled_at").asText()), 1, Integer::sum);
      }
      assertTrue(times.size() >= 5, "tick-" + i + " ran at " + times.keySet());
      List<Instant> twice = times.entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey).toList();
      assertEquals(List.of(), twice, "tick-" + i + ": times that started two runs");
      List<Instant> lost = new ArrayList<>();
      for (Instant t = times.firstKey(); t.isBefore(times.lastKey()); t = t.plusSeconds(1)) {
        if (!times.containsKey(t)) {
          lost.add(t);
        }
      }
      assertEquals(List.of(), lost, "tick-" + i + ": times without a run");
      total += times.size();
    }
    return total;
  }

  private static List<JsonNode> runs(Http api, String workflow) {
    List<JsonNode> runs = new ArrayList<>();
    String after = null;
    while (true) {
      JsonNode page = api.get("/v1/runs?limit=100&workflow=" + workflow + (after == null ? "" : "&starting_after=" + after))
          .json();
      page.get("data").forEach(runs::add);
      if (!page.get("has_more").asBoolean()) {
        return runs;
      }
      after = page.get("next_cursor").asText();
    }
  }
}
