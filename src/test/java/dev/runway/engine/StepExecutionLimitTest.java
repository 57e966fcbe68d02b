package dev.runway.engine;

import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import java.time.Duration;

/**
 * At most 10,000 step executions per run, through HTTP on both databases: a foreach whose items ×
 * steps would pass it fails before any iteration starts, one that fits runs, and a nested foreach
 * is held to its iteration's share. The steps are delays of 0 seconds, which execute without a tool.
 */
class StepExecutionLimitTest {

  private static void put(Http http, String id, String body) {
    Http.Reply reply = http.put("/v1/workflows/" + id, body);
    assertTrue(reply.status() == 200 || reply.status() == 201, reply::toString);
  }

  /** A foreach over {@code inputs.items}, {@code inner} delays of 0 seconds per item. */
  private static String foreachOfDelays(int inner) {
    StringBuilder steps = new StringBuilder();
    for (int i = 0; i < inner; i++) {
      steps.append(i == 0 ? "" : ",").append("{\"type\":\"delay\",\"seconds\":0}");
    }
    return "{\"steps\":[{\"id\":\"each\",\"type\":\"foreach\",\"items\":\"inputs.items\",\"concurrency\":100,"
        + "\"steps\":[" + steps + "]}],\"output\":\"{{ size(steps.each.output) }}\"}";
  }

  private static String items(int count) {
    StringBuilder items = new StringBuilder("{\"items\":[");
    for (int i = 0; i < count; i++) {
      items.append(i == 0 ? "" : ",").append(i);
    }
    return items.append("]}").toString();
  }

  @BothDatabases
  void a_foreach_of_1000_items_of_11_steps_fails_with_too_many_steps_before_any_iteration_starts(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        put(http, "too-many", foreachOfDelays(11));
        String id = Runs.start(http, "too-many", "demo", items(1000)).get("id").asText();
        JsonNode run = awaitStatus(http, id, "failed");
        assertEquals("too_many_steps", run.get("error").get("code").asText(), run::toString);
        assertEquals("1000 items × 11 steps would take the run past 10000 step executions, the most a run makes "
            + "(counting those of its foreach and parallel iterations): 9999 are left for its iterations",
            run.get("error").get("message").asText());
        assertEquals(0, run.get("error").get("step").asInt());
        JsonNode each = run.get("steps").get(0);
        assertEquals("failed", each.get("status").asText());
        assertEquals("too_many_steps", each.get("error").get("code").asText());
        assertFalse(each.has("iterations"), each::toString);
        assertEquals(0, api.countRuns("parent_run_id = :a", id), "no iteration was started");
      });
    }
  }

  @BothDatabases
  void a_foreach_of_1000_items_of_9_steps_fits_and_counts_its_9000_executions(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        put(http, "fits", foreachOfDelays(9));
        String id = Runs.start(http, "fits", "demo", items(1000)).get("id").asText();
        JsonNode run = Runs.await(http, id, "ended within 60 s", r -> !r.get("status").asText().equals("running"),
            Duration.ofSeconds(60));
        assertEquals("succeeded", run.get("status").asText(), () -> run.toString().substring(0, 500));
        assertEquals(1000, run.get("output").asInt());
        JsonNode each = run.get("steps").get(0);
        assertEquals(9, each.get("iteration_budget").asInt(), "(10,000 - 1) / 1,000");
        assertEquals(9000, each.get("executions").asInt());
        assertEquals(1000, api.countRuns("parent_run_id = :a", id));
      });
    }
  }

  @BothDatabases
  void a_nested_foreach_past_its_iterations_share_fails_it_and_so_the_outer_step(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        // 100 outer iterations share 9,999: 99 each, of which the inner foreach leaves 98 for 200 items.
        put(http, "nested", """
            {"steps":[{"id":"outer","type":"foreach","items":"inputs.items","concurrency":1,
                       "steps":[{"id":"inner","type":"foreach","items":"inputs.items + inputs.items",
                                 "steps":[{"type":"delay","seconds":0}]}]}]}""");
        String id = Runs.start(http, "nested", "demo", items(100)).get("id").asText();
        JsonNode run = awaitStatus(http, id, "failed");
        assertEquals("iteration_failed", run.get("error").get("code").asText(), run::toString);
        assertTrue(run.get("error").get("message").asText().contains("too_many_steps"), run::toString);
        JsonNode outer = run.get("steps").get(0);
        assertEquals(99, outer.get("iteration_budget").asInt());
        assertEquals(1, outer.get("executions").asInt(), "the failed iteration started its inner foreach only");

        String first = outer.get("iterations").get(0).get("child_run_id").asText();
        JsonNode iteration = http.get("/v1/runs/" + first).json();
        assertEquals("failed", iteration.get("status").asText());
        assertEquals("too_many_steps", iteration.get("error").get("code").asText(), iteration::toString);
        assertEquals("200 items × 1 step would take this iteration past 99 step executions, its share of its run's "
            + "10000: 98 are left for its iterations", iteration.get("error").get("message").asText());
        assertEquals(0, api.countRuns("parent_run_id = :a", first), "the inner foreach started no iteration");
        assertEquals(1, api.countRuns("parent_run_id = :a", id), "no outer iteration started after the failure");
      });
    }
  }
}
