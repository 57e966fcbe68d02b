package dev.runway.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.config.Settings;
import dev.runway.config.SettingsException;
import org.junit.jupiter.api.Test;

/** Who may scrape /metrics, decided from the client's address, its proxy headers and its token. */
class MetricsAccessTest {
  private static final String TOKEN = "scrape-token-0123456789abcdef";

  @Test
  void clients_on_this_machine_may_scrape_without_a_token() {
    MetricsAccess access = new MetricsAccess("");
    assertTrue(access.allows("127.0.0.1", false, null));
    assertTrue(access.allows("127.0.0.53", false, null), "all of 127/8 is loopback");
    assertTrue(access.allows("0:0:0:0:0:0:0:1", false, null));
    assertTrue(access.allows("[::1]", false, null));
    assertTrue(access.allows("::ffff:127.0.0.1", false, null), "IPv4 loopback mapped into IPv6");
  }

  @Test
  void other_addresses_are_refused_without_a_token_set() {
    MetricsAccess access = new MetricsAccess("");
    assertFalse(access.allows("10.1.2.3", false, null));
    assertFalse(access.allows("192.168.1.20", false, "Bearer " + TOKEN), "no token is set: none opens it");
    assertFalse(access.allows("2001:db8::1", false, null));
    assertFalse(access.allows(null, false, null));
  }

  @Test
  void a_request_a_local_proxy_passed_on_is_not_local() {
    MetricsAccess access = new MetricsAccess("");
    assertFalse(access.allows("127.0.0.1", true, null));
    assertTrue(new MetricsAccess(TOKEN).allows("127.0.0.1", true, "Bearer " + TOKEN));
  }

  @Test
  void with_a_token_set_other_addresses_need_it_as_a_bearer_token() {
    MetricsAccess access = new MetricsAccess(TOKEN);
    assertTrue(access.allows("10.1.2.3", false, "Bearer " + TOKEN));
    assertTrue(access.allows("10.1.2.3", false, "bearer   " + TOKEN + " "), "the scheme in any case, spaces around");
    assertFalse(access.allows("10.1.2.3", false, null));
    assertFalse(access.allows("10.1.2.3", false, ""));
    assertFalse(access.allows("10.1.2.3", false, TOKEN), "the scheme is needed");
    assertFalse(access.allows("10.1.2.3", false, "Basic " + TOKEN));
    assertFalse(access.allows("10.1.2.3", false, "Bearer " + TOKEN.substring(1)));
    assertFalse(access.allows("10.1.2.3", false, "Bearer " + TOKEN + "x"));
    assertFalse(access.allows("10.1.2.3", false, "Bearer " + TOKEN.toUpperCase()));
    assertTrue(access.allows("127.0.0.1", false, null), "this machine still needs none");
  }

  @Test
  void only_address_literals_are_read_never_names_to_resolve() {
    assertTrue(MetricsAccess.isLoopback("127.0.0.1"));
    assertFalse(MetricsAccess.isLoopback("localhost"));
    assertFalse(MetricsAccess.isLoopback("loopback.example"));
    assertFalse(MetricsAccess.isLoopback(""));
    assertFalse(MetricsAccess.isLoopback("[]"));
  }

  @Test
  void a_short_token_stops_start_up_naming_the_setting() {
    SettingsException e = assertThrows(SettingsException.class,
        () -> MetricsSettings.from(Settings.defaults().with("metrics.token", "short")));
    assertTrue(e.getMessage().contains("metrics.token"), e.getMessage());
    assertFalse(e.getMessage().contains("short'"), "a secret's value is never shown: " + e.getMessage());
    MetricsSettings fine = MetricsSettings.from(Settings.defaults().with("metrics.token", TOKEN));
    assertTrue(fine.hasToken());
    assertFalse(fine.toString().contains(TOKEN), "the token is never shown");
    MetricsSettings defaults = MetricsSettings.from(Settings.defaults());
    assertTrue(defaults.enabled());
    assertEquals("", defaults.token());
  }
}
