package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.auth.Scope;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.HeldCommits;
import dev.runway.support.Http;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Clients that send slowly, or send too much at once, hold nothing that other callers need: a body
 * still arriving holds no place among the requests in flight (nor a thread), must arrive in time,
 * and one address or one key can take only so much.
 */
class SlowClientsTest {
  private static final String BODY = "{\"project\":\"demo\",\"inputs\":{\"pad\":\"" + "x".repeat(950) + "\"}}";

  /**
   * 165 connections of one key send their headers and then a byte every half second or so; meanwhile
   * every request of another key is served at once (it used to be 503: the slow bodies held every
   * place in flight), and each slow request ends 408 once its time is up.
   */
  @BothDatabases
  void bodies_still_arriving_hold_no_place_in_flight_and_end_408(Api api) throws Exception {
    api.workflow("hello", false);
    String slowKey = api.key(Scope.RUNS_WRITE);
    api.testWith(s -> s.with("http.max_in_flight", "20").with("http.body_timeout_ms", "6000")
        .with("http.max_pending_bodies_per_key", "1000").with("ratelimit.per_key_per_second", "0"), http -> {
      URI origin = URI.create(http.origin());
      List<Socket> slow = new ArrayList<>();
      try {
        for (int i = 0; i < 165; i++) {
          Socket socket = new Socket(origin.getHost(), origin.getPort());
          socket.getOutputStream().write(head(slowKey, BODY.length(), false));
          slow.add(socket);
        }
        long started = System.nanoTime();
        for (int round = 0; round < 4; round++) {
          for (Socket socket : slow) {
            socket.getOutputStream().write(BODY.charAt(round));
          }
          for (int i = 0; i < 5; i++) {
            long t0 = System.nanoTime();
            Http.Reply other = http.startRun("hello", "demo");
            assertEquals(200, other.status(), other::toString);
            assertTrue((System.nanoTime() - t0) / 1_000_000 < 2000, "answered at once");
          }
          assertEquals(200, http.get("/v1/runs").status());
          Thread.sleep(500);
        }
        assertTrue((System.nanoTime() - started) / 1_000_000 < 6000, "all checked before the slow ones timed out");
        for (Socket socket : slow) {
          String response = response(socket, 8000);
          assertTrue(response.startsWith("HTTP/1.1 408"), response);
          assertTrue(response.contains("\"code\":\"request_timeout\""), response);
          assertTrue(response.toLowerCase(Locale.ROOT).contains("application/problem+json"), response);
        }
      } finally {
        for (Socket socket : slow) {
          socket.close();
        }
      }
      assertEquals(20, api.countRuns(""), "only the other key's runs were stored");
      assertEquals(200, http.startRun("hello", "demo").status(), "the server goes on");
    });
  }

  /** A body that arrives in pieces within its time is served as if it had come at once, 100-continue too. */
  @BothDatabases
  void a_body_sent_in_pieces_or_after_100_continue_is_served(Api api) throws Exception {
    api.workflow("hello", false);
    api.test(http -> {
      URI origin = URI.create(http.origin());
      try (Socket socket = new Socket(origin.getHost(), origin.getPort())) {
        OutputStream out = socket.getOutputStream();
        out.write(head(api.key, BODY.length(), false));
        for (int at = 0; at < BODY.length(); at += 300) {
          out.write(BODY.substring(at, Math.min(BODY.length(), at + 300)).getBytes(StandardCharsets.US_ASCII));
          out.flush();
          Thread.sleep(100);
        }
        String response = response(socket, 5000);
        assertTrue(response.startsWith("HTTP/1.1 200"), response);
        assertTrue(response.contains("\"status\":\"running\""), response);
      }
      try (Socket socket = new Socket(origin.getHost(), origin.getPort())) {
        socket.setSoTimeout(5000);
        OutputStream out = socket.getOutputStream();
        out.write(head(api.key, BODY.length(), true));
        out.flush();
        String interim = readUntilBlankLine(socket.getInputStream());
        assertTrue(interim.startsWith("HTTP/1.1 100"), interim);
        out.write(BODY.getBytes(StandardCharsets.US_ASCII));
        out.flush();
        String response = response(socket, 5000);
        assertTrue(response.startsWith("HTTP/1.1 200"), response);
      }
      assertEquals(2, api.countRuns(""));
    });
  }

  /** One key may have only so many bodies still arriving: its next is refused at once; other keys are not. */
  @BothDatabases
  void a_key_with_too_many_bodies_still_arriving_gets_429_and_other_keys_do_not(Api api) throws Exception {
    api.workflow("hello", false);
    String other = api.key(Scope.values());
    api.testWith(s -> s.with("http.max_pending_bodies_per_key", "3"), http -> {
      URI origin = URI.create(http.origin());
      List<Socket> slow = new ArrayList<>();
      try {
        for (int i = 0; i < 3; i++) {
          Socket socket = new Socket(origin.getHost(), origin.getPort());
          socket.getOutputStream().write(head(api.key, BODY.length(), false));
          slow.add(socket);
        }
        Thread.sleep(200);
        try (Socket fourth = new Socket(origin.getHost(), origin.getPort())) {
          fourth.getOutputStream().write(head(api.key, BODY.length(), false));
          String response = response(fourth, 3000);
          assertTrue(response.startsWith("HTTP/1.1 429"), response);
          assertTrue(response.toLowerCase(Locale.ROOT).contains("\r\nretry-after: 1\r\n"), response);
          assertTrue(response.contains("\"code\":\"rate_limited\""), response);
        }
        try (Socket theirs = new Socket(origin.getHost(), origin.getPort())) {
          theirs.getOutputStream().write(head(other, BODY.length(), false));
          Thread.sleep(100);
          theirs.getOutputStream().write(BODY.getBytes(StandardCharsets.US_ASCII));
          assertTrue(response(theirs, 5000).startsWith("HTTP/1.1 200"), "another key's slow body is received");
        }
        for (Socket socket : slow) {
          socket.getOutputStream().write(BODY.getBytes(StandardCharsets.US_ASCII));
          assertTrue(response(socket, 5000).startsWith("HTTP/1.1 200"));
        }
      } finally {
        for (Socket socket : slow) {
          socket.close();
        }
      }
      assertEquals(4, api.countRuns(""));
      assertEquals(200, http.startRun("hello", "demo").status(), "the key's count went back down");
    });
  }

  /** All bodies still arriving hold at most so much memory together: past it, 503 rather than a full heap. */
  @BothDatabases
  void bodies_still_arriving_together_hold_at_most_their_memory_budget(Api api) throws Exception {
    api.workflow("hello", false);
    String second = api.key(Scope.values());
    String big = "{\"project\":\"demo\",\"inputs\":{\"pad\":\"" + "x".repeat(40_000) + "\"}}";
    api.testWith(s -> s.with("http.max_pending_body_bytes", "65536"), http -> {
      URI origin = URI.create(http.origin());
      try (Socket first = new Socket(origin.getHost(), origin.getPort());
           Socket next = new Socket(origin.getHost(), origin.getPort())) {
        first.getOutputStream().write(head(api.key, big.length(), false));
        first.getOutputStream().write(big.substring(0, 39_000).getBytes(StandardCharsets.US_ASCII));
        Thread.sleep(300);
        next.getOutputStream().write(head(second, big.length(), false));
        next.getOutputStream().write(big.substring(0, 39_000).getBytes(StandardCharsets.US_ASCII));
        String refused = response(next, 3000);
        assertTrue(refused.startsWith("HTTP/1.1 503"), refused);
        assertTrue(refused.toLowerCase(Locale.ROOT).contains("\r\nretry-after: 1\r\n"), refused);
        first.getOutputStream().write(big.substring(39_000).getBytes(StandardCharsets.US_ASCII));
        assertTrue(response(first, 5000).startsWith("HTTP/1.1 200"));
      }
      assertEquals(1, api.countRuns(""));
      assertEquals(200, http.post("/v1/workflows/hello/runs", big).status(), "the budget was given back");
    });
  }

  /** The body of a request without a valid key is not waited for: 401 from the headers alone. */
  @BothDatabases
  void a_request_without_a_valid_key_is_refused_without_waiting_for_its_body(Api api) throws Exception {
    api.workflow("hello", false);
    api.test(http -> {
      URI origin = URI.create(http.origin());
      for (String key : new String[] {"wsk_" + "Z".repeat(40), "nonsense"}) {
        try (Socket socket = new Socket(origin.getHost(), origin.getPort())) {
          long t0 = System.nanoTime();
          socket.getOutputStream().write(head(key, BODY.length(), false));
          String response = response(socket, 3000);
          assertTrue(response.startsWith("HTTP/1.1 401"), response);
          assertTrue((System.nanoTime() - t0) / 1_000_000 < 2000, "answered without the body");
        }
      }
    });
  }

  @BothDatabases
  void a_declared_length_over_the_limit_is_413_before_any_byte_of_the_body(Api api) throws Exception {
    api.workflow("hello", false);
    api.test(http -> {
      URI origin = URI.create(http.origin());
      try (Socket socket = new Socket(origin.getHost(), origin.getPort())) {
        socket.getOutputStream().write(head(api.key, 10_000_000, false));
        String response = response(socket, 3000);
        assertTrue(response.startsWith("HTTP/1.1 413"), response);
        assertTrue(response.contains("\"code\":\"body_too_large\""), response);
      }
      assertEquals(0, api.countRuns(""));
    });
  }

  /** One key may hold only so many places in flight; other keys keep theirs. */
  @BothDatabases
  void a_key_past_its_share_of_requests_in_flight_gets_429_and_others_are_served(Api api) throws Exception {
    api.workflow("hello", false);
    String other = api.key(Scope.values());
    api.testWith(s -> s.with("http.max_in_flight_per_key", "3"), http -> {
      ExecutorService clients = Executors.newFixedThreadPool(3);
      try (HeldCommits held = HeldCommits.on(api)) {
        List<Future<Http.Reply>> waiting = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
          waiting.add(clients.submit(() -> http.startRun("hello", "demo")));
        }
        Thread.sleep(300);
        Http.Reply refused = http.get("/v1/runs");
        assertProblem(refused, 429, "rate_limited");
        assertEquals("1", refused.header("Retry-After"));
        assertTrue(refused.json().get("detail").asText().contains("in flight"), refused::toString);
        assertEquals(200, http.get("/v1/runs", other).status(), "another key is served");

        held.release();
        for (Future<Http.Reply> w : waiting) {
          assertEquals(200, w.get(10, TimeUnit.SECONDS).status());
        }
        assertEquals(200, http.get("/v1/runs").status(), "the key's places are free again");
      } finally {
        clients.shutdownNow();
      }
    });
  }

  private static byte[] head(String key, int length, boolean expectContinue) {
    return ("POST /v1/workflows/hello/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key
        + "\r\nContent-Type: application/json\r\nContent-Length: " + length + "\r\n"
        + (expectContinue ? "Expect: 100-continue\r\n" : "") + "\r\n").getBytes(StandardCharsets.US_ASCII);
  }

  /** The response on the socket: its head and, per Content-Length, its body. */
  private static String response(Socket socket, int timeoutMillis) throws IOException {
    socket.setSoTimeout(timeoutMillis);
    InputStream in = socket.getInputStream();
    String head = readUntilBlankLine(in);
    int length = 0;
    for (String line : head.split("\r\n")) {
      if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
        length = Integer.parseInt(line.substring(15).trim());
      }
    }
    return head + new String(in.readNBytes(length), StandardCharsets.UTF_8);
  }

  private static String readUntilBlankLine(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    try {
      while (true) {
        int b = in.read();
        if (b < 0) {
          break;
        }
        head.write(b);
        byte[] bytes = head.toByteArray();
        int n = bytes.length;
        if (n >= 4 && bytes[n - 4] == '\r' && bytes[n - 3] == '\n' && bytes[n - 2] == '\r' && bytes[n - 1] == '\n') {
          break;
        }
      }
    } catch (SocketTimeoutException e) {
      return "(no response: " + head.toString(StandardCharsets.ISO_8859_1) + ")";
    }
    return head.toString(StandardCharsets.ISO_8859_1);
  }

}
