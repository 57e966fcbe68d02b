package dev.runway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/**
 * A body declared too large is refused from its headers, and a client that sent the body with them
 * (as most do) still reads the 413: the server reads and drops what arrives before it closes,
 * rather than reset the connection under the answer.
 */
class EarlyRefusalTest {
  @BothDatabases
  void a_client_that_sends_a_too_large_body_at_once_reads_its_413(Api api) throws Exception {
    api.workflow("hello", false);
    byte[] body = ("{\"project\":\"demo\",\"inputs\":{\"blob\":\"" + "x".repeat(70_000) + "\"}}")
        .getBytes(StandardCharsets.US_ASCII);
    api.test(http -> {
      URI origin = URI.create(http.origin());
      for (int i = 0; i < 30; i++) {
        try (Socket socket = new Socket(origin.getHost(), origin.getPort())) {
          socket.setSoTimeout(10_000);
          OutputStream out = socket.getOutputStream();
          ByteArrayOutputStream request = new ByteArrayOutputStream();
          request.write(("POST /v1/workflows/hello/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + api.key
              + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
          request.write(body);
          out.write(request.toByteArray());
          out.flush();
          InputStream in = socket.getInputStream();
          String answer = new String(in.readAllBytes(), StandardCharsets.UTF_8);
          assertTrue(answer.startsWith("HTTP/1.1 413"), "attempt " + i + ": " + answer);
          assertTrue(answer.contains("\"code\":\"body_too_large\""), answer);
          assertTrue(answer.toLowerCase(java.util.Locale.ROOT).contains("\r\nconnection: close\r\n"), answer);
        }
      }
      assertEquals(200, http.startRun("hello", "demo").status(), "the server keeps serving");
    });
  }
}
