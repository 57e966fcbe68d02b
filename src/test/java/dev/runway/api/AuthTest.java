package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.ApiKey;
import dev.runway.auth.Scope;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Who may call what: bearer keys, scopes, project limits and workspace isolation, through HTTP. */
class AuthTest {
  private static final String START = "{\"project\":\"demo\"}";
  /** Well-formed (wsk_ + 40 base62 characters) but never issued. */
  private static final String NEVER_ISSUED = "wsk_" + "Zz9".repeat(13) + "Q";

  @BothDatabases
  void request_without_key_is_401_missing_api_key_with_www_authenticate(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      Http.Reply reply = http.send("POST", "/v1/workflows/hello/runs", null, START, "application/json");
      assertProblem(reply, 401, "missing_api_key");
      assertEquals("Bearer", reply.header("WWW-Authenticate"));

      Http.Reply list = http.get("/v1/runs", null);
      assertProblem(list, 401, "missing_api_key");
      assertEquals("Bearer", list.header("WWW-Authenticate"));

      Http.Reply blank = http.send("GET", "/v1/runs", null, null, null, "Authorization", "   ");
      assertProblem(blank, 401, "missing_api_key");
      assertEquals(0, api.countRuns(""));
    });
  }

  @BothDatabases
  void malformed_authorization_header_is_401_invalid_api_key(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      for (String header : new String[] {"Basic x", "Basic " + api.key, "Bearer", "Bearer ", "Bearer not-a-key",
          "Token " + api.key, api.key, "Bearer wsk_short", "Bearer " + api.key + "!", "Bearer " + api.key + " extra"}) {
        Http.Reply reply = http.send("POST", "/v1/workflows/hello/runs", null, START, "application/json",
            "Authorization", header);
        assertProblem(reply, 401, "invalid_api_key");
        String challenge = reply.header("WWW-Authenticate");
        assertNotNull(challenge, () -> "WWW-Authenticate for '" + header + "'");
        assertTrue(challenge.startsWith("Bearer"), challenge);
      }
      assertEquals(0, api.countRuns(""));
    });
  }

  @BothDatabases
  void scheme_is_case_insensitive(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      for (String scheme : new String[] {"bearer", "BEARER", "Bearer"}) {
        Http.Reply reply = http.send("POST", "/v1/workflows/hello/runs", null, START, "application/json",
            "Authorization", scheme + " " + api.key);
        assertEquals(200, reply.status(), () -> scheme + ": " + reply);
      }
      assertEquals(3, api.countRuns(""));
    });
  }

  @BothDatabases
  void unknown_well_formed_key_is_401_invalid_api_key(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      assertEquals(44, NEVER_ISSUED.length());
      assertProblem(http.post("/v1/workflows/hello/runs", NEVER_ISSUED, START), 401, "invalid_api_key");
      assertProblem(http.get("/v1/runs", NEVER_ISSUED), 401, "invalid_api_key");
      // One character off a real key is just as unknown.
      String last = api.key.substring(api.key.length() - 1);
      String altered = api.key.substring(0, api.key.length() - 1) + (last.equals("a") ? "b" : "a");
      assertProblem(http.get("/v1/runs", altered), 401, "invalid_api_key");
      assertEquals(0, api.countRuns(""));
    });
  }

  @BothDatabases
  void revoked_key_is_401_invalid_api_key(Api api) {
    api.workflow("hello", false);
    String key = api.key(Scope.RUNS_WRITE, Scope.RUNS_READ);
    api.test(http -> {
      assertEquals(200, http.get("/v1/runs", key).status(), "works before revocation");
      String id = keyId(api, key);
      assertTrue(api.services().keys().revoke(id));

      assertProblem(http.get("/v1/runs", key), 401, "invalid_api_key");
      assertProblem(http.post("/v1/workflows/hello/runs", key, START), 401, "invalid_api_key");
      assertEquals(0, api.countRuns(""));
      assertEquals(200, http.get("/v1/runs").status(), "other keys of the workspace still work");
    });
  }

  @BothDatabases
  void expired_key_is_401_invalid_api_key(Api api) throws InterruptedException {
    api.workflow("hello", false);
    String key = api.expiringKey(Duration.ofMillis(1));
    Thread.sleep(20);
    api.test(http -> {
      assertProblem(http.get("/v1/runs", key), 401, "invalid_api_key");
      assertProblem(http.post("/v1/workflows/hello/runs", key, START), 401, "invalid_api_key");
      assertEquals(0, api.countRuns(""));
      String lasting = api.expiringKey(Duration.ofHours(1));
      assertEquals(200, http.get("/v1/runs", lasting).status(), "a key within its lifetime works");
    });
  }

  @BothDatabases
  void key_in_query_parameter_is_never_accepted(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      Http.Reply list = http.get("/v1/runs?api_key=" + api.key, null);
      assertProblem(list, 401, "missing_api_key");
      assertEquals("Bearer", list.header("WWW-Authenticate"));
      assertProblem(http.send("POST", "/v1/workflows/hello/runs?api_key=" + api.key, null, START, "application/json"),
          401, "missing_api_key");
      assertProblem(http.get("/v1/runs?access_token=" + api.key, null), 401, "missing_api_key");
      assertEquals(0, api.countRuns(""));
    });
  }

  @BothDatabases
  void key_without_the_routes_scope_is_403_naming_the_scope(Api api) {
    api.workflow("hello", false);
    String readOnly = api.key(Scope.RUNS_READ);
    String writeOnly = api.key(Scope.RUNS_WRITE);
    String runsOnly = api.key(Scope.RUNS_WRITE, Scope.RUNS_READ);
    api.test(http -> {
      JsonNode start = assertProblem(http.post("/v1/workflows/hello/runs", readOnly, START), 403, "insufficient_scope");
      assertTrue(start.get("detail").asText().contains("runs:write"), start::toString);
      assertEquals(0, api.countRuns(""), "a refused start stores nothing");

      JsonNode list = assertProblem(http.get("/v1/runs", writeOnly), 403, "insufficient_scope");
      assertTrue(list.get("detail").asText().contains("runs:read"), list::toString);

      String body = "{\"name\":\"Changed\",\"requires_approval\":true}";
      JsonNode put = assertProblem(http.send("PUT", "/v1/workflows/hello", runsOnly, body, "application/json"),
          403, "insufficient_scope");
      assertTrue(put.get("detail").asText().contains("workflows:write"), put::toString);
      boolean requiresApproval = api.jdbi().withHandle(h -> h.createQuery(
              "SELECT requires_approval FROM workflow WHERE workspace_id = :ws AND id = 'hello'")
          .bind("ws", api.workspace).mapTo(Boolean.class).one());
      assertFalse(requiresApproval, "a refused PUT changes nothing");
      JsonNode archive = assertProblem(http.send("DELETE", "/v1/workflows/hello", runsOnly, null, null),
          403, "insufficient_scope");
      assertTrue(archive.get("detail").asText().contains("workflows:write"), archive::toString);

      // The scope that the route needs is enough.
      assertEquals(200, http.post("/v1/workflows/hello/runs", writeOnly, START).status());
      assertEquals(200, http.get("/v1/runs", readOnly).status());
    });
  }

  @BothDatabases
  void project_limited_key_may_start_runs_only_in_its_projects(Api api) {
    api.workflow("hello", false);
    String alphaKey = api.keyForProjects("alpha");
    api.test(http -> {
      assertProblem(http.post("/v1/workflows/hello/runs", alphaKey, "{\"project\":\"beta\"}"),
          403, "project_forbidden", "project");
      assertEquals(0, api.countRuns(""), "a refused start stores nothing");

      Http.Reply ok = http.post("/v1/workflows/hello/runs", alphaKey, "{\"project\":\"alpha\"}");
      assertEquals(200, ok.status(), ok::toString);
      assertEquals("alpha", ok.json().get("project").asText());
      assertEquals(1, api.countRuns(""));
      assertEquals(1, api.countRuns("project = :a", "alpha"));
    });
  }

  @BothDatabases
  void project_limited_key_cannot_read_other_projects_runs(Api api) {
    api.workflow("hello", false);
    String alphaKey = api.keyForProjects("alpha");
    api.test(http -> {
      String alphaRun = started(http.startRun("hello", "alpha"));
      String betaRun = started(http.startRun("hello", "beta"));
      String gammaRun = started(http.startRun("hello", "gamma"));

      Http.Reply own = http.get("/v1/runs/" + alphaRun, alphaKey);
      assertEquals(200, own.status(), own::toString);
      assertEquals(alphaRun, own.json().get("id").asText());
      // A run of another project does not exist for the key, exactly as an unknown id does not.
      JsonNode hidden = assertProblem(http.get("/v1/runs/" + betaRun, alphaKey), 404, "run_not_found");
      JsonNode unknown = assertProblem(http.get("/v1/runs/run_01m80m00h08nf1qrfhqggxcsnm", alphaKey), 404,
          "run_not_found");
      assertFalse(hidden.toString().contains("beta"), hidden::toString);
      assertEquals(unknown.get("detail").asText().replace("run_01m80m00h08nf1qrfhqggxcsnm", betaRun),
          hidden.get("detail").asText(), "the same answer as for an unknown id");
      for (String action : new String[] {"approve", "reject", "cancel"}) {
        assertProblem(http.post("/v1/runs/" + betaRun + "/" + action, alphaKey, "{}"), 404, "run_not_found");
      }
      assertProblem(http.get("/v1/runs/" + betaRun + "/events", alphaKey), 404, "run_not_found");
      assertEquals("succeeded", http.get("/v1/runs/" + betaRun).json().get("status").asText(), "nothing changed");

      Http.Reply list = http.get("/v1/runs", alphaKey);
      assertEquals(200, list.status(), list::toString);
      assertEquals(List.of(alphaRun), ids(list.json()));
      assertEquals(List.of(alphaRun), ids(http.get("/v1/runs?project=alpha", alphaKey).json()));
      assertEquals(List.of(alphaRun), ids(http.get("/v1/runs?workflow=hello", alphaKey).json()));

      assertProblem(http.get("/v1/runs?project=beta", alphaKey), 403, "project_forbidden", "project");

      // An unlimited key of the same workspace sees them all.
      assertEquals(Set.of(alphaRun, betaRun, gammaRun), new HashSet<>(ids(http.get("/v1/runs").json())));
    });
  }

  @BothDatabases
  void key_limited_to_several_projects_sees_each_of_them(Api api) {
    api.workflow("hello", false);
    String key = api.keyForProjects("alpha", "beta");
    api.test(http -> {
      String alphaRun = started(http.startRun("hello", "alpha"));
      String betaRun = started(http.startRun("hello", "beta"));
      started(http.startRun("hello", "gamma"));
      assertEquals(List.of(betaRun, alphaRun), ids(http.get("/v1/runs", key).json()));
      assertEquals(200, http.post("/v1/workflows/hello/runs", key, "{\"project\":\"beta\"}").status());
      assertProblem(http.post("/v1/workflows/hello/runs", key, "{\"project\":\"gamma\"}"),
          403, "project_forbidden", "project");
    });
  }

  @BothDatabases
  void another_workspaces_run_does_not_exist(Api api) {
    String other = Api.newWorkspaceId();
    api.workflowIn(other, "hello", false);
    api.workflow("hello", false);
    String theirKey = api.keyIn(other, null, Scope.values());
    api.test(http -> {
      String theirRun = started(http.post("/v1/workflows/hello/runs", theirKey, START));
      String ourRun = started(http.startRun("hello", "demo"));

      JsonNode problem = assertProblem(http.get("/v1/runs/" + theirRun), 404, "run_not_found");
      assertFalse(problem.toString().contains(other), "the other workspace is not named");
      assertProblem(http.get("/v1/runs/" + theirRun, api.keyForProjects("demo")), 404, "run_not_found");

      assertEquals(List.of(ourRun), ids(http.get("/v1/runs").json()));
      assertEquals(List.of(ourRun), ids(http.get("/v1/runs?project=demo").json()));
      assertEquals(List.of(theirRun), ids(http.get("/v1/runs", theirKey).json()));
      assertEquals(200, http.get("/v1/runs/" + theirRun, theirKey).status(), "its own workspace sees it");
    });
  }

  @BothDatabases
  void health_and_readiness_need_no_key(Api api) {
    api.test(http -> {
      Map<String, String> expected = Map.of("/healthz", "ok", "/readyz", "ready");
      for (Map.Entry<String, String> check : expected.entrySet()) {
        Http.Reply reply = http.get(check.getKey(), null);
        assertEquals(200, reply.status(), reply::toString);
        assertTrue(reply.header("Content-Type").startsWith("application/json"), reply.header("Content-Type"));
        assertEquals(check.getValue(), reply.json().get("status").asText());
        assertNotNull(reply.header("Request-Id"));
        assertTrue(reply.header("Request-Id").startsWith("req_"), reply.header("Request-Id"));
        assertEquals(200, http.get(check.getKey(), NEVER_ISSUED).status(), "a bad key does not matter here");
      }
    });
  }

  @BothDatabases
  void stored_keys_are_sha256_hashes_never_the_key(Api api) throws Exception {
    String key = api.key(Scope.RUNS_READ);
    List<Map<String, Object>> rows = api.jdbi().withHandle(h -> h.createQuery(
        "SELECT * FROM api_key WHERE workspace_id = :ws").bind("ws", api.workspace).mapToMap().list());
    assertEquals(2, rows.size(), "the test's default key and this one");

    String expectedHash = HexFormat.of().formatHex(
        MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8)));
    Set<String> hashes = new HashSet<>();
    for (Map<String, Object> row : rows) {
      String hash = (String) row.get("key_hash");
      assertTrue(hash.matches("[0-9a-f]{64}"), hash);
      hashes.add(hash);
      for (Map.Entry<String, Object> column : row.entrySet()) {
        String value = String.valueOf(column.getValue());
        for (String secret : new String[] {key, api.key, key.substring(4), api.key.substring(4)}) {
          assertFalse(value.contains(secret), () -> "column " + column.getKey() + " holds the key");
        }
      }
    }
    assertTrue(hashes.contains(expectedHash), "key_hash is the SHA-256 of the key");
    assertEquals(2, hashes.size());
  }

  private static String keyId(Api api, String key) throws Exception {
    String hash = HexFormat.of().formatHex(
        MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8)));
    List<ApiKey> matching = api.services().keys().list(api.workspace).stream()
        .filter(k -> k.keyHash().equals(hash)).toList();
    assertEquals(1, matching.size());
    return matching.get(0).id();
  }

  private static String started(Http.Reply reply) {
    assertEquals(200, reply.status(), reply::toString);
    return reply.json().get("id").asText();
  }

  private static List<String> ids(JsonNode page) {
    List<String> ids = new java.util.ArrayList<>();
    page.get("data").forEach(run -> ids.add(run.get("id").asText()));
    return ids;
  }
}
