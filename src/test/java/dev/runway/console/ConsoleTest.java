package dev.runway.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Browser;
import dev.runway.support.Http;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The console through HTTP on both databases: sign-up rules, sign-in failures that do not tell
 * whether an email has an account, lockout and rate limits, CSRF and Origin refusals, session
 * expiry and sign-out, a key shown once and its revocation seen by /v1, and one account never
 * reaching another workspace's keys, also by editing ids in URLs.
 */
public class ConsoleTest {
  private static final String PASSWORD = "correct horse battery staple 7";
  private static final Pattern KEY = Pattern.compile("<code id=\"new-key\">(wsk_[0-9A-Za-z]+)</code>");

  private static String email() {
    return "dev-" + UUID.randomUUID().toString().substring(0, 8) + "@example.com";
  }

  /** Signs up a new account in the browser and signs in with it; returns its email. */
  public static String signUp(Browser browser) {
    String email = email();
    assertEquals(200, browser.get("/console/signup").status());
    Browser.Page done = browser.post("/console/signup", "email", email, "password", PASSWORD);
    assertEquals(303, done.status(), done::toString);
    assertEquals("/console/signin?notice=signed-up", done.header("Location"));
    assertEquals(200, browser.get(done.header("Location")).status());
    Browser.Page in = browser.post("/console/signin", "email", email, "password", PASSWORD);
    assertEquals(303, in.status(), in::toString);
    assertEquals("/console/keys", in.header("Location"));
    return email;
  }

  /** The scope's checkbox on the keys page. */
  private static String checkbox(String page, String scope) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("<input type=\"checkbox\" name=\"scope\" value=\""
        + java.util.regex.Pattern.quote(scope) + "\"[^>]*>").matcher(page);
    assertTrue(m.find(), () -> "no checkbox for " + scope);
    return m.group();
  }

  private static String createKey(Browser browser, String name, String... scopes) {
    browser.get("/console/keys");
    String[] fields = new String[4 + 2 * scopes.length];
    fields[0] = "name";
    fields[1] = name;
    fields[2] = "expiry";
    fields[3] = "never";
    for (int i = 0; i < scopes.length; i++) {
      fields[4 + 2 * i] = "scope";
      fields[5 + 2 * i] = scopes[i];
    }
    Browser.Page made = browser.post("/console/keys", fields);
    assertEquals(201, made.status(), made::toString);
    Matcher m = KEY.matcher(made.body());
    assertTrue(m.find(), made::toString);
    return m.group(1);
  }

  private static Map<String, Object> account(Api api, String email) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT * FROM account WHERE email = :e").bind("e", email)
        .mapToMap().one());
  }

  @BothDatabases
  void signing_up_makes_an_account_with_a_workspace_of_its_own_and_signs_in(Api api) {
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      Browser.Page form = browser.get("/console/signup");
      assertEquals(200, form.status());
      assertTrue(form.header("Content-Type").startsWith("text/html"));
      assertTrue(form.header("Content-Security-Policy").contains("frame-ancestors 'none'"), form::toString);
      assertTrue(form.header("Content-Security-Policy").contains("default-src 'none'"));
      assertEquals("DENY", form.header("X-Frame-Options"));
      assertEquals("no-store", form.header("Cache-Control"));
      String visitorCookie = form.header("Set-Cookie");
      assertTrue(visitorCookie.contains("HttpOnly") && visitorCookie.contains("SameSite=Lax")
          && visitorCookie.contains("Path=/console"), visitorCookie);
      assertFalse(visitorCookie.contains("Secure"), "not over plain HTTP without console.secure_cookies");
      String visitor = browser.cookie("runway_session");

      String email = "New.Person+" + UUID.randomUUID().toString().substring(0, 6) + "@Example.com";
      Browser.Page done = browser.post("/console/signup", "email", email, "password", PASSWORD);
      assertEquals(303, done.status(), done::toString);
      assertEquals("/console/signin?notice=signed-up", done.header("Location"), "signed in only by signing in");
      Browser.Page signin = browser.get(done.header("Location"));
      assertTrue(signin.body().contains("If this email had no account, it has one now"), signin::toString);
      assertEquals(303, browser.post("/console/signin", "email", email, "password", PASSWORD).status());
      assertNotEquals(visitor, browser.cookie("runway_session"), "a new session id at sign-in");

      Map<String, Object> stored = account(api, email.toLowerCase());
      String hash = (String) stored.get("password_hash");
      assertTrue(hash.startsWith("$argon2id$v=19$m=19456,t=2,p=1$"), hash);
      assertFalse(hash.contains(PASSWORD));
      String workspace = (String) stored.get("workspace_id");
      assertTrue(workspace.startsWith("new-person-"), workspace);
      // Only the session id's hash is stored.
      int plain = api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM console_session WHERE id_hash = :c")
          .bind("c", browser.cookie("runway_session")).mapTo(Integer.class).one());
      assertEquals(0, plain);

      Browser.Page keys = browser.get("/console/keys");
      assertEquals(200, keys.status(), keys::toString);
      assertTrue(keys.body().contains(email.toLowerCase()));
      assertTrue(keys.body().contains(workspace));
      assertTrue(keys.body().contains("No keys yet"));
    });
  }

  @BothDatabases
  void sign_up_refuses_short_and_common_passwords_and_bad_emails(Api api) {
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      browser.get("/console/signup");
      Browser.Page shortOne = browser.post("/console/signup", "email", email(), "password", "short pass");
      assertEquals(400, shortOne.status());
      assertTrue(shortOne.body().contains("at least 12 characters"), shortOne::toString);
      Browser.Page common = browser.post("/console/signup", "email", email(), "password", "Password1234");
      assertEquals(400, common.status());
      assertTrue(common.body().contains("most common"), common::toString);
      Browser.Page badEmail = browser.post("/console/signup", "email", "not an email", "password", PASSWORD);
      assertEquals(400, badEmail.status());
      assertTrue(badEmail.body().contains("like name@example.com"));
      assertTrue(badEmail.body().contains("value=\"not an email\""), "what was typed stays");
      assertFalse(badEmail.body().contains(PASSWORD), "the password is never sent back");
    });
  }

  /** Sign-up tells no one which emails have accounts: a known one gets the new one's answer, and nothing is made. */
  @BothDatabases
  void sign_up_with_a_known_email_answers_as_for_a_new_one_and_makes_nothing(Api api) {
    String code = api.services().accounts().newSetupCode(api.workspace);
    api.test(http -> {
      String email = signUp(new Browser(http.origin()));
      Map<String, Object> before = account(api, email);
      int workspaces = api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM workspace")
          .mapTo(Integer.class).one());

      Browser other = new Browser(http.origin());
      other.get("/console/signup");
      Browser.Page taken = other.post("/console/signup", "email", email.toUpperCase(), "password", PASSWORD + " other",
          "setup_code", code);
      Browser.Page fresh = other.post("/console/signup", "email", email(), "password", PASSWORD);
      assertEquals(303, taken.status(), taken::toString);
      assertEquals(fresh.status(), taken.status());
      assertEquals(fresh.header("Location"), taken.header("Location"));
      assertEquals(fresh.all("Set-Cookie"), taken.all("Set-Cookie"), "neither signs in");
      assertEquals(fresh.body(), taken.body());

      assertEquals(before, account(api, email), "the account is as it was (its password too)");
      assertEquals(workspaces + 1, api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM workspace")
          .mapTo(Integer.class).one()).intValue(), "a workspace for the new email only");
      assertEquals(1, api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM console_setup_code WHERE "
          + "workspace_id = :w").bind("w", api.workspace).mapTo(Integer.class).one()).intValue(), "the code is not used");
      assertEquals(401, other.post("/console/signin", "email", email, "password", PASSWORD + " other").status());
    });
  }

  @BothDatabases
  void a_wrong_password_and_an_unknown_email_get_the_same_answer(Api api) {
    api.test(http -> {
      String email = signUp(new Browser(http.origin()));
      Browser browser = new Browser(http.origin());
      browser.get("/console/signin");
      Browser.Page wrong = browser.post("/console/signin", "email", email, "password", "wrong password 123");
      Browser.Page unknown = browser.post("/console/signin", "email", email(), "password", "wrong password 123");
      assertEquals(401, wrong.status());
      assertEquals(401, unknown.status());
      assertTrue(wrong.body().contains("Wrong email or password."));
      assertEquals(wrong.body().replace(email, "EMAIL").replaceAll("[0-9a-f]{64}", "T"),
          unknown.body().replaceAll("dev-[0-9a-f]{8}@example.com", "EMAIL").replaceAll("[0-9a-f]{64}", "T"));
      Browser.Page right = browser.post("/console/signin", "email", email.toUpperCase(), "password", PASSWORD);
      assertEquals(303, right.status(), right::toString);
      assertEquals(200, browser.get("/console/keys").status());
    });
  }

  @BothDatabases
  void failed_sign_ins_in_a_row_lock_the_account_for_a_while_from_that_address_only(Api api) {
    api.testWithServices(s -> s.with("console.lockout_failures", "3"), http -> {
      String email = signUp(new Browser(http.origin()));
      Browser browser = new Browser(http.origin());
      browser.get("/console/signin");
      for (int i = 0; i < 3; i++) {
        assertEquals(401, browser.post("/console/signin", "email", email, "password", "wrong password 123").status());
      }
      Browser.Page locked = browser.post("/console/signin", "email", email, "password", PASSWORD);
      assertEquals(429, locked.status(), locked::toString);
      assertTrue(locked.body().contains("Too many failed sign-ins. Try again in 15 minutes."), locked::toString);
      String accountId = (String) account(api, email).get("id");
      Map<String, Object> failures = api.jdbi().withHandle(h -> h.createQuery(
          "SELECT client, failures, locked_until FROM console_signin_failure WHERE account_id = :a")
          .bind("a", accountId).mapToMap().one());
      assertEquals("127.0.0.1", failures.get("client"));
      assertNotNull(failures.get("locked_until"));

      // Its owner, from another address (127.0.0.2 is this machine too), still signs in.
      Browser.Page owner = RawForms.post(http.origin(), "127.0.0.2", "/console/signin", browser.cookie("runway_session"),
          "csrf=" + browser.csrf() + "&email=" + email + "&password=" + PASSWORD.replace(' ', '+'));
      assertEquals(303, owner.status(), owner::toString);
      assertEquals("/console/keys", owner.header("Location"));
      browser.get("/console/signin"); // a new visitor session: signing in ended the one the owner used
      assertEquals(429, browser.post("/console/signin", "email", email, "password", PASSWORD).status(),
          "still locked for the address that failed");
      // The command line's reset lifts it.
      api.services().accounts().resetPassword(email, PASSWORD + "!");
      assertEquals(303, browser.post("/console/signin", "email", email, "password", PASSWORD + "!").status());
    });
  }

  /** An email without an account locks out as one with an account does: a 429 tells nothing either. */
  @BothDatabases
  void a_lock_out_tells_nothing_about_whether_an_email_has_an_account(Api api) {
    api.testWithServices(s -> s.with("console.lockout_failures", "3"), http -> {
      String known = signUp(new Browser(http.origin()));
      String unknown = email();
      Browser browser = new Browser(http.origin());
      browser.get("/console/signin");
      for (String email : new String[] {known, unknown}) {
        for (int i = 0; i < 3; i++) {
          assertEquals(401, browser.post("/console/signin", "email", email, "password", "wrong password 123").status());
        }
      }
      Browser.Page knownLocked = browser.post("/console/signin", "email", known, "password", "wrong password 123");
      Browser.Page unknownLocked = browser.post("/console/signin", "email", unknown, "password", "wrong password 123");
      assertEquals(429, knownLocked.status());
      assertEquals(429, unknownLocked.status(), unknownLocked::toString);
      assertEquals(knownLocked.body().replace(known, "EMAIL"), unknownLocked.body().replace(unknown, "EMAIL"));
    });
  }

  @BothDatabases
  void sign_ins_from_one_address_are_rate_limited(Api api) {
    api.testWith(s -> s.with("console.signins_per_minute_per_address", "3"), http -> {
      Browser browser = new Browser(http.origin());
      browser.get("/console/signin");
      for (int i = 0; i < 3; i++) {
        assertEquals(401, browser.post("/console/signin", "email", email(), "password", "wrong password 123").status());
      }
      Browser.Page limited = browser.post("/console/signin", "email", email(), "password", "wrong password 123");
      assertEquals(429, limited.status());
      assertTrue(limited.body().contains("Too many attempts. Try again in"), limited::toString);
      assertTrue(Integer.parseInt(limited.header("Retry-After")) >= 1);
    });
  }

  @BothDatabases
  void forms_without_the_sessions_token_or_from_another_origin_are_refused(Api api) {
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      String email = signUp(browser);
      browser.get("/console/keys");
      String token = browser.csrf();
      Browser.Page none = browser.postWithToken("/console/keys", null, "name", "x", "scope", "runs:read");
      assertEquals(403, none.status());
      Browser.Page wrong = browser.postWithToken("/console/keys", "0".repeat(64), "name", "x", "scope", "runs:read");
      assertEquals(403, wrong.status());
      Browser.Page foreign = browser.postAs("/console/keys", token, "https://evil.example.com", "name", "x",
          "scope", "runs:read");
      assertEquals(403, foreign.status());
      String workspace = (String) account(api, email).get("workspace_id");
      assertEquals(0, api.services().keys().list(workspace).size(), "no key was made");
      Browser.Page sameOrigin = browser.postAs("/console/keys", token, http.origin(), "name", "x", "scope", "runs:read");
      assertEquals(201, sameOrigin.status());
      // Sign-in and sign-up forms carry a token too.
      Browser stranger = new Browser(http.origin());
      assertEquals(403, stranger.postWithToken("/console/signin", null, "email", email, "password", PASSWORD).status());
      assertEquals(403, stranger.postWithToken("/console/signup", null, "email", email(), "password", PASSWORD).status());
      // Sign-out too.
      assertEquals(403, browser.postWithToken("/console/signout", null).status());
      assertEquals(200, browser.get("/console/keys").status(), "still signed in");
    });
  }

  @BothDatabases
  void a_key_is_shown_once_works_on_v1_and_once_revoked_is_refused(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      String email = signUp(browser);
      String workspace = (String) account(api, email).get("workspace_id");
      api.workflowIn(workspace, "hello", false);
      // The form checks every scope but admin and secrets:use (issue 34, item 5: a key that may write
      // workflows and use secrets can send them anywhere; the user opts in).
      String form = browser.get("/console/keys").body();
      assertTrue(checkbox(form, "workflows:write").contains("checked"), form);
      assertFalse(checkbox(form, "secrets:use").contains("checked"), form);
      assertFalse(checkbox(form, "admin").contains("checked"), form);
      String key = createKey(browser, "<b>deploy</b> bot", "runs:write", "runs:read");
      // The page that shows it: no cache; the curl line uses it; the name is escaped.
      Browser.Page keys = browser.get("/console/keys");
      assertFalse(keys.body().contains(key), "the key is never shown again");
      assertTrue(keys.body().contains(key.substring(0, 8) + "…"), "its prefix is");
      assertTrue(keys.body().contains("&lt;b&gt;deploy&lt;/b&gt; bot"), keys::toString);
      assertFalse(keys.body().contains("<b>deploy</b>"));
      String stored = api.jdbi().withHandle(h -> h.createQuery("SELECT key_hash FROM api_key WHERE workspace_id = :w")
          .bind("w", workspace).mapTo(String.class).one());
      assertFalse(stored.contains(key.substring(4)));

      Http.Reply started = http.post("/v1/workflows/hello/runs", key, "{\"project\":\"demo\"}");
      assertEquals(200, started.status(), started::toString);
      assertEquals(200, http.get("/v1/runs", key).status());
      assertEquals(403, http.post("/v1/webhook_endpoints", key, "{}").status(), "only the scopes checked");
      assertTrue(browser.get("/console/keys").body().contains("UTC</td>"), "last used is shown");

      String keyId = api.services().keys().list(workspace).get(0).id();
      Browser.Page confirm = browser.get("/console/keys/" + keyId + "/revoke");
      assertEquals(200, confirm.status());
      assertTrue(confirm.body().contains("Revoke this key?"));
      Browser.Page revoked = browser.post("/console/keys/" + keyId + "/revoke");
      assertEquals(303, revoked.status());
      assertEquals("/console/keys?revoked=" + keyId, revoked.header("Location"));
      assertTrue(browser.get(revoked.header("Location")).body().contains("revoked: it is refused from now on"));
      assertEquals(401, http.get("/v1/runs", key).status());
      assertNotNull(api.services().keys().find(keyId).orElseThrow().revokedAt());
    });
  }

  @BothDatabases
  void the_command_shown_with_a_new_key_works_as_pasted(Api api) {
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      String email = signUp(browser); // a new workspace: no workflows yet
      browser.get("/console/keys");
      Browser.Page made = browser.post("/console/keys", "name", "first", "expiry", "never", "scope", "runs:write",
          "scope", "runs:read", "scope", "workflows:write");
      assertTrue(made.body().contains("no workflows yet"), made::toString);
      String command = made.body().replaceAll("(?s).*<pre id=\"curl\">(.*?)</pre>.*", "$1")
          .replace("&#34;", "\"").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
          .replace("&lt;", "<").replace("&gt;", ">");
      Process shell = new ProcessBuilder("bash", "-c", command).redirectErrorStream(true).start();
      String out = new String(shell.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      assertEquals(0, shell.waitFor(), out);
      assertTrue(out.contains("{\"id\":\"run_"), () -> command + "\n" + out);
      String workspace = (String) account(api, email).get("workspace_id");
      assertEquals(1, api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM run WHERE workspace_id = :w")
          .bind("w", workspace).mapTo(Integer.class).one()).intValue());
      // With a workflow in the workspace, the command starts a run of it.
      Browser.Page second = browser.post("/console/keys", "name", "second", "expiry", "never", "scope", "runs:write");
      assertTrue(second.body().contains("Start a run of the workflow hello with it:"), second::toString);
    });
  }

  @BothDatabases
  void an_account_never_reaches_another_workspaces_keys(Api api) {
    api.test(http -> {
      Browser alice = new Browser(http.origin());
      String aliceEmail = signUp(alice);
      createKey(alice, "alice's", "runs:read");
      String aliceWorkspace = (String) account(api, aliceEmail).get("workspace_id");
      String aliceKeyId = api.services().keys().list(aliceWorkspace).get(0).id();

      Browser bob = new Browser(http.origin());
      signUp(bob);
      Browser.Page keys = bob.get("/console/keys");
      assertFalse(keys.body().contains("alice's"));
      assertFalse(keys.body().contains(aliceKeyId));
      assertEquals(404, bob.get("/console/keys/" + aliceKeyId + "/revoke").status());
      assertEquals(404, bob.post("/console/keys/" + aliceKeyId + "/revoke").status());
      assertNull(api.services().keys().find(aliceKeyId).orElseThrow().revokedAt(), "alice's key still works");
      // The first start's workspace is no one's without its setup code.
      assertFalse(keys.body().contains(api.workspace));
    });
  }

  @BothDatabases
  void a_session_cookie_never_authenticates_v1(Api api) {
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      signUp(browser);
      Http.Reply v1 = http.send("GET", "/v1/runs", null, null, null, "Cookie",
          "runway_session=" + browser.cookie("runway_session"));
      assertEquals(401, v1.status());
    });
  }

  @BothDatabases
  void sign_out_ends_the_session_and_idle_or_old_sessions_end_by_themselves(Api api) {
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      String email = signUp(browser);
      String cookie = browser.cookie("runway_session");
      browser.get("/console/keys");
      Browser.Page out = browser.post("/console/signout");
      assertEquals(303, out.status());
      assertEquals("/console/signin", out.header("Location"));
      assertTrue(out.header("Set-Cookie").contains("Max-Age=0"));
      browser.setCookie("runway_session", cookie); // a copy kept
      assertEquals(303, browser.get("/console/keys").status(), "the session is gone from the database");
      String accountId = (String) account(api, email).get("id");

      // Idle: its last request longer ago than console.session_idle_minutes (720).
      Browser idle = new Browser(http.origin());
      idle.get("/console/signin");
      assertEquals(303, idle.post("/console/signin", "email", email, "password", PASSWORD).status());
      api.jdbi().useHandle(h -> h.createUpdate("UPDATE console_session SET last_seen_at = :t WHERE account_id = :a")
          .bind("t", java.time.Instant.now().minus(java.time.Duration.ofMinutes(721))).bind("a", accountId).execute());
      assertEquals(303, idle.get("/console/keys").status());

      // Old: past console.session_max_hours since sign-in, however busy.
      Browser old = new Browser(http.origin());
      old.get("/console/signin");
      assertEquals(303, old.post("/console/signin", "email", email, "password", PASSWORD).status());
      api.jdbi().useHandle(h -> h.createUpdate("UPDATE console_session SET expires_at = :t WHERE account_id = :a")
          .bind("t", java.time.Instant.now().minusSeconds(1)).bind("a", accountId).execute());
      assertEquals(303, old.get("/console/keys").status());
      int left = api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM console_session WHERE account_id = :a")
          .bind("a", accountId).mapTo(Integer.class).one());
      assertEquals(0, left);
    });
  }

  @BothDatabases
  void closed_sign_up_leaves_accounts_to_the_command_line(Api api) {
    api.testWith(s -> s.with("console.signup", "closed"), http -> {
      Browser browser = new Browser(http.origin());
      Browser.Page page = browser.get("/console/signup");
      assertEquals(403, page.status());
      assertTrue(page.body().contains("Sign-up is closed"));
      assertEquals(403, browser.post("/console/signup", "email", email(), "password", PASSWORD).status());
      String email = email();
      api.services().accounts().create(email, PASSWORD, api.workspace);
      browser.get("/console/signin");
      assertEquals(303, browser.post("/console/signin", "email", email, "password", PASSWORD).status());
      assertTrue(browser.get("/console/keys").body().contains(api.workspace));
    });
  }

  @BothDatabases
  void the_setup_code_lets_the_first_account_take_the_first_starts_workspace_once(Api api) {
    String code = api.services().accounts().newSetupCode(api.workspace);
    api.test(http -> {
      Browser first = new Browser(http.origin());
      first.get("/console/signup");
      Browser.Page wrong = first.post("/console/signup", "email", email(), "password", PASSWORD, "setup_code", "nope");
      assertEquals(400, wrong.status());
      assertTrue(wrong.body().contains("This setup code is not valid"));
      String email = email();
      assertEquals(303, first.post("/console/signup", "email", email, "password", PASSWORD, "setup_code", code).status());
      assertEquals(api.workspace, account(api, email).get("workspace_id"));
      Browser second = new Browser(http.origin());
      second.get("/console/signup");
      assertEquals(400, second.post("/console/signup", "email", email(), "password", PASSWORD, "setup_code", code)
          .status(), "used once");
    });
  }

  @BothDatabases
  void a_setup_code_expires_24_hours_after_it_is_made_and_the_command_line_makes_a_new_one(Api api) {
    String code = api.services().accounts().newSetupCode(api.workspace);
    api.jdbi().useHandle(h -> h.createUpdate("UPDATE console_setup_code SET created_at = :t WHERE workspace_id = :w")
        .bind("t", java.time.Instant.now().minus(java.time.Duration.ofHours(24)).minusSeconds(5))
        .bind("w", api.workspace).execute());
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      browser.get("/console/signup");
      Browser.Page old = browser.post("/console/signup", "email", email(), "password", PASSWORD, "setup_code", code);
      assertEquals(400, old.status(), old::toString);
      assertTrue(old.body().contains("more than 24 hours old"), old::toString);
      String fresh = api.services().accounts().newSetupCode(api.workspace);
      String email = email();
      assertEquals(303, browser.post("/console/signup", "email", email, "password", PASSWORD, "setup_code", fresh)
          .status());
      assertEquals(api.workspace, account(api, email).get("workspace_id"));
    });
  }
}
