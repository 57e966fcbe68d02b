package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.LoadUntilKilled;
import dev.runway.support.TestDatabase;
import dev.runway.support.WebhookReceiver;
import dev.runway.support.WebhookReceiver.Reply;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Webhooks are at least once across kill -9: the packaged jar is killed twice in the middle of run
 * starts while its endpoint answers slowly with 503 (deliveries pending, attempts in flight),
 * restarted, and once the endpoint answers 200 every event of the feed reaches it, signed, with
 * exactly one delivery each, all succeeded.
 */
class WebhookKillNineIT {
  private static final int THREADS = 4;
  private static final int ROUNDS = 2;
  private static final int MIN_RUNS_PER_ROUND = 100;
  private static final String HOOK = "/hook";
  private static final String WEBHOOK_TIMEOUT_MS = "5000";
  /** From the last restart; on PostgreSQL a lease left by a kill runs out only after webhooks.timeout_ms + 30 s. */
  private static final Duration DELIVERED_WITHIN = Duration.ofSeconds(75);

  @BothDatabases
  void every_event_reaches_the_endpoint_after_kill_9_with_deliveries_pending_and_in_flight(TestDatabase db)
      throws Exception {
    long t0 = System.nanoTime();
    RunwayProcess process = RunwayProcess.onFreshDatabase(db, Map.of(
        "RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS", "true",
        "RUNWAY_WEBHOOKS_RETRY_BASE_MS", "100",
        "RUNWAY_WEBHOOKS_TIMEOUT_MS", WEBHOOK_TIMEOUT_MS,
        "RUNWAY_WEBHOOKS_POLL_INTERVAL_MS", "200"), "runway-webhook-kill-");
    String key = process.createKey("admin,runs:write,runs:read", "webhook-kill-test");
    List<String> acked = Collections.synchronizedList(new ArrayList<>());
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      // Slow failures while the load runs: deliveries pile up pending, retried every second (Retry-After),
      // with attempts in flight (16 at a time) whenever the kill comes.
      receiver.script(HOOK, new Reply(503, "1", Duration.ofMillis(200)));
      process.start();
      Http api = process.http(key);
      Http.Reply made = api.post("/v1/webhook_endpoints",
          "{\"url\":\"" + receiver.url(HOOK) + "\",\"event_types\":[\"run.*\"]}");
      assertEquals(201, made.status(), made::body);
      String endpoint = Json.tree(made.body()).get("id").asText();
      String secret = Json.tree(made.body()).get("secret").asText();
      receiver.trust(secret);

      int leasedAtKills = 0;
      for (int round = 1; round <= ROUNDS; round++) {
        if (round > 1) {
          process.start();
        }
        int atStart = acked.size();
        int attemptsAtStart = receiver.deliveries().size();
        LoadUntilKilled load = load(process.http(key), acked);
        // Kill once this round has acknowledged runs and attempted deliveries, after up to a second more.
        load.runUntil(() -> acked.size() >= atStart + MIN_RUNS_PER_ROUND
            && receiver.deliveries().size() > attemptsAtStart, 300, 1000);
        int beforeKill = acked.size();
        int attemptsBeforeKill = receiver.deliveries().size();
        process.kill9();
        load.stop();
        assertTrue(beforeKill >= atStart + MIN_RUNS_PER_ROUND, "round " + round + ": " + (beforeKill - atStart)
            + " runs acknowledged before the kill came\n" + process.log());
        assertTrue(attemptsBeforeKill > attemptsAtStart, "round " + round + ": deliveries attempted before the kill");
        if (db == TestDatabase.POSTGRESQL) {
          leasedAtKills += leased(process);
        }
      }

      process.start();
      Http after = process.http(key);
      assertTrue(anyPending(after, endpoint), "deliveries were still pending at the last kill");
      if (db == TestDatabase.H2) {
        // H2 serves one process: the restart drops the leases the kill left at once.
        assertTrue(process.loggedMatching("took back the work held before the last stop: \\d+ runs, [1-9]\\d* webhook "
            + "deliveries"), "a kill left attempts in flight, released at the restart");
      } else {
        assertTrue(leasedAtKills > 0, "a kill left attempts in flight (leased deliveries)");
      }
      receiver.script(HOOK, Reply.status(200));

      long until = System.nanoTime() + DELIVERED_WITHIN.toNanos();
      while (anyPending(after, endpoint) && System.nanoTime() < until) {
        Thread.sleep(250);
      }
      List<JsonNode> feed = after.all("/v1/events?limit=1000");
      List<JsonNode> deliveries = after.all("/v1/webhook_endpoints/" + endpoint + "/deliveries?limit=100");
      List<WebhookReceiver.Delivery> received = receiver.deliveries();
      System.out.printf("webhooks kill -9 x%d on %s: %d runs acknowledged, %d events, %d deliveries, %d requests "
          + "to the receiver (%d answered 2xx), %s; %d ms%n", ROUNDS, db.label(), acked.size(), feed.size(),
          deliveries.size(), received.size(), received.stream().filter(d -> d.status() / 100 == 2).count(),
          db == TestDatabase.H2 ? "leases released at restart" : leasedAtKills + " leased at the kills",
          (System.nanoTime() - t0) / 1_000_000);

      // 1. The delivery log: one delivery per event of the feed, each succeeded.
      Map<String, JsonNode> events = new HashMap<>();
      feed.forEach(e -> events.put(e.get("id").asText(), e));
      List<String> faults = new ArrayList<>();
      Set<String> delivered = new HashSet<>();
      for (JsonNode d : deliveries) {
        String event = d.get("event_id").asText();
        if (!delivered.add(event)) {
          faults.add("two deliveries of " + event);
        }
        if (!events.containsKey(event)) {
          faults.add("delivery " + d + " of an event not in the feed");
        }
        if (!d.get("status").asText().equals("succeeded")) {
          faults.add("delivery " + d + " did not succeed");
        }
      }
      events.keySet().stream().filter(e -> !delivered.contains(e)).forEach(e -> faults.add("no delivery of " + e));
      assertEquals(List.of(), first(faults), "the delivery log against the event feed (" + feed.size() + " events)");

      // 2. The receiver's view: every event of the feed answered 2xx at least once, signed with the
      //    endpoint's secret, carrying the event; nothing it got that is not an event of the feed.
      Map<String, WebhookReceiver.Delivery> ok = new HashMap<>();
      for (WebhookReceiver.Delivery d : received) {
        JsonNode event = events.get(d.webhookId());
        if (event == null) {
          faults.add("received " + d.webhookId() + " (" + d.type() + "), not an event of the feed");
        } else if (!d.signedBy().equals(List.of(secret)) || !d.body().get("id").asText().equals(d.webhookId())
            || !d.type().equals(event.get("type").asText())
            || !d.body().get("data").get("id").asText().equals(event.get("run_id").asText())) {
          faults.add("received " + d.webhookId() + " signed by " + d.signedBy().size() + " secrets as " + d.body()
              + " for the event " + event);
        } else if (d.status() / 100 == 2) {
          ok.put(d.webhookId(), d);
        }
      }
      events.keySet().stream().filter(e -> !ok.containsKey(e))
          .forEach(e -> faults.add("event " + e + " (" + events.get(e).get("type").asText() + ") never answered 2xx"));
      assertEquals(List.of(), first(faults), "what the receiver got against the event feed");

      // 3. Every acknowledged start's events (a run of hello starts and succeeds in one commit) arrived.
      Map<String, Set<String>> typesByRun = new HashMap<>();
      ok.values().forEach(d -> typesByRun.computeIfAbsent(d.body().get("data").get("id").asText(), r -> new HashSet<>())
          .add(d.type()));
      for (String run : List.copyOf(acked)) {
        if (!typesByRun.getOrDefault(run, Set.of()).equals(Set.of("run.started", "run.succeeded"))) {
          faults.add("acknowledged run " + run + " delivered " + typesByRun.get(run));
        }
      }
      assertEquals(List.of(), first(faults), "deliveries of the " + acked.size() + " acknowledged runs");
      assertTrue(acked.size() >= ROUNDS * MIN_RUNS_PER_ROUND);
    } finally {
      process.stop();
    }
  }

  /** Deliveries leased in the database of a killed server (PostgreSQL): attempts it had in flight. */
  private static int leased(RunwayProcess process) throws Exception {
    try (Connection c = DriverManager.getConnection(process.env("RUNWAY_DB_URL"), process.env("RUNWAY_DB_USER"),
        process.env("RUNWAY_DB_PASSWORD"));
         Statement s = c.createStatement();
         ResultSet r = s.executeQuery("SELECT count(*) FROM webhook_delivery WHERE lease_owner IS NOT NULL")) {
      r.next();
      return r.getInt(1);
    }
  }

  private static List<String> first(List<String> faults) {
    return faults.size() <= 20 ? List.copyOf(faults) : List.copyOf(faults.subList(0, 20));
  }

  /** THREADS clients starting runs of hello until stopped (or the server goes away), recording every 200's run id. */
  private static LoadUntilKilled load(Http http, List<String> acked) {
    Http load = http.timeout(Duration.ofSeconds(10));
    return new LoadUntilKilled(THREADS, client -> {
      Http.Reply r = load.post("/v1/workflows/hello/runs", "{\"project\":\"load-" + client + "\"}");
      if (r.status() == 200) {
        acked.add(Json.tree(r.body()).get("id").asText());
      }
    });
  }

  /** Whether any delivery to the endpoint is still pending. */
  private static boolean anyPending(Http api, String endpoint) {
    Http.Reply page = api.get("/v1/webhook_endpoints/" + endpoint + "/deliveries?status=pending&limit=1");
    assertEquals(200, page.status(), page::body);
    return page.json().get("data").size() > 0;
  }
}
