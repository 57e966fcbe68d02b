package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Schedules across kill -9: the packaged jar fires 10 schedules every second and is killed at
 * random moments (firings in flight) three times, restarted each time at once. Every second from a
 * schedule's first run to its last has exactly one run: none twice (a firing and its run are one
 * commit), none lost (times missed by less than a minute are run after the restart).
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
      Http api = server.http(key);
      for (int i = 0; i < WORKFLOWS; i++) {
        Http.Reply put = api.put("/v1/workflows/tick-" + i, "{\"triggers\": [{\"schedule\": {\"every\": \"1s\"}}]}");
        assertEquals(201, put.status(), put::toString);
      }
      for (int round = 0; round < 3; round++) {
        Thread.sleep(1500 + ThreadLocalRandom.current().nextInt(1500));
        server.kill9();
        server.start();
      }
      Thread.sleep(2500); // the times missed while it was down, then a couple more
      api = server.http(key);
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
      System.out.printf("schedules kill -9 x3 on %s: %d runs of %d schedules every second, each time once%n",
          db.label(), total, WORKFLOWS);
    } finally {
      server.stop();
    }
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
