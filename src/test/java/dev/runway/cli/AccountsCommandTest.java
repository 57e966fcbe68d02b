package dev.runway.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Browser;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;

/** {@code runway accounts create|reset-password}, driven directly (the password on stdin), then used to sign in. */
class AccountsCommandTest {
  private static int accounts(Api api, String stdin, ByteArrayOutputStream bytes, String... args) {
    PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    return new AccountsCommand(api.services().accounts(), out, new BufferedReader(new StringReader(stdin)), null)
        .run(List.of(args));
  }

  @BothDatabases
  void an_account_made_and_reset_on_the_command_line_signs_in(Api api) {
    String email = "ops-" + UUID.randomUUID().toString().substring(0, 8) + "@example.com";
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    assertEquals(0, accounts(api, "first password 123\n", out, "create", "--email", email, "--workspace", api.workspace));
    assertEquals("created account " + email + " in workspace " + api.workspace, out.toString().strip());
    assertEquals(1, accounts(api, "short\n", new ByteArrayOutputStream(), "create", "--email", "x" + email),
        "a password the console would refuse");
    assertEquals(1, accounts(api, "first password 123\n", new ByteArrayOutputStream(), "create", "--email", email),
        "an email taken");
    assertEquals(0, accounts(api, "second password 456\n", new ByteArrayOutputStream(), "reset-password", "--email",
        email.toUpperCase()));
    assertEquals(1, accounts(api, "second password 456\n", new ByteArrayOutputStream(), "reset-password", "--email",
        "nobody@example.com"));
    assertThrows(IllegalArgumentException.class, () -> accounts(api, "", new ByteArrayOutputStream(), "create"));
    assertThrows(IllegalArgumentException.class, () -> accounts(api, "", new ByteArrayOutputStream(), "delete"));
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      browser.get("/console/signin");
      assertEquals(401, browser.post("/console/signin", "email", email, "password", "first password 123").status());
      assertEquals(303, browser.post("/console/signin", "email", email, "password", "second password 456").status());
      assertTrue(browser.get("/console/keys").body().contains(api.workspace));
    });
  }

  @BothDatabases
  void setup_code_prints_a_new_code_that_takes_the_workspace_once(Api api) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    assertEquals(0, accounts(api, "", out, "setup-code", "--workspace", api.workspace));
    String code = out.toString(StandardCharsets.UTF_8).strip();
    assertTrue(code.matches("[A-Za-z0-9_-]{20}"), code);
    assertEquals(1, accounts(api, "", new ByteArrayOutputStream(), "setup-code", "--workspace", "no-such-ws"));
    String email = "first-" + UUID.randomUUID().toString().substring(0, 8) + "@example.com";
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      browser.get("/console/signup");
      assertEquals(303, browser.post("/console/signup", "email", email, "password", "first password 123",
          "setup_code", code).status());
      browser.get("/console/signin");
      assertEquals(303, browser.post("/console/signin", "email", email, "password", "first password 123").status());
      assertTrue(browser.get("/console/keys").body().contains(api.workspace));
    });
  }
}
