package dev.runway.webhook;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.Scope;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.WebhookReceiver;
import dev.runway.support.WebhookReceiver.Reply;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * Webhook endpoints and deliveries through HTTP, with a local receiver that checks each signature:
 * filters, retries keeping webhook-id, Retry-After, 410, disabling, rotation, the delivery log,
 * redelivery and recovery, a slow endpoint beside a fast one, bad input and isolation.
 */
class WebhooksTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  private static String endpoint(String url, String... types) {
    StringBuilder t = new StringBuilder();
    for (String type : types) {
      t.append(t.length() == 0 ? "" : ",").append('"').append(type).append('"');
    }
    return "{\"url\":\"" + url + "\",\"event_types\":[" + t + "],\"description\":\"test\"}";
  }

  /** Creates an endpoint, trusts its secret, returns its id. */
  private static String create(Http http, WebhookReceiver receiver, String path, String... types) {
    Http.Reply made = http.post("/v1/webhook_endpoints", endpoint(receiver.url(path), types));
    assertEquals(201, made.status(), made::toString);
    receiver.trust(made.json().get("secret").asText());
    return made.json().get("id").asText();
  }

  @BothDatabases
  void a_run_event_is_delivered_signed_with_the_run_record(Api api) {
    api.workflow("w", false);
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      api.testWebhooks(s -> s, http -> {
        Http.Reply made = http.post("/v1/webhook_endpoints", endpoint(receiver.url("/hook"), "run.succeeded"));
        assertEquals(201, made.status(), made::toString);
        JsonNode e = made.json();
        assertTrue(e.get("id").asText().startsWith("we_"));
        assertTrue(e.get("secret").asText().startsWith("whsec_"));
        assertEquals(List.of("run.succeeded"), List.of(e.get("event_types").get(0).asText()));
        assertTrue(e.get("enabled").asBoolean());
        receiver.trust(e.get("secret").asText());
        // The secret is shown only at creation, and stored encrypted.
        Http.Reply read = http.get("/v1/webhook_endpoints/" + e.get("id").asText());
        assertEquals(200, read.status());
        assertFalse(read.json().has("secret"), read::toString);
        String stored = api.jdbi().withHandle(h -> h.createQuery("SELECT secret FROM webhook_endpoint WHERE id = :id")
            .bind("id", e.get("id").asText()).mapTo(String.class).one());
        assertFalse(stored.contains(e.get("secret").asText().substring(6)));

        String run = http.startRun("w", "p").json().get("id").asText();
        List<WebhookReceiver.Delivery> got = receiver.await(WAIT, d -> !d.isEmpty(), "run.succeeded");
        WebhookReceiver.Delivery d = got.get(0);
        assertEquals("run.succeeded", d.type());
        assertEquals(List.of(e.get("secret").asText()), d.signedBy());
        assertEquals(d.webhookId(), d.body().get("id").asText());
        assertTrue(d.webhookId().startsWith("evt_"));
        assertEquals(run, d.body().get("data").get("id").asText());
        assertEquals("succeeded", d.body().get("data").get("status").asText());
        assertNotNull(d.body().get("created_at").asText());
        long skew = Math.abs(Instant.now().getEpochSecond() - Long.parseLong(d.timestamp()));
        assertTrue(skew < 60, "webhook-timestamp is now");
        // The event is the run's own event.
        JsonNode events = http.get("/v1/runs/" + run + "/events").json().get("data");
        boolean found = false;
        for (JsonNode ev : events) {
          found |= ev.get("id").asText().equals(d.webhookId()) && ev.get("type").asText().equals("run.succeeded");
        }
        assertTrue(found, "webhook-id is the id of the run.succeeded event");
        Thread.sleep(200);
        assertEquals(1, receiver.deliveries().size(), "run.started is not asked for");

        // The delivery log.
        String endpointId = e.get("id").asText();
        Http.Reply log = http.get("/v1/webhook_endpoints/" + endpointId + "/deliveries");
        assertEquals(200, log.status(), log::toString);
        JsonNode first = awaitStatus(http, endpointId, "succeeded").get(0);
        assertEquals(d.webhookId(), first.get("event_id").asText());
        assertEquals(1, first.get("attempt_count").asInt());
        Http.Reply one = http.get("/v1/webhook_deliveries/" + first.get("id").asText());
        assertEquals(200, one.status());
        assertEquals(200, one.json().get("attempts").get(0).get("response_status").asInt());
        assertTrue(one.json().get("attempts").get(0).get("response_body").asText().contains(d.webhookId()));
        assertEquals(run, one.json().get("payload").get("data").get("id").asText());
      });
    }
  }

  /** The endpoint's deliveries once they all have {@code status}. */
  private static JsonNode awaitStatus(Http http, String endpointId, String status) throws InterruptedException {
    long until = System.nanoTime() + WAIT.toNanos();
    JsonNode data = null;
    while (System.nanoTime() < until) {
      data = http.get("/v1/webhook_endpoints/" + endpointId + "/deliveries").json().get("data");
      boolean all = data.size() > 0;
      for (JsonNode d : data) {
        all &= d.get("status").asText().equals(status);
      }
      if (all) {
        return data;
      }
      Thread.sleep(20);
    }
    throw new AssertionError("deliveries did not all become " + status + ": " + data);
  }

  @BothDatabases
  void event_type_filters_pick_what_each_endpoint_gets(Api api) {
    api.workflow("w", false);
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      api.testWebhooks(s -> s, http -> {
        create(http, receiver, "/runs", "run.*");
        create(http, receiver, "/all", "*");
        create(http, receiver, "/crm", "crm.*");
        create(http, receiver, "/failed", "run.failed");
        http.startRun("w", "p");
        http.post("/v1/crm/contacts/records/sync", "{\"records\":[{\"external_id\":\"c1\",\"properties\":{\"a\":1}}]}");
        receiver.await(WAIT, d -> d.stream().filter(x -> x.path().equals("/all")).count() == 3, "three on /all");
        receiver.await(WAIT, d -> d.stream().filter(x -> x.path().equals("/runs")).count() == 2, "two on /runs");
        Thread.sleep(300);
        assertEquals(List.of("run.started", "run.succeeded"),
            receiver.deliveries("/runs").stream().map(WebhookReceiver.Delivery::type).sorted().toList());
        List<WebhookReceiver.Delivery> crm = receiver.deliveries("/crm");
        assertEquals(1, crm.size());
        JsonNode data = crm.get(0).body().get("data");
        assertEquals("crm.records.changed", crm.get(0).type());
        assertEquals("contacts", data.get("object_type").asText());
        assertEquals(1, data.get("summary").get("created").asInt());
        assertEquals("c1", data.get("records").get(0).get("external_id").asText());
        assertEquals(0, receiver.deliveries("/failed").size());
        for (WebhookReceiver.Delivery d : receiver.deliveries()) {
          assertEquals(1, d.signedBy().size(), "each delivery is signed with its endpoint's secret");
        }
      });
    }
  }

  @BothDatabases
  void failed_attempts_are_retried_with_the_same_webhook_id_honouring_retry_after(Api api) {
    api.workflow("w", false);
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      receiver.script("/flaky", Reply.status(500), new Reply(503, "1", Duration.ZERO), Reply.status(204));
      api.testWebhooks(s -> s, http -> {
        String id = create(http, receiver, "/flaky", "run.succeeded");
        http.startRun("w", "p");
        List<WebhookReceiver.Delivery> got = receiver.await(WAIT, d -> d.size() == 3, "three attempts");
        assertEquals(1, got.stream().map(WebhookReceiver.Delivery::webhookId).distinct().count());
        assertTrue(got.stream().allMatch(d -> d.signedBy().size() == 1));
        Duration afterRetryAfter = Duration.between(got.get(1).at(), got.get(2).at());
        assertTrue(afterRetryAfter.toMillis() >= 900, "Retry-After: 1 was honoured: " + afterRetryAfter);
        JsonNode delivery = awaitStatus(http, id, "succeeded").get(0);
        assertEquals(3, delivery.get("attempt_count").asInt());
        JsonNode detail = http.get("/v1/webhook_deliveries/" + delivery.get("id").asText()).json();
        assertEquals(List.of(500, 503, 204), List.of(detail.get("attempts").get(0).get("response_status").asInt(),
            detail.get("attempts").get(1).get("response_status").asInt(),
            detail.get("attempts").get(2).get("response_status").asInt()));
        assertEquals("answered 500", detail.get("attempts").get(0).get("error").asText());
        // The endpoint is not failing any more: a success cleared it.
        assertNull(api.jdbi().withHandle(h -> h.createQuery("SELECT failing_since FROM webhook_endpoint WHERE id = :id")
            .bind("id", id).mapTo(Instant.class).one()));
      });
    }
  }

  @BothDatabases
  void a_410_disables_the_endpoint_and_other_endpoints_hear_of_it(Api api) {
    api.workflow("w", false);
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      receiver.script("/gone", Reply.status(410));
      api.testWebhooks(s -> s, http -> {
        String gone = create(http, receiver, "/gone", "run.succeeded");
        create(http, receiver, "/watcher", "webhook_endpoint.*");
        http.startRun("w", "p");
        List<WebhookReceiver.Delivery> got = receiver.await(WAIT, d -> !d.stream()
            .filter(x -> x.path().equals("/watcher")).toList().isEmpty(), "webhook_endpoint.disabled");
        WebhookReceiver.Delivery told = got.stream().filter(x -> x.path().equals("/watcher")).findFirst().get();
        assertEquals("webhook_endpoint.disabled", told.type());
        assertEquals(gone, told.body().get("data").get("id").asText());
        assertEquals("gone", told.body().get("data").get("disabled_reason").asText());
        JsonNode endpoint = http.get("/v1/webhook_endpoints/" + gone).json();
        assertFalse(endpoint.get("enabled").asBoolean());
        assertEquals("gone", endpoint.get("disabled_reason").asText());
        assertEquals(1, receiver.deliveries("/gone").size(), "no retry after a 410");
        // A disabled endpoint gets nothing new, and cannot be tested until enabled again.
        http.startRun("w", "p");
        assertProblem(http.post("/v1/webhook_endpoints/" + gone + "/test", ""), 409, "endpoint_disabled");
        Http.Reply enabled = http.patch("/v1/webhook_endpoints/" + gone, "{\"enabled\": true}");
        assertEquals(200, enabled.status(), enabled::toString);
        assertTrue(enabled.json().get("enabled").asBoolean());
        assertTrue(enabled.json().get("disabled_reason").isNull());
        Thread.sleep(300);
        assertEquals(1, receiver.deliveries("/gone").size());
      });
    }
  }

  @BothDatabases
  void an_endpoint_failing_past_the_limit_is_disabled_and_recover_sends_its_failures_again(Api api) {
    api.workflow("w", false);
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      // Slow failures: both deliveries exist before the first failure disables the endpoint.
      receiver.script("/down", new Reply(500, null, Duration.ofMillis(500)));
      api.testWebhooks(s -> s.with("webhooks.disable_after_hours", "0"), http -> {
        Instant before = Instant.now().minusSeconds(1);
        String id = create(http, receiver, "/down", "run.succeeded");
        http.startRun("w", "p");
        http.startRun("w", "p");
        receiver.await(WAIT, d -> !d.isEmpty(), "a first attempt");
        JsonNode failed = awaitStatus(http, id, "failed");
        assertEquals(2, failed.size());
        JsonNode endpoint = http.get("/v1/webhook_endpoints/" + id).json();
        assertFalse(endpoint.get("enabled").asBoolean());
        assertEquals("failing", endpoint.get("disabled_reason").asText());
        Http.Reply filtered = http.get("/v1/webhook_endpoints/" + id + "/deliveries?status=succeeded");
        assertEquals(0, filtered.json().get("data").size());
        assertProblem(http.post("/v1/webhook_endpoints/" + id + "/recover", "{\"since\":\"" + before + "\"}"), 409,
            "endpoint_disabled");

        receiver.script("/down", Reply.status(200));
        http.patch("/v1/webhook_endpoints/" + id, "{\"enabled\": true}");
        Http.Reply recovered = http.post("/v1/webhook_endpoints/" + id + "/recover", "{\"since\":\"" + before + "\"}");
        assertEquals(202, recovered.status(), recovered::toString);
        assertEquals(2, recovered.json().get("recovered").asInt());
        awaitStatus(http, id, "succeeded");
        // Redeliver sends a delivered one once more, with the same webhook-id.
        String delivery = http.get("/v1/webhook_endpoints/" + id + "/deliveries").json().get("data").get(0)
            .get("id").asText();
        int seen = receiver.deliveries().size();
        Http.Reply again = http.post("/v1/webhook_deliveries/" + delivery + "/redeliver", "");
        assertEquals(202, again.status(), again::toString);
        List<WebhookReceiver.Delivery> got = receiver.await(WAIT, d -> d.size() == seen + 1, "a redelivery");
        assertEquals(again.json().get("event_id").asText(), got.get(seen).webhookId());
      });
    }
  }

  @BothDatabases
  void ended_deliveries_are_pruned_with_their_attempts_and_the_bodies_no_delivery_needs(Api api) {
    api.workflow("w", false);
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      receiver.script("/down", Reply.status(500));
      api.testWebhooks(s -> s, http -> {
        Instant made = Instant.now();
        String ok = create(http, receiver, "/hook", "run.started", "run.succeeded");
        String down = create(http, receiver, "/down", "run.succeeded");
        http.startRun("w", "p");
        JsonNode delivered = awaitStatus(http, ok, "succeeded");
        assertEquals(2, delivered.size());
        receiver.await(WAIT, d -> !d.isEmpty(), "an attempt to /down");
        JsonNode pending = http.get("/v1/webhook_endpoints/" + down + "/deliveries").json().get("data").get(0);
        assertEquals("pending", pending.get("status").asText());
        Thread.sleep(5);

        // Nothing of these ended before the cut: nothing of these goes (the count is of the
        // whole database, where other tests' deliveries may be).
        api.services().webhooks().prune(made.minusMillis(1));
        assertEquals(2, http.get("/v1/webhook_endpoints/" + ok + "/deliveries").json().get("data").size());

        assertTrue(api.services().webhooks().prune(Instant.now()) >= 2);
        for (JsonNode d : delivered) {
          String id = d.get("id").asText();
          assertEquals(404, http.get("/v1/webhook_deliveries/" + id).status());
          assertEquals(0, count(api, "SELECT COUNT(*) FROM webhook_attempt WHERE delivery_id = ?", id));
        }
        assertEquals(0, http.get("/v1/webhook_endpoints/" + ok + "/deliveries").json().get("data").size());
        // run.started's body went with its one delivery; run.succeeded's stays for the pending one.
        String started = delivered.get(0).get("event_type").asText().equals("run.started")
            ? delivered.get(0).get("event_id").asText() : delivered.get(1).get("event_id").asText();
        assertEquals(0, count(api, "SELECT COUNT(*) FROM webhook_message WHERE id = ?", started));
        Http.Reply still = http.get("/v1/webhook_deliveries/" + pending.get("id").asText());
        assertEquals(200, still.status(), still::toString);
        assertEquals("run.succeeded", still.json().get("payload").get("type").asText());
        assertTrue(still.json().get("attempts").size() >= 1, still::toString);
      });
    }
  }

  private static int count(Api api, String sql, String id) {
    return api.jdbi().withHandle(h -> h.select(sql, id).mapTo(Integer.class).one());
  }

  @BothDatabases
  void a_rotated_secret_signs_beside_the_new_one(Api api) {
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      api.testWebhooks(s -> s, http -> {
        Http.Reply made = http.post("/v1/webhook_endpoints", endpoint(receiver.url("/r"), "*"));
        String id = made.json().get("id").asText();
        String old = made.json().get("secret").asText();
        Http.Reply rotated = http.post("/v1/webhook_endpoints/" + id + "/rotate_secret", "");
        assertEquals(200, rotated.status(), rotated::toString);
        String fresh = rotated.json().get("secret").asText();
        assertTrue(fresh.startsWith("whsec_") && !fresh.equals(old));
        receiver.trust(old);
        receiver.trust(fresh);
        Http.Reply ping = http.post("/v1/webhook_endpoints/" + id + "/test", "");
        assertEquals(202, ping.status(), ping::toString);
        assertEquals("ping", ping.json().get("event_type").asText());
        WebhookReceiver.Delivery d = receiver.await(WAIT, x -> !x.isEmpty(), "ping").get(0);
        assertEquals("ping", d.type());
        assertEquals(2, d.signature().split(" ").length);
        assertEquals(List.of(old, fresh), d.signedBy());
        assertEquals(id, d.body().get("data").get("endpoint_id").asText());
      });
    }
  }

  @BothDatabases
  void a_slow_endpoint_does_not_delay_a_fast_one(Api api) {
    api.workflow("w", false);
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      receiver.script("/slow", new Reply(200, null, Duration.ofSeconds(3)));
      api.testWebhooks(s -> s.with("webhooks.max_in_flight_per_endpoint", "2"), http -> {
        create(http, receiver, "/slow", "run.succeeded");
        create(http, receiver, "/fast", "run.succeeded");
        for (int i = 0; i < 6; i++) {
          http.startRun("w", "p");
        }
        long start = System.nanoTime();
        receiver.await(WAIT, d -> d.stream().filter(x -> x.path().equals("/fast")).count() == 6, "six fast ones");
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(tookMs < 2500, "the fast endpoint got its six while the slow one held its two places: " + tookMs);
        assertTrue(receiver.deliveries("/slow").size() <= 2, "the slow endpoint has at most 2 in flight");
      });
    }
  }

  @BothDatabases
  void bad_input_is_a_problem_naming_the_field(Api api) {
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      api.testWebhooks(s -> s, http -> {
        assertProblem(http.post("/v1/webhook_endpoints", "{\"event_types\":[\"*\"]}"), 400, "validation_failed", "url");
        assertProblem(http.post("/v1/webhook_endpoints", "{\"url\":\"ftp://x.example\",\"event_types\":[\"*\"]}"),
            400, "validation_failed", "url");
        assertProblem(http.post("/v1/webhook_endpoints", "{\"url\":\"https://u:p@x.example\",\"event_types\":[\"*\"]}"),
            400, "validation_failed", "url");
        assertProblem(http.post("/v1/webhook_endpoints", "{\"url\":\"https://x.example\"}"), 400, "validation_failed",
            "event_types");
        assertProblem(http.post("/v1/webhook_endpoints", "{\"url\":\"https://x.example\",\"event_types\":[]}"), 400,
            "validation_failed", "event_types");
        assertProblem(http.post("/v1/webhook_endpoints", "{\"url\":\"https://x.example\",\"event_types\":[\"run.\"]}"),
            400, "validation_failed", "event_types[0]");
        assertProblem(http.post("/v1/webhook_endpoints", "{\"url\":\"https://x.example\",\"event_types\":[\"*\"],"
            + "\"secret\":\"mine\"}"), 400, "unknown_parameter", "secret");
        assertProblem(http.post("/v1/webhook_endpoints", "[1]"), 400, "invalid_json");
        String id = create(http, receiver, "/x", "*");
        assertProblem(http.patch("/v1/webhook_endpoints/" + id, "{\"enabled\":\"yes\"}"), 400, "validation_failed", "enabled");
        assertProblem(http.post("/v1/webhook_endpoints/" + id + "/recover", "{\"since\":\"yesterday\"}"), 400,
            "validation_failed", "since");
        assertProblem(http.get("/v1/webhook_endpoints/" + id + "/deliveries?status=lost"), 400, "validation_failed",
            "status");
        assertProblem(http.get("/v1/webhook_endpoints/we_nope"), 404, "webhook_endpoint_not_found");
        assertProblem(http.get("/v1/webhook_deliveries/del_nope"), 404, "webhook_delivery_not_found");
      });
    }
  }

  @BothDatabases
  void private_addresses_are_refused_unless_allowed(Api api) {
    api.testWebhooks(s -> s.with("engine.http.allow_private_networks", "false"), http -> {
      for (String url : List.of("http://127.0.0.1:9/x", "http://localhost/x", "http://10.1.2.3/x", "http://[::1]/x",
          "http://169.254.169.254/latest")) {
        assertProblem(http.post("/v1/webhook_endpoints", "{\"url\":\"" + url + "\",\"event_types\":[\"*\"]}"), 400,
            "validation_failed", "url");
      }
      assertEquals(201, http.post("/v1/webhook_endpoints",
          "{\"url\":\"https://hooks.example.com/x\",\"event_types\":[\"*\"]}").status());
    });
  }

  @BothDatabases
  void another_workspace_and_other_scopes_see_nothing(Api api) {
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      api.testWebhooks(s -> s, http -> {
        String id = create(http, receiver, "/x", "*");
        String ping = http.post("/v1/webhook_endpoints/" + id + "/test", "").json().get("id").asText();
        String other = api.keyIn(Api.newWorkspaceId(), null, Scope.ADMIN);
        assertProblem(http.get("/v1/webhook_endpoints/" + id, other), 404, "webhook_endpoint_not_found");
        assertProblem(http.get("/v1/webhook_deliveries/" + ping, other), 404, "webhook_delivery_not_found");
        assertProblem(http.post("/v1/webhook_deliveries/" + ping + "/redeliver", other, ""), 404,
            "webhook_delivery_not_found");
        assertEquals(0, http.get("/v1/webhook_endpoints", other).json().get("data").size());
        assertProblem(http.send("DELETE", "/v1/webhook_endpoints/" + id, other, null, null), 404,
            "webhook_endpoint_not_found");
        String reader = api.key(Scope.RUNS_READ);
        assertProblem(http.get("/v1/webhook_endpoints", reader), 403, "insufficient_scope");
        String projectAdmin = api.keyIn(api.workspace, List.of("p"), Scope.ADMIN);
        assertProblem(http.get("/v1/webhook_endpoints", projectAdmin), 403, "project_forbidden");

        assertEquals(1, http.get("/v1/webhook_endpoints").json().get("data").size());
        Http.Reply deleted = http.delete("/v1/webhook_endpoints/" + id);
        assertEquals(200, deleted.status());
        assertEquals(Map.of("id", id, "deleted", true), api.json(deleted.body()).properties().stream()
            .collect(java.util.stream.Collectors.toMap(Map.Entry::getKey, e -> e.getValue().isBoolean()
                ? (Object) e.getValue().asBoolean() : e.getValue().asText())));
        assertProblem(http.get("/v1/webhook_endpoints/" + id), 404, "webhook_endpoint_not_found");
        assertEquals(0, (int) api.jdbi().withHandle(h -> h.createQuery(
            "SELECT COUNT(*) FROM webhook_delivery WHERE endpoint_id = :id").bind("id", id).mapTo(Integer.class).one()));
      });
    }
  }
}
