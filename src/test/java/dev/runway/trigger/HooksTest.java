package dev.runway.trigger;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Inbound webhooks through HTTP: each webhook trigger gets a URL; a delivery with a valid
 * signature (Standard Webhooks, GitHub, Stripe) starts one run with the body and chosen headers as
 * inputs; bad, missing and expired signatures are 401 and start nothing; a sender's retry and
 * concurrent copies of one delivery start one run; form bodies, content types, body size, the rate
 * limit per hook, rotation, removal, archiving and unknown hooks.
 */
class HooksTest {
  private static final String WHSEC = "whsec_" + Base64.getEncoder().encodeToString("a key of 24 bytes exactly".getBytes(StandardCharsets.UTF_8));

  private static JsonNode put(Http http, String id, String triggers) {
    Http.Reply put = http.put("/v1/workflows/" + id, "{\"triggers\": " + triggers + "}");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
    return put.json();
  }

  /** The path of trigger {@code index}'s hook URL in a workflow as the API shows it. */
  private static String hookPath(JsonNode workflow, int index) {
    return URI.create(workflow.get("triggers").get(index).get("hook_url").asText()).getPath();
  }

  private static void secret(Http http, String name, String value) {
    Http.Reply put = http.put("/v1/secrets/" + name, "{\"value\": \"" + value + "\"}");
    assertTrue(put.status() == 200 || put.status() == 201, put::toString);
  }

  private static Http.Reply deliver(Http http, String path, String body, String... headers) {
    return http.send("POST", path, null, body, "application/json", headers);
  }

  private static List<JsonNode> runs(Http http, String workflow) {
    List<JsonNode> runs = new ArrayList<>();
    http.get("/v1/runs?limit=100&workflow=" + workflow).json().get("data").forEach(runs::add);
    return runs;
  }

  static byte[] hmac(byte[] key, String text) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(text.getBytes(StandardCharsets.UTF_8));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static String[] standardHeaders(String secret, String id, long timestamp, String body) {
    byte[] key = Base64.getDecoder().decode(secret.substring("whsec_".length()));
    String signature = Base64.getEncoder().encodeToString(hmac(key, id + "." + timestamp + "." + body));
    return new String[] {"webhook-id", id, "webhook-timestamp", Long.toString(timestamp), "webhook-signature",
        "v1,bm90IHRoaXMgb25l v1," + signature};
  }

  static String stripeHeader(String secret, long timestamp, String body) {
    return "t=" + timestamp + ",v1=" + HexFormat.of().formatHex(hmac(secret.getBytes(StandardCharsets.UTF_8),
        timestamp + "." + body)) + ",v0=unused";
  }

  private static long now() {
    return System.currentTimeMillis() / 1000;
  }

  @BothDatabases
  void a_webhook_trigger_gets_a_url_and_each_delivery_starts_a_run_with_its_body_and_headers(Api api) {
    api.test(http -> {
      JsonNode made = put(http, "inbound", "[{\"webhook\": {\"verify\": \"none\", \"headers\": [\"X-Source\"]}}]");
      JsonNode trigger = made.get("triggers").get(0);
      assertEquals(Json.tree("{\"verify\": \"none\", \"headers\": [\"x-source\"]}"), trigger.get("webhook"));
      assertEquals("hooks", trigger.get("project").asText());
      String path = hookPath(made, 0);
      assertTrue(path.matches("/hooks/hook_[a-z2-7]{32}"), path);
      assertEquals(trigger.get("hook_url"), http.get("/v1/workflows/inbound").json().get("triggers").get(0).get("hook_url"));
      assertEquals(trigger.get("hook_url"), put(http, "inbound", "[{\"webhook\": {\"verify\": \"none\", \"headers\": "
          + "[\"x-source\"]}, \"project\": \"other\"}]").get("triggers").get(0).get("hook_url"), "a put keeps the URL");

      Http.Reply accepted = deliver(http, path, "{\"order\": 42}", "X-Source", "shop", "X-Other", "dropped");
      assertEquals(202, accepted.status(), accepted::toString);
      assertFalse(accepted.json().get("duplicate").asBoolean());
      String runId = accepted.json().get("run_id").asText();
      JsonNode run = http.get("/v1/runs/" + runId).json();
      assertEquals("inbound", run.get("workflow").asText());
      assertEquals("other", run.get("project").asText());
      assertEquals(Json.tree("{\"body\": {\"order\": 42}, \"headers\": {\"x-source\": \"shop\"}}"), run.get("inputs"));
      JsonNode first = http.get("/v1/runs/" + runId + "/events").json().get("data").get(0);
      assertEquals("hook.received", first.get("type").asText(), first::toString);
      assertEquals("hook", first.get("actor").asText());
      assertEquals(Json.tree("{\"trigger\": 0, \"delivery_id\": null}"), first.get("data"));

      assertEquals(202, deliver(http, path, "[1, 2]").status(), "without a delivery id each delivery is a run");
      assertEquals(2, runs(http, "inbound").size());
      // The hook id is the URL's credential: stored only as its hash and sealed.
      String hookId = path.substring("/hooks/".length());
      assertEquals(0, (int) api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM workflow_hook WHERE "
          + "id_sealed LIKE :id OR id_hash = :id").bind("id", "%" + hookId + "%").mapTo(Integer.class).one()));
      assertEquals(1, (int) api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM workflow_hook WHERE "
          + "workspace_id = :ws AND id_hash = :hash").bind("ws", api.workspace)
          .bind("hash", dev.runway.core.Sha256.hex(hookId)).mapTo(Integer.class).one()));
    });
  }

  @BothDatabases
  void standard_webhooks_signatures_valid_invalid_missing_expired_and_replayed(Api api) {
    api.test(http -> {
      secret(http, "SW_SECRET", WHSEC);
      String path = hookPath(put(http, "sw", "[{\"webhook\": {\"verify\": \"standard_webhooks\", \"secret\": "
          + "\"SW_SECRET\"}}]"), 0);
      String body = "{\"type\": \"invoice.paid\"}";
      Http.Reply first = deliver(http, path, body, standardHeaders(WHSEC, "msg_1", now(), body));
      assertEquals(202, first.status(), first::toString);
      JsonNode run = http.get("/v1/runs/" + first.json().get("run_id").asText()).json();
      assertEquals("msg_1", run.get("inputs").get("headers").get("webhook-id").asText());
      assertEquals("msg_1", http.get("/v1/runs/" + run.get("id").asText() + "/events").json().get("data").get(0)
          .get("data").get("delivery_id").asText());

      Http.Reply replay = deliver(http, path, body, standardHeaders(WHSEC, "msg_1", now(), body));
      assertEquals(202, replay.status());
      assertEquals(first.json().get("run_id"), replay.json().get("run_id"), "a retry gets the first run");
      assertTrue(replay.json().get("duplicate").asBoolean());

      String otherKey = "whsec_" + Base64.getEncoder().encodeToString("another key".getBytes(StandardCharsets.UTF_8));
      assertProblem(deliver(http, path, body, standardHeaders(otherKey, "msg_2", now(), body)), 401, "signature_invalid");
      String[] tampered = standardHeaders(WHSEC, "msg_3", now(), body);
      assertProblem(deliver(http, path, "{\"type\": \"invoice.void\"}", tampered), 401, "signature_invalid");
      assertProblem(deliver(http, path, body, "webhook-id", "msg_4"), 401, "signature_missing");
      assertProblem(deliver(http, path, body, standardHeaders(WHSEC, "msg_5", now() - 600, body)), 401,
          "signature_expired");
      assertProblem(deliver(http, path, body, standardHeaders(WHSEC, "msg_6", now() + 600, body)), 401,
          "signature_expired");
      assertEquals(1, runs(http, "sw").size(), "only the valid delivery started a run");
    });
  }

  @BothDatabases
  void github_signatures_valid_invalid_missing_and_replayed(Api api) {
    api.test(http -> {
      secret(http, "GH_SECRET", "It's a Secret to Everybody");
      String path = hookPath(put(http, "gh", "[{\"webhook\": {\"verify\": \"github\", \"secret\": \"GH_SECRET\"}}]"), 0);
      String body = "{\"action\": \"opened\"}";
      String signature = "sha256=" + HexFormat.of().formatHex(hmac("It's a Secret to Everybody".getBytes(
          StandardCharsets.UTF_8), body));
      Http.Reply first = deliver(http, path, body, "X-Hub-Signature-256", signature, "X-GitHub-Event", "issues",
          "X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
      assertEquals(202, first.status(), first::toString);
      JsonNode inputs = http.get("/v1/runs/" + first.json().get("run_id").asText()).json().get("inputs");
      assertEquals(Json.tree("{\"x-github-event\": \"issues\", \"x-github-delivery\": "
          + "\"72d3162e-cc78-11e3-81ab-4c9367dc0958\"}"), inputs.get("headers"));
      assertEquals(Json.tree(body), inputs.get("body"));
      Http.Reply redelivered = deliver(http, path, body, "X-Hub-Signature-256", signature, "X-GitHub-Delivery",
          "72d3162e-cc78-11e3-81ab-4c9367dc0958");
      assertEquals(first.json().get("run_id"), redelivered.json().get("run_id"));
      assertProblem(deliver(http, path, body, "X-Hub-Signature-256", signature.replace('a', 'b'), "X-GitHub-Delivery",
          "other"), 401, "signature_invalid");
      assertProblem(deliver(http, path, body, "X-Hub-Signature", "sha1=0000"), 401, "signature_missing");
      assertEquals(1, runs(http, "gh").size());
    });
  }

  @BothDatabases
  void stripe_signatures_valid_invalid_expired_and_replayed_by_event_id(Api api) {
    api.test(http -> {
      secret(http, "STRIPE_SECRET", "whsec_stripe_test");
      String path = hookPath(put(http, "stripe", "[{\"webhook\": {\"verify\": \"stripe\", \"secret\": "
          + "\"STRIPE_SECRET\"}, \"project\": \"billing\"}]"), 0);
      String body = "{\"id\": \"evt_1\", \"type\": \"charge.succeeded\"}";
      Http.Reply first = deliver(http, path, body, "Stripe-Signature", stripeHeader("whsec_stripe_test", now(), body));
      assertEquals(202, first.status(), first::toString);
      assertEquals("billing", http.get("/v1/runs/" + first.json().get("run_id").asText()).json().get("project").asText());
      Http.Reply retry = deliver(http, path, body, "Stripe-Signature", stripeHeader("whsec_stripe_test", now(), body));
      assertEquals(first.json().get("run_id"), retry.json().get("run_id"), "same event id: no second run");
      String other = "{\"id\": \"evt_2\", \"type\": \"charge.succeeded\"}";
      assertProblem(deliver(http, path, other, "Stripe-Signature", stripeHeader("whsec_wrong", now(), other)), 401,
          "signature_invalid");
      assertProblem(deliver(http, path, other, "Stripe-Signature", stripeHeader("whsec_stripe_test", now() - 301, other)),
          401, "signature_expired");
      assertProblem(deliver(http, path, other, "Stripe-Signature", "v1=abc"), 401, "signature_missing");
      assertProblem(deliver(http, path, other), 401, "signature_missing");
      assertEquals(1, runs(http, "stripe").size());

      // A secret that is not set: the sender is refused, the operator's log says why.
      put(http, "stripe", "[{\"webhook\": {\"verify\": \"stripe\", \"secret\": \"NOT_SET\"}}]");
      assertProblem(deliver(http, path, other, "Stripe-Signature", stripeHeader("whsec_stripe_test", now(), other)), 401,
          "signature_invalid");
    });
  }

  @BothDatabases
  void concurrent_copies_of_one_delivery_start_exactly_one_run(Api api) throws Exception {
    api.test(http -> copiesStartOneRun(http, http));
  }

  /** The same across two instances on PostgreSQL, copies sent to both: the delivery id's unique key decides. */
  @org.junit.jupiter.api.Test
  void concurrent_copies_through_two_instances_on_postgresql_start_exactly_one_run() {
    org.junit.jupiter.api.Assumptions.assumeTrue(dev.runway.support.TestDatabase.postgresReachable()
        || dev.runway.support.TestDatabase.PG_REQUIRED, "PostgreSQL is not reachable");
    Api api = Api.on(dev.runway.support.TestDatabase.POSTGRESQL);
    api.testTwoInstances(HooksTest::copiesStartOneRun);
  }

  /** 20 copies of one signed delivery, sent at once, half to each of {@code first} and {@code second}: one run. */
  private static void copiesStartOneRun(Http first, Http second) throws Exception {
    secret(first, "SW_SECRET", WHSEC);
    String path = hookPath(put(first, "copies", "[{\"webhook\": {\"verify\": \"standard_webhooks\", \"secret\": "
        + "\"SW_SECRET\"}}]"), 0);
    String body = "{\"n\": 1}";
    String[] headers = standardHeaders(WHSEC, "msg_copied", now(), body);
    ExecutorService pool = Executors.newFixedThreadPool(20);
    try {
      CountDownLatch ready = new CountDownLatch(20);
      List<Future<Http.Reply>> replies = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        Http to = i % 2 == 0 ? first : second;
        replies.add(pool.submit(() -> {
          ready.countDown();
          ready.await();
          return deliver(to, path, body, headers);
        }));
      }
      Set<String> runIds = new HashSet<>();
      int fresh = 0;
      for (Future<Http.Reply> reply : replies) {
        Http.Reply r = reply.get(60, TimeUnit.SECONDS);
        assertEquals(202, r.status(), r::toString);
        runIds.add(r.json().get("run_id").asText());
        fresh += r.json().get("duplicate").asBoolean() ? 0 : 1;
      }
      assertEquals(1, runIds.size(), "every copy names the one run");
      assertEquals(1, fresh, "one copy started it");
      assertEquals(1, runs(first, "copies").size());
    } finally {
      pool.shutdownNow();
    }
  }

  @BothDatabases
  void a_delivery_id_seen_more_than_a_day_ago_starts_a_new_run(Api api) {
    api.test(http -> {
      String path = hookPath(put(http, "daily", "[{\"webhook\": {\"verify\": \"none\"}}]"), 0);
      String first = deliver(http, path, "{}", "Idempotency-Key", "delivery-1").json().get("run_id").asText();
      assertEquals(first, deliver(http, path, "{}", "Idempotency-Key", "delivery-1").json().get("run_id").asText());
      // As if the first copy came 25 hours ago and the sweep has not removed it yet.
      api.jdbi().useHandle(h -> h.createUpdate("UPDATE hook_delivery SET received_at = :at WHERE workspace_id = :ws")
          .bind("at", java.time.Instant.now().minus(java.time.Duration.ofHours(25))).bind("ws", api.workspace).execute());
      Http.Reply later = deliver(http, path, "{}", "Idempotency-Key", "delivery-1");
      assertFalse(later.json().get("duplicate").asBoolean(), later::toString);
      assertNotEquals(first, later.json().get("run_id").asText());
      assertEquals(later.json().get("run_id").asText(), deliver(http, path, "{}", "Idempotency-Key", "delivery-1")
          .json().get("run_id").asText(), "the new run is the one a retry now gets");
      assertEquals(2, runs(http, "daily").size());
      assertEquals(1, (int) api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM hook_delivery WHERE "
          + "workspace_id = :ws").bind("ws", api.workspace).mapTo(Integer.class).one()));
    });
  }

  /**
   * Runway's own webhooks are Standard Webhooks: an endpoint whose URL is a hook of another workflow
   * starts a run of it for each event, the signature checked with the endpoint's secret; and
   * hook.received is delivered to endpoints like any run event.
   */
  @BothDatabases
  void runways_own_webhooks_start_runs_through_a_standard_webhooks_hook_and_hook_received_is_delivered(Api api) {
    api.workflow("gated", true);
    try (dev.runway.support.WebhookReceiver receiver = new dev.runway.support.WebhookReceiver()) {
      api.testWebhooks(s -> s, http -> {
        // The test's server listens on a port of its own choosing: the hook's path on its address.
        String hookUrl = http.origin() + hookPath(put(http, "on-approval", "[{\"webhook\": {\"verify\": "
            + "\"standard_webhooks\", \"secret\": \"RUNWAY_ENDPOINT\"}}]"), 0);
        Http.Reply endpoint = http.post("/v1/webhook_endpoints", "{\"url\": \"" + hookUrl + "\", \"event_types\": "
            + "[\"run.approved\"]}");
        assertEquals(201, endpoint.status(), endpoint::toString);
        secret(http, "RUNWAY_ENDPOINT", endpoint.json().get("secret").asText());
        Http.Reply watcher = http.post("/v1/webhook_endpoints", "{\"url\": \"" + receiver.url("/events")
            + "\", \"event_types\": [\"hook.*\"]}");
        assertEquals(201, watcher.status(), watcher::toString);

        String gated = http.startRun("gated", "demo").json().get("id").asText();
        assertEquals(200, http.post("/v1/runs/" + gated + "/approve", "{}").status());
        List<dev.runway.support.WebhookReceiver.Delivery> got = receiver.await(java.time.Duration.ofSeconds(30),
            d -> !d.isEmpty(), "hook.received");
        assertEquals("hook.received", got.get(0).type());
        String hooked = got.get(0).body().get("data").get("id").asText();
        JsonNode run = http.get("/v1/runs/" + hooked).json();
        assertEquals("on-approval", run.get("workflow").asText());
        JsonNode body = run.get("inputs").get("body");
        assertEquals("run.approved", body.get("type").asText(), body::toString);
        assertEquals(gated, body.get("data").get("id").asText());
        assertEquals(body.get("id").asText(), run.get("inputs").get("headers").get("webhook-id").asText(),
            "the delivery is known by its webhook-id");
      });
    }
  }

  @BothDatabases
  void form_bodies_content_types_and_size(Api api) {
    api.test(http -> {
      String path = hookPath(put(http, "forms", "[{\"webhook\": {\"verify\": \"none\"}}]"), 0);
      Http.Reply form = http.send("POST", path, null, "name=Ada+Lovelace&tag=a&tag=b%26c&empty=", "application/x-www-form-urlencoded; charset=utf-8");
      assertEquals(202, form.status(), form::toString);
      assertEquals(Json.tree("{\"name\": \"Ada Lovelace\", \"tag\": [\"a\", \"b&c\"], \"empty\": \"\"}"),
          http.get("/v1/runs/" + form.json().get("run_id").asText()).json().get("inputs").get("body"));
      assertProblem(http.send("POST", path, null, "<xml/>", "application/xml"), 415, "unsupported_media_type");
      assertProblem(http.send("POST", path, null, "{not json", "application/json"), 400, "validation_failed");
      assertProblem(http.send("POST", path, null, "a=%zz", "application/x-www-form-urlencoded"), 400,
          "validation_failed");
      String big = "{\"pad\": \"" + "x".repeat(70_000) + "\"}";
      assertEquals(413, http.send("POST", path, null, big, "application/json").status());
      assertEquals(Json.tree("{\"vendor\": \"x\"}"), http.get("/v1/runs/" + http.send("POST", path, null,
          "{\"vendor\": \"x\"}", "application/vnd.api+json").json().get("run_id").asText()).json().get("inputs").get("body"));
      assertEquals(2, runs(http, "forms").size());
    });
  }

  @BothDatabases
  void each_hook_is_rate_limited_with_retry_after(Api api) {
    api.testWithServices(s -> s.with("hooks.per_second", "1").with("hooks.burst", "2"), http -> {
      JsonNode made = put(http, "limited", "[{\"webhook\": {\"verify\": \"none\"}}, {\"webhook\": {\"verify\": \"none\"}}]");
      String path = hookPath(made, 0);
      assertEquals(202, deliver(http, path, "{}").status());
      assertEquals(202, deliver(http, path, "{}").status());
      Http.Reply limited = deliver(http, path, "{}");
      assertProblem(limited, 429, "rate_limited");
      assertTrue(Integer.parseInt(limited.header("Retry-After")) >= 1, limited::toString);
      assertEquals(202, deliver(http, hookPath(made, 1), "{}").status(), "each hook has its own rate");
      assertEquals(3, runs(http, "limited").size());
    });
  }

  @BothDatabases
  void unknown_rotated_removed_and_archived_hooks_answer_404(Api api) {
    api.test(http -> {
      assertProblem(deliver(http, "/hooks/hook_" + "a".repeat(32), "{}"), 404, "hook_not_found");
      assertProblem(deliver(http, "/hooks/not-a-hook", "{}"), 404, "hook_not_found");
      JsonNode made = put(http, "rotating", "[{\"crm\": \"contacts\", \"on\": [\"created\"]}, {\"webhook\": "
          + "{\"verify\": \"none\"}}]");
      assertTrue(made.get("triggers").get(0).path("hook_url").isMissingNode(), "a crm trigger has no URL");
      String first = hookPath(made, 1);

      JsonNode rotated = http.post("/v1/workflows/rotating/triggers/1/rotate_hook", "{\"expire_previous_in_s\": 3600}").json();
      String second = hookPath(rotated, 1);
      assertNotEquals(first, second);
      assertEquals(202, deliver(http, first, "{}").status(), "the old URL works for the time given");
      assertEquals(202, deliver(http, second, "{}").status());
      String third = hookPath(http.post("/v1/workflows/rotating/triggers/1/rotate_hook", "{}").json(), 1);
      assertProblem(deliver(http, second, "{}"), 404, "hook_not_found");
      assertEquals(202, deliver(http, first, "{}").status(), "still within its hour");
      assertProblem(http.post("/v1/workflows/rotating/triggers/0/rotate_hook", "{}"), 400, "validation_failed", "trigger");
      assertProblem(http.post("/v1/workflows/rotating/triggers/99/rotate_hook", "{}"), 400, "validation_failed", "index");
      assertProblem(http.post("/v1/workflows/rotating/triggers/1/rotate_hook", "{\"expire_previous_in_s\": -1}"), 400,
          "validation_failed", "expire_previous_in_s");
      assertProblem(http.post("/v1/workflows/nope/triggers/0/rotate_hook", "{}"), 404, "workflow_not_found");

      assertEquals(200, http.delete("/v1/workflows/rotating").status());
      assertProblem(deliver(http, third, "{}"), 404, "hook_not_found");
      JsonNode restored = put(http, "rotating", "[{\"crm\": \"contacts\", \"on\": [\"created\"]}, {\"webhook\": "
          + "{\"verify\": \"none\"}}]");
      assertEquals(third, hookPath(restored, 1), "a restored workflow keeps its URL");
      assertEquals(202, deliver(http, third, "{}").status());

      put(http, "rotating", "[{\"crm\": \"contacts\", \"on\": [\"created\"]}]");
      assertProblem(deliver(http, third, "{}"), 404, "hook_not_found");
      assertProblem(deliver(http, first, "{}"), 404, "hook_not_found");
      assertEquals(4, runs(http, "rotating").size());
    });
  }

  @BothDatabases
  void bad_webhook_triggers_are_400_naming_the_field(Api api) {
    api.test(http -> {
      String[][] cases = {
          {"[{\"webhook\": {}}]", "triggers[0].webhook.verify"},
          {"[{\"webhook\": {\"verify\": \"gitlab\"}}]", "triggers[0].webhook.verify"},
          {"[{\"webhook\": {\"verify\": \"github\"}}]", "triggers[0].webhook.secret"},
          {"[{\"webhook\": {\"verify\": \"none\", \"secret\": \"X\"}}]", "triggers[0].webhook.secret"},
          {"[{\"webhook\": {\"verify\": \"stripe\", \"secret\": \"not a name\"}}]", "triggers[0].webhook.secret"},
          {"[{\"webhook\": {\"verify\": \"none\", \"headers\": [\"bad header\"]}}]", "triggers[0].webhook.headers[0]"},
          {"[{\"webhook\": {\"verify\": \"none\", \"headers\": \"x\"}}]", "triggers[0].webhook.headers"},
          {"[{\"webhook\": {\"verify\": \"none\", \"extra\": 1}}]", "triggers[0].webhook.extra"},
          {"[{\"webhook\": \"github\"}]", "triggers[0].webhook"},
          {"[{\"webhook\": {\"verify\": \"none\"}, \"project\": \"Not A Slug\"}]", "triggers[0].project"},
      };
      for (String[] c : cases) {
        assertProblem(http.put("/v1/workflows/bad", "{\"triggers\": " + c[0] + "}"), 400,
            c[1].endsWith(".extra") ? "unknown_parameter" : "validation_failed", c[1]);
      }
    });
  }

  @BothDatabases
  void a_hooked_run_obeys_the_workflows_concurrency_key_and_its_timeline_begins_with_hook_received(Api api) {
    api.test(http -> {
      Http.Reply put = http.put("/v1/workflows/serial", "{\"requires_approval\": true, \"concurrency\": {\"key\": "
          + "\"{{ inputs.body.customer }}\"}, \"triggers\": [{\"webhook\": {\"verify\": \"none\"}}]}");
      assertEquals(201, put.status(), put::toString);
      String path = hookPath(put.json(), 0);
      String first = deliver(http, path, "{\"customer\": \"c1\"}").json().get("run_id").asText();
      String second = deliver(http, path, "{\"customer\": \"c1\"}").json().get("run_id").asText();
      assertEquals("awaiting_approval", http.get("/v1/runs/" + first).json().get("status").asText());
      assertEquals("queued", http.get("/v1/runs/" + second).json().get("status").asText());
      JsonNode events = http.get("/v1/runs/" + second + "/events").json().get("data");
      assertEquals("hook.received", events.get(0).get("type").asText(), events::toString);
      assertEquals("run.queued", events.get(1).get("type").asText(), events::toString);
    });
  }

  @BothDatabases
  void a_body_that_breaks_the_inputs_schema_fails_the_run_at_once(Api api) {
    api.test(http -> {
      Http.Reply put = http.put("/v1/workflows/typed", "{\"inputs_schema\": {\"type\": \"object\", \"properties\": "
          + "{\"body\": {\"type\": \"object\", \"required\": [\"order\"]}}}, \"triggers\": [{\"webhook\": "
          + "{\"verify\": \"none\"}}]}");
      assertEquals(201, put.status(), put::toString);
      String path = hookPath(put.json(), 0);
      String ok = deliver(http, path, "{\"order\": 1}").json().get("run_id").asText();
      String broken = deliver(http, path, "{\"other\": 1}").json().get("run_id").asText();
      assertEquals("succeeded", http.get("/v1/runs/" + ok).json().get("status").asText());
      JsonNode failed = http.get("/v1/runs/" + broken).json();
      assertEquals("failed", failed.get("status").asText(), failed::toString);
    });
  }
}
