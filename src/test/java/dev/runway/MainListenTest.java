package dev.runway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.javalin.Javalin;
import io.javalin.util.JavalinBindException;
import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/** The line a server that cannot listen ends with: what is wrong, and which setting to change. */
class MainListenTest {

  @Test
  void a_port_in_use_is_named_with_the_setting_to_change() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 0, InetAddress.getLoopbackAddress())) {
      Javalin app = Javalin.create(config -> {
        config.startup.showJavalinBanner = false;
        config.jetty.host = "127.0.0.1";
        config.jetty.port = taken.getLocalPort();
      });
      JavalinBindException e = assertThrows(JavalinBindException.class, app::start);

      assertEquals("the port is in use (set http.port or RUNWAY_HTTP_PORT)", Main.whyNotListening(e));
    }
  }

  @Test
  void another_reason_not_to_listen_is_passed_on() {
    JavalinBindException e = new JavalinBindException("Port already in use. Make sure no other process is using port 80",
        new IOException("Failed to bind to /127.0.0.1:80", new BindException("Permission denied")));

    assertEquals("Permission denied (check http.host and http.port)", Main.whyNotListening(e));
  }
}
