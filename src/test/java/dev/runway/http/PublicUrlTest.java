package dev.runway.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.ServerSettings;
import dev.runway.config.Settings;
import dev.runway.config.SettingsException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The server's public address: http.public_url when set, else made from the host and the port it listens on. */
class PublicUrlTest {

  @Test
  void without_a_setting_it_is_the_host_and_the_port_listened_on_once_known() {
    AtomicInteger port = new AtomicInteger(0);
    PublicUrl url = new PublicUrl("", "127.0.0.1", port::get);
    port.set(41234); // http.port=0: known once the server listens
    assertEquals("http://127.0.0.1:41234", url.base());
    assertEquals("http://127.0.0.1:8080", new PublicUrl("", "0.0.0.0", () -> 8080).base(), "0.0.0.0 is no address to call");
    assertEquals("http://[::1]:8080", new PublicUrl("", "::1", () -> 8080).base());
    assertEquals("http://runway.internal:8080", new PublicUrl("", "runway.internal", () -> 8080).base());
  }

  @Test
  void the_setting_wins_without_its_trailing_slash() {
    assertEquals("https://runway.example.com", new PublicUrl("https://runway.example.com/", "0.0.0.0", () -> 8080).base());
    ServerSettings settings = ServerSettings.from(Settings.defaults().with("http.public_url", "https://runway.example.com/x/"));
    assertEquals("https://runway.example.com/x", settings.publicUrl(() -> 1).base());
  }

  @Test
  void a_public_url_that_is_not_an_http_url_is_refused_at_start() {
    for (String bad : new String[] {"ftp://runway.example.com", "runway.example.com", "https://", "https://x?y=1", "http://a b"}) {
      SettingsException e = assertThrows(SettingsException.class,
          () -> ServerSettings.from(Settings.defaults().with("http.public_url", bad)), bad);
      assertTrue(e.getMessage().contains("http.public_url"), e.getMessage());
    }
  }
}
