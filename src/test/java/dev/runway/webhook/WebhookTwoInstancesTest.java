package dev.runway.webhook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static dev.runway.support.SharedPostgres.count;
import static dev.runway.support.SharedPostgres.longs;
import static dev.runway.support.SharedPostgres.strings;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.Runway;
import dev.runway.auth.Scope;
import dev.runway.config.Settings;
import dev.runway.core.Json;
import dev.runway.support.Http;
import dev.runway.support.SharedPostgres;
import dev.runway.support.WebhookReceiver;
import dev.runway.support.WebhookReceiver.Reply;
import java.security.SecureRandom;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Two instances on one PostgreSQL schema, each with its own webhook dispatcher, share the
 * deliveries of one slow, sometimes failing endpoint: every event is delivered, each attempt is
 * made by one instance (never two at once, never once more than the endpoint asked for), and both
 * instances make attempts. PostgreSQL only (H2 serves one process).
 */
class WebhookTwoInstancesTest {
  private static final int RUNS = 200;
  private static final String HOOK = "/hook";
  private static final Duration WAIT = Duration.ofSeconds(60);

  private Settings settings;

  @BeforeEach
  void requirePostgres() {
    Settings schema = SharedPostgres.freshSchemaOrSkip(getClass(), "the two-instance webhook tests");
    byte[] secretsKey = new byte[32];
    new SecureRandom().nextBytes(secretsKey);
    // As deployed: the instances share one secrets key (each signs with the endpoint's secret).
    settings = schema
        .with("secrets.key", Base64.getEncoder().encodeToString(secretsKey))
        .with("engine.http.allow_private_networks", "true")
        .with("webhooks.retry_base_ms", "100")
        .with("webhooks.poll_interval_ms", "100");
  }

  /** A quarter of the events: their first attempt is answered 500 (the second, 200). */
  private static boolean failsFirst(String webhookId) {
    return Math.floorMod(webhookId.hashCode(), 4) == 0;
  }

  @Test
  void two_instances_deliver_every_event_each_attempt_made_by_one_of_them() throws Exception {
    try (WebhookReceiver receiver = new WebhookReceiver();
         Runway a = Runway.start(settings);
         Runway b = Runway.start(settings);
         Connection db = SharedPostgres.connect(settings)) {
      // Slowish: 50-100 ms per answer, so attempts overlap and each instance has several in flight.
      receiver.answer(HOOK, (id, attempt) -> new Reply(attempt == 1 && failsFirst(id) ? 500 : 200, null,
          Duration.ofMillis(50 + Math.floorMod(id.hashCode() >> 2, 51))));
      String key = a.keys().create("hooks", "test", List.of(Scope.values()), null, null).key();
      Http first = Http.onPort(a.port(), key);
      Http second = Http.onPort(b.port(), key);
      Http.Reply put = first.put("/v1/workflows/w", "{\"requires_approval\":false,\"steps\":[]}");
      assertEquals(201, put.status(), put.body());
      Http.Reply made = second.post("/v1/webhook_endpoints",
          "{\"url\":\"" + receiver.url(HOOK) + "\",\"event_types\":[\"run.*\"]}");
      assertEquals(201, made.status(), made.body());
      String secret = Json.tree(made.body()).get("secret").asText();
      receiver.trust(secret);

      // Each run starts and succeeds in its start's commit: run.started and run.succeeded, stored
      // with their deliveries by the instance that took the start.
      List<String> runs = SharedPostgres.startRuns(List.of(first, second), "/v1/workflows/w/runs",
          "{\"project\":\"hooks\"}", RUNS, 4);

      Set<String> owners = ConcurrentHashMap.newKeySet();
      long until = System.nanoTime() + WAIT.toNanos();
      while (count(db, "SELECT count(*) FROM webhook_delivery WHERE status = 'succeeded'") < 2L * RUNS
          && System.nanoTime() < until) {
        // A lease's owner is the dispatcher's id and its round: the dispatchers attempting now.
        for (String owner : strings(db, "SELECT DISTINCT lease_owner FROM webhook_delivery "
            + "WHERE lease_owner IS NOT NULL")) {
          owners.add(owner.substring(0, owner.indexOf(':')));
        }
        Thread.sleep(10);
      }

      List<JsonNode> events = second.all("/v1/events?limit=1000");
      Map<String, Long> attemptsOf = longs(db, "SELECT event_id, attempts FROM webhook_delivery "
          + "WHERE status = 'succeeded'");
      Map<String, Long> attemptRows = longs(db, "SELECT d.event_id, count(*) FROM webhook_attempt a "
          + "JOIN webhook_delivery d ON d.id = a.delivery_id GROUP BY d.event_id");
      List<WebhookReceiver.Delivery> received = receiver.deliveries();
      Map<String, List<WebhookReceiver.Delivery>> receivedById = new HashMap<>();
      received.forEach(d -> receivedById.computeIfAbsent(d.webhookId(), k -> new ArrayList<>()).add(d));
      System.out.printf("two instances' webhooks on PostgreSQL: %d runs, %d events, %d deliveries succeeded, "
          + "%d requests to the receiver, %d dispatchers attempted, peak per webhook-id %d%n", runs.size(),
          events.size(), attemptsOf.size(), received.size(), owners.size(), receiver.peakPerWebhookId());

      assertEquals(2 * RUNS, events.size(), "events of the runs");
      List<String> faults = new ArrayList<>();
      for (JsonNode e : events) {
        String id = e.get("id").asText();
        long expected = failsFirst(id) ? 2 : 1;
        List<WebhookReceiver.Delivery> got = receivedById.getOrDefault(id, List.of());
        if (!attemptsOf.containsKey(id)) {
          faults.add(id + " (" + e.get("type").asText() + ") has no succeeded delivery");
        } else if (attemptsOf.get(id) != expected || attemptRows.getOrDefault(id, 0L) != expected
            || got.size() != expected) {
          faults.add(id + ": " + got.size() + " requests received, " + attemptsOf.get(id) + " attempts counted, "
              + attemptRows.get(id) + " recorded; " + expected + " expected");
        } else if (got.get(got.size() - 1).status() != 200 || !got.stream().allMatch(d -> d.signedBy().equals(
            List.of(secret)) && d.body().get("data").get("id").asText().equals(e.get("run_id").asText()))) {
          faults.add(id + " received as " + got);
        }
      }
      assertEquals(List.of(), faults.size() <= 20 ? faults : faults.subList(0, 20),
          "each event delivered, each attempt made once");
      assertEquals(events.size(), receivedById.size(), "the receiver got nothing but these events");
      assertEquals(1, receiver.peakPerWebhookId(), "no webhook-id attempted by two at once");
      assertEquals(2, owners.size(), "both instances' dispatchers made attempts: " + owners);
      assertEquals(0, count(db, "SELECT count(*) FROM webhook_delivery WHERE lease_owner IS NOT NULL "
          + "OR lease_until IS NOT NULL OR next_attempt_at IS NOT NULL"), "no delivery left leased or due");
    }
  }
}
