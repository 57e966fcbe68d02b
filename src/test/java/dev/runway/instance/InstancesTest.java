package dev.runway.instance;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.Runway;
import dev.runway.ServerSettings;
import dev.runway.auth.Scope;
import dev.runway.config.Settings;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.Database;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The instance registry: each instance registers, beats and records its stop; GET /v1/admin/instances shows them. */
class InstancesTest {

  @BothDatabases
  void the_list_shows_running_stopping_stopped_and_silent_instances_to_admin_keys_only(Api api) {
    Instant now = Time.now();
    Instance running = instance(Ids.newId("ins"), now.minusSeconds(60), now, null, null);
    Instance stopping = instance(Ids.newId("ins"), now.minusSeconds(50), now, now, null);
    Instance stopped = instance(Ids.newId("ins"), now.minusSeconds(40), now.minusSeconds(5), now.minusSeconds(6),
        now.minusSeconds(5));
    Instance silent = instance(Ids.newId("ins"), now.minusSeconds(30), now.minusSeconds(60), null, null);
    api.jdbi().useExtension(InstanceDao.class, dao -> List.of(running, stopping, stopped, silent).forEach(dao::insert));

    api.test(http -> {
      Http.Reply listed = http.get("/v1/admin/instances?limit=1000", api.key(Scope.ADMIN));
      assertEquals(200, listed.status(), listed.body());
      assertTrue(listed.header("Content-Type").startsWith("application/json"));
      Map<String, JsonNode> byId = new HashMap<>();
      JsonNode page = Json.tree(listed.body());
      page.get("data").forEach(i -> byId.put(i.get("id").asText(), i));
      assertEquals("running", byId.get(running.id()).get("status").asText());
      assertEquals("stopping", byId.get(stopping.id()).get("status").asText());
      assertEquals("stopped", byId.get(stopped.id()).get("status").asText());
      assertEquals("silent", byId.get(silent.id()).get("status").asText());
      JsonNode shown = byId.get(stopped.id());
      assertEquals("runway-test", shown.get("host").asText());
      assertEquals(4242, shown.get("pid").asLong());
      assertEquals(Json.TIME.format(stopped.stoppedAt()), shown.get("stopped_at").asText());
      assertTrue(byId.get(silent.id()).get("heartbeat_age_ms").asLong() >= 60_000);
      assertTrue(page.get("next_cursor").isNull());

      assertProblem(http.get("/v1/admin/instances", api.key(Scope.RUNS_READ)), 403, "insufficient_scope");
      assertProblem(http.get("/v1/admin/instances?limit=0", api.key(Scope.ADMIN)), 400, "validation_failed");
      assertProblem(http.get("/v1/admin/instances?cursor=x", api.key(Scope.ADMIN)), 400, "unknown_parameter");
      Http.Reply one = http.get("/v1/admin/instances?limit=1", api.key(Scope.ADMIN));
      assertEquals(1, Json.tree(one.body()).get("data").size());
      assertTrue(Json.tree(one.body()).get("has_more").asBoolean());
    });
  }

  @BothDatabases
  void a_started_instance_registers_beats_and_records_its_stop(TestDatabase db) throws Exception {
    Settings settings = db.settingsForFreshDatabase().with("instances.heartbeat_ms", "100");
    String id;
    try (Runway runway = Runway.start(settings)) {
      String key = runway.keys().create("default", "ops", List.of(Scope.ADMIN), null, null).key();
      Http http = Http.onPort(runway.port(), key);
      JsonNode self = only(http);
      id = self.get("id").asText();
      assertEquals(ProcessHandle.current().pid(), self.get("pid").asLong());
      assertEquals("running", self.get("status").asText());
      assertTrue(self.get("stopping_at").isNull());
      // Beats come every 100 ms: within 10 s the heartbeat has moved on from the start, however busy the machine.
      Instant deadline = Instant.now().plusSeconds(10);
      while (self.get("heartbeat_at").asText().equals(self.get("started_at").asText())
          && Instant.now().isBefore(deadline)) {
        Thread.sleep(20);
        self = only(http);
      }
      assertTrue(Instant.parse(self.get("heartbeat_at").asText()).isAfter(Instant.parse(self.get("started_at").asText())),
          "no heartbeat within 10 s: " + self);
    }
    try (Database database = Database.open(ServerSettings.from(settings).database())) {
      Instance after = database.jdbi().withExtension(InstanceDao.class, dao -> dao.newest(10)).stream()
          .filter(i -> i.id().equals(id)).findFirst().orElseThrow();
      assertNotNull(after.stoppingAt());
      assertNotNull(after.stoppedAt());
      assertTrue(!after.stoppedAt().isBefore(after.stoppingAt()));
    }
  }

  private static JsonNode only(Http http) {
    Http.Reply listed = http.get("/v1/admin/instances");
    assertEquals(200, listed.status(), listed.body());
    JsonNode data = Json.tree(listed.body()).get("data");
    assertEquals(1, data.size(), listed.body());
    return data.get(0);
  }

  private static Instance instance(String id, Instant started, Instant beat, Instant stopping, Instant stopped) {
    return new Instance(id, "runway-test", 4242, "dev", started, beat, stopping, stopped, null);
  }

}
