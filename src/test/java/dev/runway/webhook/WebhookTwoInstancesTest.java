package dev.runway.webhook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.Runway;
import dev.runway.auth.Scope;
import dev.runway.config.Settings;
import dev.runway.core.Json;
import dev.runway.support.TestDatabase;
import dev.runway.support.WebhookReceiver;
import dev.runway.support.WebhookReceiver.Reply;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Assumptions;
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
  private static final AtomicBoolean toldWhySkipped = new AtomicBoolean();

  private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private Settings settings;

  @BeforeEach
  void requirePostgres() {
    if (!TestDatabase.postgresReachable()) {
      String where = "PostgreSQL is not reachable at " + TestDatabase.PG_URL + " as " + TestDatabase.PG_USER;
      if (TestDatabase.PG_REQUIRED) {
        fail(where + ", and RUNWAY_TEST_PG_REQUIRED=true");
      }
      String why = "skipped: " + where + "; the two-instance webhook tests run on PostgreSQL only "
          + "(set RUNWAY_TEST_PG_URL, or RUNWAY_TEST_PG_REQUIRED=true to fail instead of skipping)";
      if (!toldWhySkipped.getAndSet(true)) {
        System.out.println("WebhookTwoInstancesTest " + why); // surefire does not show an abort's message
      }
      Assumptions.abort(why);
    }
    byte[] secretsKey = new byte[32];
    new SecureRandom().nextBytes(secretsKey);
    // As deployed: the instances share one secrets key (each signs with the endpoint's secret).
    settings = TestDatabase.POSTGRESQL.settingsForFreshDatabase()
        .with("http.port", "0")
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
         Connection db = connect()) {
      // Slowish: 50-100 ms per answer, so attempts overlap and each instance has several in flight.
      receiver.answer(HOOK, (id, attempt) -> new Reply(attempt == 1 && failsFirst(id) ? 500 : 200, null,
          Duration.ofMillis(50 + Math.floorMod(id.hashCode() >> 2, 51))));
      String key = a.keys().create("hooks", "test", List.of(Scope.values()), null, null).key();
      HttpResponse<String> put = send(a.port(), "PUT", "/v1/workflows/w", key,
          "{\"requires_approval\":false,\"steps\":[]}");
      assertEquals(201, put.statusCode(), put.body());
      HttpResponse<String> made = send(b.port(), "POST", "/v1/webhook_endpoints", key,
          "{\"url\":\"" + receiver.url(HOOK) + "\",\"event_types\":[\"run.*\"]}");
      assertEquals(201, made.statusCode(), made.body());
      String secret = Json.tree(made.body()).get("secret").asText();
      receiver.trust(secret);

      // Each run starts and succeeds in its start's commit: run.started and run.succeeded, stored
      // with their deliveries by the instance that took the start.
      List<String> runs = startRuns(new int[] {a.port(), b.port()}, key);

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

      List<JsonNode> events = events(b.port(), key);
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

  /** Starts RUNS runs of w, POSTing to the ports in turn, four at a time; their ids. */
  private List<String> startRuns(int[] ports, String key) throws Exception {
    ExecutorService posters = Executors.newFixedThreadPool(4);
    try {
      List<Future<String>> ids = new ArrayList<>();
      for (int i = 0; i < RUNS; i++) {
        int port = ports[i % ports.length];
        ids.add(posters.submit(() -> {
          HttpResponse<String> r = send(port, "POST", "/v1/workflows/w/runs", key, "{\"project\":\"hooks\"}");
          assertEquals(200, r.statusCode(), r.body());
          return Json.tree(r.body()).get("id").asText();
        }));
      }
      List<String> out = new ArrayList<>();
      for (Future<String> id : ids) {
        out.add(id.get(30, TimeUnit.SECONDS));
      }
      return out;
    } finally {
      posters.shutdownNow();
    }
  }

  /** The workspace's whole event feed, oldest first. */
  private List<JsonNode> events(int port, String key) throws Exception {
    List<JsonNode> events = new ArrayList<>();
    String after = null;
    boolean more;
    do {
      HttpResponse<String> r = send(port, "GET", "/v1/events?limit=1000"
          + (after == null ? "" : "&starting_after=" + after), key, null);
      assertEquals(200, r.statusCode(), r.body());
      JsonNode page = Json.tree(r.body());
      page.get("data").forEach(events::add);
      more = page.get("has_more").asBoolean();
      after = page.get("next_cursor").asText();
    } while (more);
    return events;
  }

  private HttpResponse<String> send(int port, String method, String path, String key, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30))
        .header("Authorization", "Bearer " + key);
    if (body != null) {
      b.header("Content-Type", "application/json");
    }
    b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private Connection connect() throws SQLException {
    Map<String, String> s = settings.asMap();
    return DriverManager.getConnection(s.get("db.url"), s.get("db.user"), s.get("db.password"));
  }

  private static long count(Connection db, String sql) throws SQLException {
    try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static List<String> strings(Connection db, String sql) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  /** A query's rows as a map of its first column to its second. */
  private static Map<String, Long> longs(Connection db, String sql) throws SQLException {
    Map<String, Long> out = new HashMap<>();
    try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      while (rs.next()) {
        out.put(rs.getString(1), rs.getLong(2));
      }
    }
    return out;
  }
}
