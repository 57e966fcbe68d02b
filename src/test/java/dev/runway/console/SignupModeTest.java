package dev.runway.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.cli.AccountsCommand;
import dev.runway.config.Settings;
import dev.runway.config.SettingsException;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Browser;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * console.signup: auto (open on a loopback address, closed beyond it), open, closed, and invite
 * (accounts by one-use invitations from {@code runway accounts invite}).
 */
class SignupModeTest {
  private static final String PASSWORD = "correct horse battery staple 7";
  private static final Pattern LINK = Pattern.compile("/console/signup\\?code=(inv_[A-Za-z0-9_-]+)");

  private static String email() {
    return "dev-" + UUID.randomUUID().toString().substring(0, 8) + "@example.com";
  }

  private static ConsoleSettings.Signup mode(String signup, String host) {
    return ConsoleSettings.from(Settings.defaults().with("console.signup", signup).with("http.host", host)).signup();
  }

  private static int accounts(Api api, String email) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM account WHERE email = :e").bind("e", email)
        .mapTo(Integer.class).one());
  }

  private static String workspaceOf(Api api, String email) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT workspace_id FROM account WHERE email = :e")
        .bind("e", email).mapTo(String.class).one());
  }

  /** Runs {@code runway accounts invite ...}; returns the code from the link it printed. */
  private static String invite(Api api, String... options) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    String[] args = new String[options.length + 1];
    args[0] = "invite";
    System.arraycopy(options, 0, args, 1, options.length);
    int exit = new AccountsCommand(api.services().accounts(), new PrintStream(bytes, true, StandardCharsets.UTF_8),
        new BufferedReader(new StringReader("")), null, "http://runway.example.com").run(List.of(args));
    assertEquals(0, exit);
    String out = bytes.toString(StandardCharsets.UTF_8);
    Matcher m = LINK.matcher(out);
    assertTrue(m.find(), out);
    assertTrue(out.contains("http://runway.example.com/console/signup?code="), out);
    assertEquals(m.group(1), out.lines().findFirst().orElseThrow(), "the code alone on the first line");
    return m.group(1);
  }

  @Test
  void auto_is_open_on_a_loopback_address_and_closed_beyond_it() {
    assertEquals("auto", Settings.defaults().string("console.signup"));
    for (String loopback : List.of("127.0.0.1", "127.0.1.1", "::1", "[::1]", "localhost")) {
      assertEquals(ConsoleSettings.Signup.OPEN, mode("auto", loopback), loopback);
    }
    for (String beyond : List.of("0.0.0.0", "::", "192.168.1.20", "runway.example.com")) {
      assertEquals(ConsoleSettings.Signup.CLOSED, mode("auto", beyond), beyond);
    }
    assertEquals(ConsoleSettings.Signup.OPEN, mode("open", "0.0.0.0"));
    assertEquals(ConsoleSettings.Signup.CLOSED, mode("closed", "127.0.0.1"));
    assertEquals(ConsoleSettings.Signup.INVITE, mode("invite", "0.0.0.0"));
    SettingsException bad = org.junit.jupiter.api.Assertions.assertThrows(SettingsException.class,
        () -> mode("maybe", "127.0.0.1"));
    assertTrue(bad.getMessage().contains("console.signup"), bad.getMessage());
  }

  @BothDatabases
  void a_server_listening_beyond_loopback_refuses_sign_up_by_default_with_a_clear_page(Api api) {
    api.testWith(s -> s.with("http.host", "0.0.0.0"), http -> {
      Browser browser = new Browser(http.origin());
      Browser.Page page = browser.get("/console/signup");
      assertEquals(403, page.status());
      assertTrue(page.body().contains("Sign-up is closed"), page::toString);
      assertFalse(page.body().contains("name=\"password\""), "no form");
      String email = email();
      assertEquals(403, browser.post("/console/signup", "email", email, "password", PASSWORD).status());
      assertEquals(0, accounts(api, email));
      // An invitation does not open a closed server either.
      String code = invite(api);
      assertEquals(403, browser.post("/console/signup", "email", email, "password", PASSWORD, "setup_code", code)
          .status());
      assertEquals(0, accounts(api, email));
    });
  }

  @BothDatabases
  void by_invitation_an_account_needs_a_code_which_works_once(Api api) {
    api.testWith(s -> s.with("console.signup", "invite"), http -> {
      Browser browser = new Browser(http.origin());
      Browser.Page page = browser.get("/console/signup");
      assertEquals(200, page.status());
      assertTrue(page.body().contains("by invitation"), page::toString);
      String email = email();
      Browser.Page without = browser.post("/console/signup", "email", email, "password", PASSWORD);
      assertEquals(400, without.status());
      assertTrue(without.body().contains("enter the invitation code"), without::toString);
      Browser.Page wrong = browser.post("/console/signup", "email", email, "password", PASSWORD, "setup_code",
          "inv_made-up");
      assertEquals(400, wrong.status());
      assertEquals(0, accounts(api, email));

      String code = invite(api);
      Browser.Page linked = browser.get("/console/signup?code=" + code);
      assertTrue(linked.body().contains("value=\"" + code + "\""), "the link fills the code in");
      Browser.Page done = browser.post("/console/signup", "email", email, "password", PASSWORD, "setup_code", code);
      assertEquals(303, done.status(), done::toString);
      assertEquals("/console/signin?notice=signed-up", done.header("Location"));
      assertNotEquals(api.workspace, workspaceOf(api, email), "a workspace of its own");

      Browser other = new Browser(http.origin());
      other.get("/console/signup");
      String second = email();
      Browser.Page again = other.post("/console/signup", "email", second, "password", PASSWORD, "setup_code", code);
      assertEquals(400, again.status(), "used once");
      assertEquals(0, accounts(api, second));

      // An invitation into a named workspace; an expired one is refused.
      String into = invite(api, "--workspace", api.workspace, "--days", "2");
      other.get("/console/signup");
      assertEquals(303, other.post("/console/signup", "email", second, "password", PASSWORD, "setup_code", into)
          .status());
      assertEquals(api.workspace, workspaceOf(api, second));
      String expired = api.services().accounts().invite(null, Duration.ZERO);
      Browser third = new Browser(http.origin());
      third.get("/console/signup");
      String late = email();
      assertEquals(400, third.post("/console/signup", "email", late, "password", PASSWORD, "setup_code", expired)
          .status());
      assertEquals(0, accounts(api, late));
    });
  }

  @BothDatabases
  void open_sign_up_needs_no_code_and_takes_an_invitation_too(Api api) {
    api.testWith(s -> s.with("console.signup", "open").with("http.host", "0.0.0.0"), http -> {
      Browser browser = new Browser(http.origin());
      assertEquals(200, browser.get("/console/signup").status());
      String email = email();
      assertEquals(303, browser.post("/console/signup", "email", email, "password", PASSWORD).status());
      assertEquals(1, accounts(api, email));
      String code = invite(api, "--workspace", api.workspace);
      Browser other = new Browser(http.origin());
      other.get("/console/signup");
      String invited = email();
      assertEquals(303, other.post("/console/signup", "email", invited, "password", PASSWORD, "setup_code", code)
          .status());
      assertEquals(api.workspace, workspaceOf(api, invited));
    });
  }
}
