package dev.runway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * A body refused from its headers (too large, or one too many still arriving for its key) does not
 * cost the client its answer: the server answers at once, then reads and drops what the client
 * still sends before it closes, rather than reset the connection under the answer.
 */
class EarlyRefusalTest {
  @BothDatabases
  void a_client_that_sends_a_too_large_body_at_once_reads_its_413(Api api) throws Exception {
    api.workflow("hello", false);
    byte[] body = body(70_000);
    api.test(http -> {
      URI origin = URI.create(http.origin());
      for (int i = 0; i < 30; i++) {
        try (Socket socket = new Socket(origin.getHost(), origin.getPort())) {
          socket.setSoTimeout(10_000);
          OutputStream out = socket.getOutputStream();
          ByteArrayOutputStream request = new ByteArrayOutputStream();
          request.write(head(api.key, body.length));
          request.write(body);
          out.write(request.toByteArray());
          out.flush();
          InputStream in = socket.getInputStream();
          String answer = new String(in.readAllBytes(), StandardCharsets.UTF_8);
          assertTrue(answer.startsWith("HTTP/1.1 413"), "attempt " + i + ": " + answer);
          assertTrue(answer.contains("\"code\":\"body_too_large\""), answer);
          assertTrue(answer.toLowerCase(Locale.ROOT).contains("\r\nconnection: close\r\n"), answer);
        }
      }
      assertEquals(200, http.startRun("hello", "demo").status(), "the server keeps serving");
    });
  }

  /**
   * The client reads its 413 before it has sent most of its body, then sends the rest: the server
   * is still reading and dropping it, so every byte is taken and the connection ends with a plain
   * close, not a reset. (Jetty's error writer gave up on a body not all there yet, the server closed
   * at once, and the client's next writes were reset: a client that had not read its 413 yet lost it.)
   */
  @BothDatabases
  void a_client_still_sending_its_body_after_a_413_is_not_reset(Api api) throws Exception {
    api.workflow("hello", false);
    byte[] body = body(70_000);
    api.test(http -> {
      URI origin = URI.create(http.origin());
      for (int i = 0; i < 20; i++) {
        String answer = answerThenRestOfBody(origin, head(api.key, body.length), body, "attempt " + i);
        assertTrue(answer.startsWith("HTTP/1.1 413"), "attempt " + i + ": " + answer);
        assertTrue(answer.contains("\"code\":\"body_too_large\""), answer);
      }
      assertEquals(200, http.startRun("hello", "demo").status(), "the server keeps serving");
      assertEquals(1, api.countRuns(""));
    });
  }

  /** The same for a 429 answered with part of the body read: the rest is read and dropped too. */
  @BothDatabases
  void a_client_still_sending_its_body_after_a_429_is_not_reset(Api api) throws Exception {
    api.workflow("hello", false);
    byte[] body = body(60_000);
    api.testWith(s -> s.with("http.max_pending_bodies_per_key", "1"), http -> {
      URI origin = URI.create(http.origin());
      try (Socket pending = new Socket(origin.getHost(), origin.getPort())) {
        pending.getOutputStream().write(head(api.key, body.length)); // the key's one body still arriving
        pending.getOutputStream().flush();
        Thread.sleep(200);
        for (int i = 0; i < 10; i++) {
          String answer = answerThenRestOfBody(origin, head(api.key, body.length), body, "attempt " + i);
          assertTrue(answer.startsWith("HTTP/1.1 429"), "attempt " + i + ": " + answer);
          assertTrue(answer.contains("\"code\":\"rate_limited\""), answer);
        }
      }
      assertEquals(200, http.startRun("hello", "demo").status(), "the server keeps serving");
    });
  }

  /**
   * Sends the head and the first 1000 bytes of the body, reads the answer to its end (the server
   * closes its side after it), then sends the rest of the body and expects the plain end of the
   * connection: a write or read that is reset fails the test.
   */
  private static String answerThenRestOfBody(URI origin, byte[] head, byte[] body, String attempt) throws IOException {
    try (Socket socket = new Socket(origin.getHost(), origin.getPort())) {
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      out.write(head);
      out.write(body, 0, 1000);
      out.flush();
      InputStream in = socket.getInputStream();
      String answer = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      try {
        for (int at = 1000; at < body.length; at += 8192) {
          out.write(body, at, Math.min(8192, body.length - at));
          out.flush();
        }
        assertEquals(-1, in.read(), attempt + ": nothing after the answer");
      } catch (IOException e) {
        throw new AssertionError(attempt + ": sending the rest of the body after " + answer.lines().findFirst()
            .orElse("no answer") + ": " + e, e);
      }
      return answer;
    }
  }

  private static byte[] body(int padding) {
    return ("{\"project\":\"demo\",\"inputs\":{\"blob\":\"" + "x".repeat(padding) + "\"}}")
        .getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] head(String key, int length) {
    return ("POST /v1/workflows/hello/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key
        + "\r\nContent-Type: application/json\r\nContent-Length: " + length + "\r\n\r\n")
        .getBytes(StandardCharsets.US_ASCII);
  }
}
