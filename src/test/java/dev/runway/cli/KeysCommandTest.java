package dev.runway.cli;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.auth.ApiKey;
import dev.runway.auth.Scope;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/** {@code runway keys create|list|revoke}, driven directly, with the keys it makes used over HTTP. */
class KeysCommandTest {
  private static final String KEY = "wsk_[0-9A-Za-z]{40,}";

  /** One command invocation's exit code and what it printed. */
  private record Outcome(int exitCode, String out) {
    List<String> lines() {
      return out.isEmpty() ? List.of() : Arrays.asList(out.split("\\R"));
    }
  }

  private static Outcome keys(Api api, String... args) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    int code = new KeysCommand(api.services().keys(), out).run(List.of(args));
    out.flush();
    return new Outcome(code, bytes.toString(StandardCharsets.UTF_8));
  }

  private static String create(Api api, String... args) {
    Outcome created = keys(api, args);
    assertEquals(0, created.exitCode());
    assertEquals(1, created.lines().size(), () -> "exactly one line: " + created.out());
    String key = created.lines().get(0);
    assertTrue(key.matches(KEY), key);
    return key;
  }

  @BothDatabases
  void create_prints_only_the_key_and_it_has_exactly_the_given_scopes(Api api) {
    api.workflow("hello", false);
    String key = create(api, "create", "--workspace", api.workspace, "--scopes", "runs:write,runs:read", "--name", "ci");

    ApiKey stored = api.services().keys().list(api.workspace).stream()
        .filter(k -> k.name().equals("ci")).findFirst().orElseThrow();
    assertEquals("runs:write,runs:read", stored.scopes());
    assertNull(stored.projects());
    assertNull(stored.expiresAt());
    assertNull(stored.revokedAt());

    api.test(http -> {
      assertEquals(200, http.post("/v1/workflows/hello/runs", key, "{\"project\":\"demo\"}").status());
      assertEquals(200, http.get("/v1/runs", key).status());
      assertProblem(http.send("PUT", "/v1/workflows/hello", key, "{\"requires_approval\":true}", "application/json"),
          403, "insufficient_scope");
      assertProblem(http.send("DELETE", "/v1/workflows/hello", key, null, null), 403, "insufficient_scope");
    });
  }

  @BothDatabases
  void create_with_equals_syntax_and_a_single_scope(Api api) {
    api.workflow("hello", false);
    String key = create(api, "create", "--workspace=" + api.workspace, "--scopes=runs:read");
    api.test(http -> {
      assertEquals(200, http.get("/v1/runs", key).status());
      assertProblem(http.post("/v1/workflows/hello/runs", key, "{\"project\":\"demo\"}"), 403, "insufficient_scope");
      assertEquals(0, api.countRuns(""));
    });
  }

  @BothDatabases
  void create_without_scopes_gives_every_scope(Api api) {
    String key = create(api, "create", "--workspace", api.workspace, "--name", "all");
    ApiKey stored = api.services().keys().list(api.workspace).stream()
        .filter(k -> k.name().equals("all")).findFirst().orElseThrow();
    assertEquals(Scope.EVERY, stored.scopes(), "every scope, also those later versions add");
    api.test(http -> {
      Http.Reply put = http.send("PUT", "/v1/workflows/made", key, "{\"requires_approval\":false}", "application/json");
      assertEquals(201, put.status(), put::toString);
      assertEquals(200, http.post("/v1/workflows/made/runs", key, "{\"project\":\"demo\"}").status());
      assertEquals(200, http.get("/v1/runs", key).status());
      assertEquals(200, http.send("DELETE", "/v1/workflows/made", key, null, null).status());
      assertEquals(200, http.get("/v1/crm/objects", key).status());
    });
  }

  @BothDatabases
  void create_with_projects_limits_the_key(Api api) {
    api.workflow("hello", false);
    String key = create(api, "create", "--workspace", api.workspace, "--projects", "a,b", "--name", "limited");
    ApiKey stored = api.services().keys().list(api.workspace).stream()
        .filter(k -> k.name().equals("limited")).findFirst().orElseThrow();
    assertEquals("a,b", stored.projects());
    api.test(http -> {
      assertEquals(200, http.post("/v1/workflows/hello/runs", key, "{\"project\":\"a\"}").status());
      assertEquals(200, http.post("/v1/workflows/hello/runs", key, "{\"project\":\"b\"}").status());
      assertProblem(http.post("/v1/workflows/hello/runs", key, "{\"project\":\"c\"}"), 403, "project_forbidden", "project");
      assertEquals(2, api.countRuns(""));
    });
  }

  @BothDatabases
  void create_for_a_new_workspace_creates_the_workspace(Api api) {
    String workspace = Api.newWorkspaceId();
    assertEquals(0, workspaces(api, workspace));
    String key = create(api, "create", "--workspace", workspace);
    assertEquals(1, workspaces(api, workspace));
    assertEquals(1, api.services().keys().list(workspace).size());
    // A second key for the same workspace reuses the row.
    create(api, "create", "--workspace", workspace);
    assertEquals(1, workspaces(api, workspace));
    assertEquals(2, api.services().keys().list(workspace).size());

    api.test(http -> {
      Http.Reply list = http.get("/v1/runs", key);
      assertEquals(200, list.status(), list::toString);
      assertEquals(0, list.json().get("data").size());
    });
  }

  @BothDatabases
  void list_shows_id_and_name_but_never_the_key(Api api) {
    String key = create(api, "create", "--workspace", api.workspace, "--name", "deploy-bot", "--scopes", "runs:read");
    ApiKey stored = api.services().keys().list(api.workspace).stream()
        .filter(k -> k.name().equals("deploy-bot")).findFirst().orElseThrow();

    Outcome listed = keys(api, "list", "--workspace", api.workspace);
    assertEquals(0, listed.exitCode());
    assertEquals(3, listed.lines().size(), () -> "header and two keys: " + listed.out());
    String line = listed.lines().stream().filter(l -> l.contains(stored.id())).findFirst()
        .orElseThrow(() -> new AssertionError("no line with " + stored.id() + " in " + listed.out()));
    assertTrue(line.contains("deploy-bot"), line);
    assertTrue(line.contains("active"), line);
    assertFalse(listed.out().contains(key), "the key is shown once, at creation");
    assertFalse(listed.out().contains(key.substring(4)), "not even without its prefix");
    assertFalse(listed.out().contains(api.key.substring(4)), "nor the other key of the workspace");
    assertFalse(listed.out().contains(stored.keyHash()), "nor its hash");

    assertTrue(api.services().keys().revoke(stored.id()));
    String afterRevoke = keys(api, "list", "--workspace", api.workspace).lines().stream()
        .filter(l -> l.contains(stored.id())).findFirst().orElseThrow();
    assertTrue(afterRevoke.contains("revoked"), afterRevoke);
  }

  @BothDatabases
  void list_without_a_workspace_shows_the_workspaces_with_their_active_keys(Api api) {
    String other = Api.newWorkspaceId();
    String revoked = create(api, "create", "--workspace", other, "--name", "gone");
    create(api, "create", "--workspace", other, "--name", "kept");
    api.services().keys().list(other).stream().filter(k -> k.name().equals("gone"))
        .forEach(k -> api.services().keys().revoke(k.id()));
    Outcome listed = keys(api, "list");
    assertEquals(0, listed.exitCode());
    assertTrue(listed.lines().get(0).startsWith("WORKSPACE"), listed.out());
    String line = listed.lines().stream().filter(l -> l.startsWith(other + " ")).findFirst()
        .orElseThrow(() -> new AssertionError("no line for " + other + " in " + listed.out()));
    assertTrue(line.endsWith(" 1"), () -> "one active key: " + line);
    assertTrue(listed.lines().stream().anyMatch(l -> l.startsWith(api.workspace + " ")));
    assertFalse(listed.out().contains(revoked.substring(4)));
  }

  @BothDatabases
  void list_of_another_workspace_does_not_show_this_workspaces_keys(Api api) {
    String other = Api.newWorkspaceId();
    create(api, "create", "--workspace", other, "--name", "theirs");
    Outcome listed = keys(api, "list", "--workspace", api.workspace);
    assertFalse(listed.out().contains("theirs"), listed::out);
    String ourId = api.services().keys().list(api.workspace).get(0).id();
    assertFalse(keys(api, "list", "--workspace", other).out().contains(ourId));
  }

  @BothDatabases
  void revoke_makes_the_key_fail_over_http(Api api) {
    String key = create(api, "create", "--workspace", api.workspace, "--name", "doomed");
    String id = api.services().keys().list(api.workspace).stream()
        .filter(k -> k.name().equals("doomed")).findFirst().orElseThrow().id();
    api.test(http -> {
      assertEquals(200, http.get("/v1/runs", key).status());

      Outcome revoked = keys(api, "revoke", id);
      assertEquals(0, revoked.exitCode());
      assertTrue(revoked.out().contains(id), revoked::out);
      assertNotNull(api.services().keys().find(id).orElseThrow().revokedAt());

      assertProblem(http.get("/v1/runs", key), 401, "invalid_api_key");
      assertEquals(200, http.get("/v1/runs").status(), "the workspace's other key still works");

      Outcome again = keys(api, "revoke", id);
      assertEquals(0, again.exitCode(), "revoking twice is harmless");
      assertTrue(again.out().contains("already revoked"), again::out);
      assertProblem(http.get("/v1/runs", key), 401, "invalid_api_key");
    });
  }

  @BothDatabases
  void revoking_an_unknown_key_exits_1(Api api) {
    Outcome outcome = keys(api, "revoke", "key_01m80m00h08nf1qrfhqggxcsnm");
    assertEquals(1, outcome.exitCode());
    assertFalse(outcome.out().contains("revoked"), outcome::out);
    api.services().keys().list(api.workspace).forEach(k -> assertNull(k.revokedAt()));
  }

  @BothDatabases
  void bad_usage_throws_illegal_argument(Api api) {
    int before = api.services().keys().list(api.workspace).size();
    String[][] bad = {
        {"create", "--workspace", api.workspace, "--scopes", "runs:write,runs:admin"},
        {"create", "--workspace", api.workspace, "--scopes", ""},
        {"create", "--scopes", "runs:read"},
        {"create"},
        {"create", "--workspace", api.workspace, "--colour", "red"},
        {"create", "--workspace"},
        {"create", "--workspace", api.workspace, "stray"},
        {"create", "--workspace", "Not A Slug"},
        {"create", "--workspace", api.workspace, "--projects", "a,B"},
        {"create", "--workspace", api.workspace, "--expires-in-days", "soon"},
        {"list", "--workspace", api.workspace, "--name", "x"},
        {"revoke"},
        {"revoke", "key_a", "key_b"},
        {"rotate"},
        {},
    };
    for (String[] args : bad) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> keys(api, args),
          () -> "keys " + String.join(" ", args));
      assertFalse(e.getMessage() == null || e.getMessage().isBlank(), () -> "message for " + String.join(" ", args));
    }
    assertEquals(before, api.services().keys().list(api.workspace).size(), "no key was made");
  }

  @BothDatabases
  void expires_in_days_makes_a_key_that_expires_and_must_be_positive(Api api) {
    create(api, "create", "--workspace", api.workspace, "--name", "month", "--expires-in-days", "30");
    ApiKey month = api.services().keys().list(api.workspace).stream()
        .filter(k -> k.name().equals("month")).findFirst().orElseThrow();
    assertEquals(java.time.Duration.ofDays(30), java.time.Duration.between(month.createdAt(), month.expiresAt()));

    int before = api.services().keys().list(api.workspace).size();
    for (String days : new String[] {"-1", "0"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> keys(api, "create", "--workspace", api.workspace, "--expires-in-days", days),
          () -> "--expires-in-days " + days + " would make a key that is dead on arrival");
      assertTrue(e.getMessage().contains("--expires-in-days"), e.getMessage());
    }
    assertEquals(before, api.services().keys().list(api.workspace).size(), "no dead key was stored");

    // Far-off expiry: a usage error or a key, never a database error.
    try {
      Outcome far = keys(api, "create", "--workspace", api.workspace, "--expires-in-days", "2147483647");
      assertEquals(0, far.exitCode());
    } catch (IllegalArgumentException e) {
      assertTrue(e.getMessage().contains("--expires-in-days"), e.getMessage());
    }
  }

  @BothDatabases
  void name_longer_than_the_column_is_a_usage_error(Api api) {
    int before = api.services().keys().list(api.workspace).size();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> keys(api, "create", "--workspace", api.workspace, "--name", "n".repeat(201)));
    assertTrue(e.getMessage().contains("name"), e.getMessage());
    assertEquals(before, api.services().keys().list(api.workspace).size());
    create(api, "create", "--workspace", api.workspace, "--name", "n".repeat(200));
  }

  @BothDatabases
  void usage_messages_name_what_is_wrong(Api api) {
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> keys(api, "create", "--workspace", api.workspace, "--scopes", "runs:write,nope"))
        .getMessage().contains("nope"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> keys(api, "create", "--scopes", "runs:read"))
        .getMessage().contains("--workspace"));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> keys(api, "create", "--workspace", api.workspace, "--colour", "red"))
        .getMessage().contains("--colour"));
  }

  private static int workspaces(Api api, String id) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM workspace WHERE id = :id")
        .bind("id", id).mapTo(Integer.class).one());
  }
}
