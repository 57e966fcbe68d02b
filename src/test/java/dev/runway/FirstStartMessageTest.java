package dev.runway;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.config.Settings;
import org.junit.jupiter.api.Test;

/** The first start's lines on the console follow console.signup: no setup code to sign up with where sign-up is closed. */
class FirstStartMessageTest {
  @Test
  void on_loopback_the_setup_code_is_offered_beyond_it_the_accounts_command() {
    String local = Main.consoleLines(ServerSettings.from(Settings.defaults()), "http://127.0.0.1:8080", "CODE123");
    assertTrue(local.contains("CODE123"), local);
    assertTrue(local.contains("http://127.0.0.1:8080/console"), local);

    String beyond = Main.consoleLines(ServerSettings.from(Settings.defaults().with("http.host", "0.0.0.0")),
        "http://127.0.0.1:8080", "CODE123");
    assertFalse(beyond.contains("CODE123"), beyond);
    assertTrue(beyond.contains("Sign-up is closed"), beyond);
    assertTrue(beyond.contains("accounts create --email"), beyond);
  }
}
