package dev.runway.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Browser;
import dev.runway.support.Http;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The console's request bodies, sent by strangers: received like /v1's (before a place in flight,
 * bounded, in time, counted by client address), only url-encoded forms of at most 16 KB, and no
 * field echoed beyond its bound, whatever the answer (400, 403, 429).
 */
class ConsoleBodiesTest {
  /** A chunked form of 1 MB is refused 413 by the reception, before the console parses a byte of it. */
  @BothDatabases
  void a_chunked_form_of_1_mb_is_413_without_being_parsed(Api api) throws Exception {
    api.test(http -> {
      byte[] form = ("csrf=x&password=y&email=" + "a".repeat(1_000_000) + "@example.com")
          .getBytes(StandardCharsets.US_ASCII);
      Http.Reply reply = Http.at(http.origin(), null).sendPublisher("POST", "/console/signin", null,
          HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(form)), // chunked
          "application/x-www-form-urlencoded");
      assertEquals(413, reply.status(), reply::body);
      assertTrue(reply.body().contains("\"code\":\"body_too_large\""), reply::body);
      assertTrue(reply.body().contains("16384 bytes"), reply::body);
      assertFalse(reply.body().contains("aaaa"), "nothing of it comes back");

      // Declared too large: refused from the headers, before a byte of the body is sent (a client that
      // sent 1 MB at once could lose the answer to the reset of the connection the server closes).
      try (Socket socket = new Socket(URI.create(http.origin()).getHost(), URI.create(http.origin()).getPort())) {
        socket.setSoTimeout(10_000);
        socket.getOutputStream().write(("POST /console/signup HTTP/1.1\r\nHost: localhost\r\n"
            + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " + form.length + "\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII));
        byte[] head = new byte[12];
        int read = 0;
        for (int n; read < head.length && (n = socket.getInputStream().read(head, read, head.length - read)) > 0; ) {
          read += n;
        }
        assertEquals("HTTP/1.1 413", new String(head, 0, read, StandardCharsets.US_ASCII));
      }
      assertEquals(200, http.get("/healthz").status());
    });
  }

  @BothDatabases
  void a_console_post_that_is_not_a_url_encoded_form_is_415(Api api) throws Exception {
    api.test(http -> {
      Browser browser = new Browser(http.origin());
      browser.get("/console/signin");
      String token = browser.csrf();
      Http console = Http.at(http.origin(), null);
      for (String type : new String[] {"multipart/form-data; boundary=xyz", "text/plain", "application/json"}) {
        String body = type.startsWith("multipart") ? "--xyz\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n"
            + token + "\r\n--xyz--\r\n" : "csrf=" + token + "&email=a@example.com&password=whatever";
        Http.Reply reply = console.send("POST", "/console/signin", null, body, type,
            "Cookie", "runway_session=" + browser.cookie("runway_session"));
        assertEquals(415, reply.status(), () -> type + ": " + reply.body());
        assertTrue(reply.body().contains("application/x-www-form-urlencoded"), reply::body);
        assertTrue(String.valueOf(reply.header("Content-Type")).startsWith("text/html"));
      }
    });
  }

  /** What was typed comes back in the page only within its field's bound, also on 403 and 429 answers. */
  @BothDatabases
  void what_a_page_echoes_is_bounded(Api api) throws Exception {
    api.testWith(s -> s.with("console.signins_per_minute_per_address", "2"), http -> {
      String longEmail = "b".repeat(10_000) + "@example.com";
      Browser browser = new Browser(http.origin());
      browser.get("/console/signin");
      Browser.Page tooLong = browser.post("/console/signin", "email", longEmail, "password", "whatever it is 1");
      assertEquals(400, tooLong.status(), tooLong::toString);
      assertTrue(tooLong.body().contains("The field email is too long: at most 254 characters."), tooLong::toString);
      assertFalse(tooLong.body().contains("bbbbbbbbbb"), "not echoed");
      // Without a token (which would be 403): refused the same, before anything is echoed.
      Browser.Page noToken = browser.postWithToken("/console/signin", null, "email", longEmail, "password", "x");
      assertEquals(400, noToken.status());
      assertFalse(noToken.body().contains("bbbbbbbbbb"));
      // A long field of a name the console does not know.
      Browser.Page unknown = browser.post("/console/signup", "email", "a@example.com", "other", "c".repeat(5000));
      assertEquals(400, unknown.status());
      assertFalse(unknown.body().contains("cccccccccc"));
      // 403 and 429 pages show what was typed within its bound.
      String email = "d".repeat(240) + "@example.com";
      Browser.Page forbidden = browser.postWithToken("/console/signin", null, "email", email, "password", "x");
      assertEquals(403, forbidden.status());
      assertTrue(forbidden.body().contains("value=\"" + email + "\""), forbidden::toString);
      assertEquals(401, browser.post("/console/signin", "email", email, "password", "wrong password 123").status());
      assertEquals(401, browser.post("/console/signin", "email", email, "password", "wrong password 123").status());
      Browser.Page limited = browser.post("/console/signin", "email", email, "password", "wrong password 123");
      assertEquals(429, limited.status(), limited::toString);
      assertTrue(limited.body().length() < 10_000, "a page of its own size, whatever was sent");
    });
  }

  /**
   * 60 strangers post to the sign-in form and send its body a byte at a time; meanwhile /v1 run
   * starts are served at once (they used to be 503: each slow console body held a place in flight
   * and a thread), and each slow post ends 408 when its time is up.
   */
  @BothDatabases
  void slow_console_bodies_hold_no_place_in_flight_and_v1_starts_are_served(Api api) throws Exception {
    api.workflow("hello", false);
    api.testWith(s -> s.with("http.max_in_flight", "10").with("http.body_timeout_ms", "5000")
        .with("http.max_pending_bodies_per_address", "1000"), http -> {
      URI origin = URI.create(http.origin());
      List<Socket> slow = new ArrayList<>();
      try {
        for (int i = 0; i < 60; i++) {
          Socket socket = new Socket(origin.getHost(), origin.getPort());
          socket.getOutputStream().write(head("/console/signin", 2000, "application/x-www-form-urlencoded"));
          socket.getOutputStream().flush();
          slow.add(socket);
        }
        long started = System.nanoTime();
        for (int round = 0; round < 3; round++) {
          for (Socket socket : slow) {
            socket.getOutputStream().write('e');
            socket.getOutputStream().flush();
          }
          for (int i = 0; i < 3; i++) {
            Http.Reply run = http.startRun("hello", "demo");
            assertEquals(200, run.status(), run::toString);
          }
          assertEquals(200, http.get("/console/signin").status(), "the console's pages too");
          Thread.sleep(300);
        }
        assertTrue((System.nanoTime() - started) / 1_000_000 < 5000, "all checked before the slow ones timed out");
        for (Socket socket : slow) {
          socket.setSoTimeout(15_000);
          Browser.Page reply = RawForms.read(socket.getInputStream());
          assertEquals(408, reply.status(), reply::toString);
        }
      } finally {
        for (Socket socket : slow) {
          socket.close();
        }
      }
      assertEquals(9, api.countRuns(""));
    });
  }

  /** One client address may have only so many bodies still arriving without a key: its next is refused at once. */
  @BothDatabases
  void an_address_with_too_many_bodies_still_arriving_gets_429(Api api) throws Exception {
    api.testWith(s -> s.with("http.max_pending_bodies_per_address", "3"), http -> {
      URI origin = URI.create(http.origin());
      List<Socket> slow = new ArrayList<>();
      try {
        for (int i = 0; i < 3; i++) {
          Socket socket = new Socket(origin.getHost(), origin.getPort());
          socket.getOutputStream().write(head("/console/signup", 100, "application/x-www-form-urlencoded"));
          socket.getOutputStream().flush();
          slow.add(socket);
        }
        Thread.sleep(300);
        try (Socket fourth = new Socket(origin.getHost(), origin.getPort())) {
          fourth.getOutputStream().write(head("/console/signin", 100, "application/x-www-form-urlencoded"));
          fourth.getOutputStream().flush();
          fourth.setSoTimeout(5000);
          Browser.Page refused = RawForms.read(fourth.getInputStream());
          assertEquals(429, refused.status(), refused::toString);
          assertEquals("1", refused.header("Retry-After"));
          assertTrue(refused.body().contains("this client address has 3 request bodies still arriving"), refused::toString);
        }
        for (Socket socket : slow) { // finished, each is served (here: refused for its missing token)
          OutputStream out = socket.getOutputStream();
          out.write(("csrf=0&" + "x".repeat(93)).getBytes(StandardCharsets.US_ASCII));
          out.flush();
          socket.setSoTimeout(5000);
          assertEquals(403, RawForms.read(socket.getInputStream()).status());
        }
      } finally {
        for (Socket socket : slow) {
          socket.close();
        }
      }
      assertEquals(200, new Browser(http.origin()).get("/console/signin").status());
    });
  }

  private static byte[] head(String path, int length, String type) throws IOException {
    return ("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + type + "\r\nContent-Length: " + length
        + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
  }
}
