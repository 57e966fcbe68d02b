package dev.runway.quota;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.Services;
import dev.runway.auth.Scope;
import dev.runway.cli.KeysCommand;
import dev.runway.core.DomainException;
import dev.runway.http.ErrorMapper;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Browser;
import dev.runway.support.Http;
import dev.runway.support.SseClient;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Per-workspace quotas: at a small setting the create past it answers 403 quota_exceeded naming
 * the quota and its limit, and stores nothing; runs a minute answer 429 with Retry-After; other
 * workspaces are not affected.
 */
class QuotasTest {
  private static final String AGENT = "{\"name\":\"A\",\"model\":\"gpt-4o-mini\",\"instructions\":\"Answer.\",\"tools\":[]}";

  private static void assertQuota(Http.Reply reply, int status, String quota, int limit) {
    JsonNode body = assertProblem(reply, status, "quota_exceeded");
    assertEquals(quota, body.path("quota").asText(), reply::toString);
    assertEquals(limit, body.path("limit").asInt(), reply::toString);
  }

  private int count(Api api, String sql) {
    return api.jdbi().withHandle(h -> h.createQuery(sql).bind("ws", api.workspace).mapTo(Integer.class).one());
  }

  @BothDatabases
  void keys_past_the_quota_are_refused_from_the_services_the_command_and_the_console(Api api) {
    // The test's workspace has one key (api.key) already.
    Services own = api.servicesWith(s -> s.with("quotas.keys_per_workspace", "2"));
    own.keys().create(api.workspace, "second", List.of(Scope.RUNS_READ), null, null);
    DomainException refused = assertThrows(DomainException.class,
        () -> own.keys().create(api.workspace, "third", List.of(Scope.RUNS_READ), null, null));
    assertEquals(403, ErrorMapper.status(refused.kind()));
    assertEquals("quota_exceeded", refused.code());
    assertEquals("keys", refused.extensions().get("quota"));
    assertEquals(2L, refused.extensions().get("limit"));

    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    int exit = new KeysCommand(own.keys(), new PrintStream(bytes, true, StandardCharsets.UTF_8))
        .run(List.of("create", "--workspace", api.workspace, "--name", "cli"));
    assertEquals(1, exit);
    assertEquals("", bytes.toString(StandardCharsets.UTF_8), "no key printed");
    assertEquals(2, count(api, "SELECT COUNT(*) FROM api_key WHERE workspace_id = :ws"));

    // A revoked key makes room; another workspace has its own quota.
    String second = own.keys().list(api.workspace).stream().filter(k -> k.name().equals("second")).findFirst()
        .orElseThrow().id();
    own.keys().revoke(second);
    own.keys().create(api.workspace, "after-revoke", List.of(Scope.RUNS_READ), null, null);
    String other = Api.newWorkspaceId();
    own.keys().create(other, "a", List.of(Scope.RUNS_READ), null, null);
    own.keys().create(other, "b", List.of(Scope.RUNS_READ), null, null);
  }

  @BothDatabases
  void a_key_past_the_quota_made_in_the_console_is_a_clear_page_and_not_stored(Api api) {
    api.testWithServices(s -> s.with("quotas.keys_per_workspace", "1"), http -> {
      Browser browser = new Browser(http.origin());
      String email = dev.runway.console.ConsoleTest.signUp(browser);
      browser.get("/console/keys");
      assertEquals(201, browser.post("/console/keys", "name", "first", "expiry", "never", "scope", "runs:read").status());
      browser.get("/console/keys");
      Browser.Page refused = browser.post("/console/keys", "name", "second", "expiry", "never", "scope", "runs:read");
      assertEquals(403, refused.status(), refused::toString);
      assertTrue(refused.body().contains("revoke one first"), refused::toString);
      String workspace = api.jdbi().withHandle(h -> h.createQuery("SELECT workspace_id FROM account WHERE email = :e")
          .bind("e", email).mapTo(String.class).one());
      int keys = api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM api_key WHERE workspace_id = :ws")
          .bind("ws", workspace).mapTo(Integer.class).one());
      assertEquals(1, keys);
    });
  }

  @BothDatabases
  void webhook_endpoints_past_the_quota_are_403_and_not_stored(Api api) {
    api.testWithServices(s -> s.with("quotas.webhook_endpoints_per_workspace", "2"), http -> {
      String body = "{\"url\":\"https://example.com/hook\",\"event_types\":[\"run.succeeded\"]}";
      assertEquals(201, http.post("/v1/webhook_endpoints", body).status());
      assertEquals(201, http.post("/v1/webhook_endpoints", body).status());
      assertQuota(http.post("/v1/webhook_endpoints", body), 403, "webhook_endpoints", 2);
      assertEquals(2, count(api, "SELECT COUNT(*) FROM webhook_endpoint WHERE workspace_id = :ws"));
      String id = http.get("/v1/webhook_endpoints").json().get("data").get(0).get("id").asText();
      assertEquals(200, http.delete("/v1/webhook_endpoints/" + id).status());
      assertEquals(201, http.post("/v1/webhook_endpoints", body).status(), "a deleted endpoint makes room");
    });
  }

  @BothDatabases
  void workflows_past_the_quota_are_403_and_an_archived_one_makes_room(Api api) {
    api.testWithServices(s -> s.with("quotas.workflows_per_workspace", "2"), http -> {
      String wf = "{\"name\":\"W\",\"steps\":[]}";
      assertEquals(201, http.put("/v1/workflows/one", wf).status());
      assertEquals(201, http.put("/v1/workflows/two", wf).status());
      assertQuota(http.put("/v1/workflows/three", wf), 403, "workflows", 2);
      assertEquals(200, http.put("/v1/workflows/two", "{\"name\":\"W2\",\"steps\":[]}").status(),
          "replacing one is no create");
      assertEquals(2, count(api, "SELECT COUNT(*) FROM workflow WHERE workspace_id = :ws"));
      assertEquals(200, http.delete("/v1/workflows/two").status());
      assertEquals(201, http.put("/v1/workflows/three", wf).status());
      assertQuota(http.put("/v1/workflows/two", wf), 403, "workflows", 2); // restoring counts as a create
    });
  }

  @BothDatabases
  void agents_past_the_quota_are_403_and_not_stored(Api api) {
    api.testWithServices(s -> s.with("quotas.agents_per_workspace", "1"), http -> {
      assertEquals(201, http.put("/v1/agents/one", AGENT).status());
      assertQuota(http.put("/v1/agents/two", AGENT), 403, "agents", 1);
      assertEquals(1, count(api, "SELECT COUNT(*) FROM agent WHERE workspace_id = :ws"));
    });
  }

  @BothDatabases
  void secrets_past_the_quota_are_403_but_replacing_one_is_fine(Api api) {
    api.testWithServices(s -> s.with("quotas.secrets_per_workspace", "1"), http -> {
      assertEquals(201, http.put("/v1/secrets/ONE", "{\"value\":\"x\"}").status());
      assertQuota(http.put("/v1/secrets/TWO", "{\"value\":\"x\"}"), 403, "secrets", 1);
      assertEquals(200, http.put("/v1/secrets/ONE", "{\"value\":\"y\"}").status());
      assertEquals(1, count(api, "SELECT COUNT(*) FROM secret WHERE workspace_id = :ws"));
    });
  }

  @BothDatabases
  void concurrent_creates_stop_exactly_at_the_quota(Api api) throws Exception {
    Services own = api.servicesWith(s -> s.with("quotas.secrets_per_workspace", "3")
        .with("quotas.keys_per_workspace", "4"));
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(8);
    try {
      List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
      for (int i = 0; i < 16; i++) {
        String name = "S" + i;
        done.add(pool.submit(() -> {
          try {
            own.secrets().put(api.workspace, name, "v", null);
          } catch (QuotaExceeded expected) {
            // past the quota
          }
        }));
        done.add(pool.submit(() -> {
          try {
            own.keys().create(api.workspace, name, List.of(Scope.RUNS_READ), null, null);
          } catch (QuotaExceeded expected) {
            // past the quota
          }
        }));
      }
      for (java.util.concurrent.Future<?> f : done) {
        f.get(60, java.util.concurrent.TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(3, count(api, "SELECT COUNT(*) FROM secret WHERE workspace_id = :ws"));
    assertEquals(4, count(api, "SELECT COUNT(*) FROM api_key WHERE workspace_id = :ws"));
  }

  @BothDatabases
  void runs_past_the_per_minute_quota_are_429_with_retry_after(Api api) {
    api.workflow("w", false);
    api.testWithServices(s -> s.with("quotas.runs_per_minute_per_workspace", "2"), http -> {
      assertEquals(200, http.startRun("w", "p").status());
      assertEquals(200, http.startRun("w", "p").status());
      Http.Reply refused = http.startRun("w", "p");
      assertQuota(refused, 429, "runs_per_minute", 2);
      assertTrue(Integer.parseInt(refused.header("Retry-After")) >= 1, refused::toString);
      Http.Reply keyed = http.post("/v1/workflows/w/runs", api.key, "{\"project\":\"p\"}", "Idempotency-Key", "k1");
      assertQuota(keyed, 429, "runs_per_minute", 2);
      assertEquals(2, api.countRuns(""));
      // Another workspace starts as before.
      String other = Api.newWorkspaceId();
      api.workflowIn(other, "w", false);
      assertEquals(200, http.post("/v1/workflows/w/runs", api.keyIn(other, null, Scope.values()),
          "{\"project\":\"p\"}").status());
    });
  }

  @BothDatabases
  void event_streams_past_the_quota_are_429_until_one_closes(Api api) {
    String second = api.key(Scope.values());
    api.testWithServices(s -> s.with("quotas.event_streams_per_workspace", "1"), http -> {
      try (SseClient open = SseClient.open(http.origin(), "/v1/events", api.key)) {
        assertEquals(200, open.status());
        try (SseClient refused = SseClient.open(http.origin(), "/v1/events", second)) {
          assertEquals(429, refused.status());
          JsonNode problem = refused.problem();
          assertEquals("quota_exceeded", problem.path("code").asText());
          assertEquals("event_streams", problem.path("quota").asText());
          assertEquals(1, problem.path("limit").asInt());
          assertEquals("5", refused.header("Retry-After"));
        }
      }
    });
  }

  @BothDatabases
  void a_sync_past_the_crm_records_quota_is_refused_whole(Api api) {
    api.testWithServices(s -> s.with("quotas.crm_records_per_workspace", "3"), http -> {
      String sync = "/v1/crm/contacts/records/sync";
      assertEquals(200, http.post(sync, "{\"records\":[" + record("a") + "," + record("b") + "]}").status());
      assertQuota(http.post(sync, "{\"records\":[" + record("c") + "," + record("d") + "]}"), 403, "crm_records", 3);
      assertEquals(2, count(api, "SELECT COUNT(*) FROM crm_record WHERE workspace_id = :ws"));
      assertEquals(200, http.post(sync, "{\"records\":[" + record("a") + "," + record("c") + "]}").status(),
          "an update and one more record fit");
      assertEquals(3, count(api, "SELECT COUNT(*) FROM crm_record WHERE workspace_id = :ws"));
    });
  }

  @BothDatabases
  void a_sync_past_the_crm_megabytes_quota_is_refused_whole_and_deletes_make_room(Api api) {
    api.testWithServices(s -> s.with("quotas.crm_megabytes_per_workspace", "1"), http -> {
      String sync = "/v1/crm/contacts/records/sync";
      String chars = "SELECT SUM(live_chars) FROM crm_object_type WHERE workspace_id = :ws";
      String stored = "SELECT SUM(LENGTH(properties)) FROM crm_record WHERE workspace_id = :ws AND deleted = FALSE";
      assertEquals(200, http.post(sync, "{\"records\":[" + record("a") + "," + record("bb") + "]}").status());
      assertEquals(count(api, stored), count(api, chars), "kept as the records are written");
      // A workspace 5 characters short of its megabyte:
      api.jdbi().useHandle(h -> h.createUpdate("UPDATE crm_object_type SET live_chars = 999995 WHERE workspace_id = :ws")
          .bind("ws", api.workspace).execute());
      assertQuota(http.post(sync, "{\"records\":[" + record("c") + "]}"), 403, "crm_megabytes", 1);
      assertEquals(2, count(api, "SELECT COUNT(*) FROM crm_record WHERE workspace_id = :ws"));
      assertEquals(200, http.delete("/v1/crm/contacts/records/bb").status());
      assertEquals(999995 - "{\"n\":\"bb\"}".length(), count(api, chars));
      assertEquals(200, http.post(sync, "{\"records\":[" + record("c") + "]}").status(), "the delete made room");
    });
  }

  private static String record(String id) {
    return "{\"external_id\":\"" + id + "\",\"properties\":{\"n\":\"" + id + "\"}}";
  }
}
