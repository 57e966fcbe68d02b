package dev.runway.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Ids;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A run's event ids sort in the order its events happened, so a webhook receiver can order by them. */
class EventOrderTest {
  @Test
  void many_event_ids_made_in_one_millisecond_increase() {
    long millis = System.currentTimeMillis() + 60_000;
    String previous = Ids.newId("evt", millis);
    for (int i = 0; i < 10_000; i++) {
      String next = Ids.newId("evt", millis);
      assertTrue(previous.compareTo(next) < 0, previous + " then " + next);
      previous = next;
    }
  }

  @BothDatabases
  void a_run_that_ends_in_its_start_lists_started_then_succeeded_with_increasing_ids(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      for (int i = 0; i < 20; i++) {
        Http.Reply started = http.startRun("hello", "demo");
        assertEquals(200, started.status(), started::toString);
        Http.Reply events = http.get("/v1/runs/" + started.json().get("id").asText() + "/events");
        assertEquals(200, events.status(), events::toString);
        List<String> types = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        for (JsonNode e : events.json().get("data")) {
          types.add(e.get("type").asText());
          ids.add(e.get("id").asText());
        }
        assertEquals("run.started", types.get(0), types::toString);
        assertEquals("run.succeeded", types.get(types.size() - 1), types::toString);
        List<String> sorted = new ArrayList<>(ids);
        sorted.sort(null);
        assertEquals(sorted, ids, "ids in the order the events were listed: " + types);
      }
    });
  }
}
