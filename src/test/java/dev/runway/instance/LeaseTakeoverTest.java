package dev.runway.instance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.Scope;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.jdbi.v3.core.Handle;

/**
 * The leases instances hold, through the heartbeat: renewed while held, handed back in one commit
 * at the stop, and taken back from an instance that is gone (PostgreSQL: its liveness lock free;
 * H2: at the next start), never from one that lives.
 */
class LeaseTakeoverTest {
  private static final Duration LEASE = Duration.ofSeconds(1);
  private static final Duration BEAT = Duration.ofMillis(100);

  @BothDatabases
  void held_leases_are_renewed_while_held_shown_and_handed_back_at_the_stop(Api api) throws Exception {
    api.test(http -> assertEquals(201, http.post("/v1/webhook_endpoints", "{\"url\":\"https://hooks.example.com/in\","
        + "\"event_types\":[\"run.started\"]}").status()));
    List<String> runs = runs(api, 2);
    Heartbeat heartbeat = start(api, () -> { });
    String self = heartbeat.id();
    lease(api, runs, self, Time.now().plus(LEASE));
    // A webhook delivery claimed in a round of the dispatcher, and a CRM-triggered run request.
    Instant aMinute = Time.now().plusSeconds(60);
    String delivery = api.jdbi().withHandle(h -> h.createQuery("SELECT id FROM webhook_delivery WHERE workspace_id = :ws "
        + "AND next_attempt_at IS NOT NULL").bind("ws", api.workspace).mapTo(String.class).list()).get(0);
    api.jdbi().useHandle(h -> {
      h.createUpdate("UPDATE webhook_delivery SET lease_owner = :owner, lease_until = :until WHERE id = :id")
          .bind("owner", self + ":7").bind("until", aMinute).bind("id", delivery).execute();
      h.createUpdate("INSERT INTO run_request (id, workspace_id, targets, done, inputs, actor, created_at, lease_owner, "
          + "lease_until) VALUES ('rrq_1', :ws, '[]', 0, '{}', 'test', :now, :owner, :until)")
          .bind("ws", api.workspace).bind("now", Time.now()).bind("owner", self).bind("until", aMinute).execute();
    });
    Leases.Hold held = heartbeat.leases().hold(Leases.RUNS, runs.get(0), self);
    heartbeat.leases().hold(Leases.RUNS, runs.get(1), self);

    // Three leases' time later the held runs are still this instance's, their leases renewed by the beats.
    Thread.sleep(3 * LEASE.toMillis());
    for (String run : runs) {
      assertEquals(self, owner(api, run));
      assertTrue(until(api, run).isAfter(Time.now()), "the lease on " + run + " was renewed");
    }
    // /metrics shows the same, read from the database at the scrape.
    dev.runway.metrics.Metrics metrics = dev.runway.metrics.Metrics.prometheus();
    InstanceStatistics.watch(metrics, api.jdbi(), heartbeat.leases(), BEAT);
    String scraped = metrics.scrape(dev.runway.metrics.Metrics.contentType(null));
    assertTrue(scraped.contains("runway_instance_work_held{instance=\"" + self + "\",kind=\"runs\"} 2.0"), scraped);
    assertTrue(scraped.contains("runway_instance_work_held{instance=\"" + self + "\",kind=\"run_requests\"} 1.0"),
        scraped);
    assertTrue(scraped.contains("runway_takeovers_total{kind=\"runs\"} 0.0"), scraped);
    metrics.close();
    api.test(http -> {
      JsonNode shown = instance(http, api, self);
      assertEquals("running", shown.get("status").asText());
      assertEquals(2, shown.get("held").get("runs").asInt(), shown::toString);
      assertEquals(1, shown.get("held").get("webhook_deliveries").asInt(), shown::toString);
      assertEquals(1, shown.get("held").get("run_requests").asInt(), shown::toString);
    });

    // Let go: no longer renewed, the lease lapses by itself.
    heartbeat.leases().release(held);
    await(Duration.ofSeconds(10), () -> until(api, runs.get(0)).isBefore(Time.now()));
    assertTrue(until(api, runs.get(1)).isAfter(Time.now()));

    heartbeat.close();
    for (String run : runs) {
      assertNull(owner(api, run), "handed back at the stop: " + run);
      assertNull(until(api, run));
    }
    assertNull(api.jdbi().withHandle(h -> h.createQuery("SELECT lease_owner FROM webhook_delivery WHERE id = :id")
        .bind("id", delivery).mapTo(String.class).one()), "the delivery handed back");
    assertNull(api.jdbi().withHandle(h -> h.createQuery("SELECT lease_owner FROM run_request WHERE id = 'rrq_1'")
        .mapTo(String.class).one()), "the run request handed back");
    Instance stopped = registered(api, self);
    assertNotNull(stopped.stoppedAt());
    assertTrue(!heartbeat.leases().holds(held), "nothing held commits after the stop");
  }

  @BothDatabases
  void a_gone_instances_work_is_taken_back_at_once_and_a_live_ones_is_not(Api api) throws Exception {
    List<String> runs = runs(api, 4);
    boolean postgres = api.database() == TestDatabase.POSTGRESQL;
    Instant now = Time.now();
    long goneKey = ThreadLocalRandom.current().nextLong();
    long liveKey = ThreadLocalRandom.current().nextLong();
    Instance gone = new Instance(Ids.newId("ins"), "elsewhere", 1, "dev", now, now, null, null, postgres ? goneKey : null);
    Instance live = new Instance(Ids.newId("ins"), "elsewhere", 2, "dev", now, now, null, null, postgres ? liveKey : null);
    api.jdbi().useExtension(InstanceDao.class, dao -> {
      dao.insert(gone);
      dao.insert(live);
    });
    Instant anHour = now.plusSeconds(3600);
    lease(api, runs.subList(0, 2), gone.id(), anHour);
    lease(api, runs.subList(2, 4), live.id(), anHour);
    AtomicInteger woken = new AtomicInteger();

    if (!postgres) {
      // H2 serves one process: a start takes back every lease a crash left, and marks the others stopped.
      try (Heartbeat heartbeat = Heartbeat.start(api.jdbi(), BEAT, LEASE, false, true, woken::incrementAndGet)) {
        for (String run : runs) {
          assertNull(owner(api, run), run);
        }
        assertNotNull(registered(api, gone.id()).stoppedAt());
        assertNotNull(registered(api, live.id()).stoppedAt());
      }
      return;
    }
    // The live instance's lock is held by a session of its own, as its process would hold it.
    Handle liveSession = api.jdbi().open();
    try {
      assertTrue(liveSession.createQuery("SELECT pg_try_advisory_lock(:k)").bind("k", liveKey).mapTo(Boolean.class).one());
      try (Heartbeat heartbeat = start(api, woken::incrementAndGet)) {
        // At its start, before any beat: the gone instance's runs are free for any engine to claim.
        assertNull(owner(api, runs.get(0)));
        assertNull(owner(api, runs.get(1)));
        assertNotNull(registered(api, gone.id()).stoppedAt(), "the gone instance is marked stopped");
        assertEquals(2, heartbeat.leases().takeovers(Leases.RUNS));
        assertEquals(1, woken.get(), "told, so that an engine claims them at once");
        assertEquals(1, heartbeat.leases().takeovers("instance"));
        // Many beats later the live one still holds its runs.
        Thread.sleep(10 * BEAT.toMillis());
        assertEquals(live.id(), owner(api, runs.get(2)));
        assertEquals(live.id(), owner(api, runs.get(3)));
        assertNull(registered(api, live.id()).stoppedAt());

        // Its process dies: its session ends (the connection itself closed, not handed back to the pool),
        // and the next beat takes its work back.
        liveSession.getConnection().unwrap(java.sql.Connection.class).close();
        await(Duration.ofSeconds(10), () -> owner(api, runs.get(2)) == null && owner(api, runs.get(3)) == null);
        assertNotNull(registered(api, live.id()).stoppedAt());
        assertEquals(4, heartbeat.leases().takeovers(Leases.RUNS));
        assertEquals(2, heartbeat.leases().takeovers("instance"));
        dev.runway.metrics.Metrics metrics = dev.runway.metrics.Metrics.prometheus();
        InstanceStatistics.watch(metrics, api.jdbi(), heartbeat.leases(), BEAT);
        String scraped = metrics.scrape(dev.runway.metrics.Metrics.contentType(null));
        assertTrue(scraped.contains("runway_takeovers_total{kind=\"runs\"} 4.0"), scraped);
        assertTrue(scraped.contains("runway_takeovers_total{kind=\"instances\"} 2.0"), scraped);
        metrics.close();
      }
    } finally {
      try {
        liveSession.close();
      } catch (RuntimeException closedAlready) {
        // its connection was closed above, as a dead process's would be
      }
    }
  }

  private static Heartbeat start(Api api, Runnable workReturned) {
    return Heartbeat.start(api.jdbi(), BEAT, LEASE, api.database() == TestDatabase.POSTGRESQL, false, workReturned);
  }

  private static List<String> runs(Api api, int n) {
    api.workflowThatCalls("calls");
    List<String> ids = new ArrayList<>();
    api.test(http -> {
      for (int i = 0; i < n; i++) {
        Http.Reply started = http.post("/v1/workflows/calls/runs", "{\"project\":\"p\"}");
        assertEquals(200, started.status(), started.body());
        ids.add(Json.tree(started.body()).get("id").asText());
      }
    });
    return ids;
  }

  private static void lease(Api api, List<String> runs, String owner, Instant until) {
    api.jdbi().useHandle(h -> runs.forEach(id -> h.createUpdate(
        "UPDATE run SET lease_owner = :owner, lease_until = :until WHERE id = :id")
        .bind("owner", owner).bind("until", until).bind("id", id).execute()));
  }

  private static String owner(Api api, String run) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT lease_owner FROM run WHERE id = :id").bind("id", run)
        .mapTo(String.class).one());
  }

  private static Instant until(Api api, String run) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT lease_until FROM run WHERE id = :id").bind("id", run)
        .mapTo(Instant.class).one());
  }

  private static Instance registered(Api api, String id) {
    return api.jdbi().withExtension(InstanceDao.class, dao -> dao.newest(1000)).stream()
        .filter(i -> i.id().equals(id)).findFirst().orElseThrow();
  }

  private static JsonNode instance(Http http, Api api, String id) {
    Http.Reply listed = http.get("/v1/admin/instances?limit=1000", api.key(Scope.ADMIN));
    assertEquals(200, listed.status(), listed.body());
    for (JsonNode i : Json.tree(listed.body()).get("data")) {
      if (i.get("id").asText().equals(id)) {
        return i;
      }
    }
    throw new AssertionError("not listed: " + id + " in " + listed.body());
  }

  private static void await(Duration within, BooleanSupplier done) throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "not within " + within);
      Thread.sleep(20);
    }
  }
}
