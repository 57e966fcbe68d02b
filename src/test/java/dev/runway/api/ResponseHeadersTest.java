package dev.runway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/** The headers every response carries, whatever answered it: Runway, Javalin or Jetty. */
class ResponseHeadersTest {

  @BothDatabases
  void json_answers_and_problems_are_never_cached_nor_sniffed(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      for (Http.Reply r : new Http.Reply[] {http.startRun("hello", "demo"), http.get("/v1/runs"),
          http.get("/v1/workflows/hello"), http.get("/healthz", null), http.get("/readyz", null),
          http.get("/v1/runs", null), http.get("/v1/nope"), http.send("PATCH", "/v1/runs", api.key, "{}",
          "application/json"), http.post("/v1/workflows/hello/runs", "{")}) {
        assertEquals("no-store", r.header("Cache-Control"), () -> "Cache-Control on " + r);
        assertEquals("nosniff", r.header("X-Content-Type-Options"), () -> "X-Content-Type-Options on " + r);
      }
    });
  }

  @BothDatabases
  void errors_jetty_answers_before_routing_carry_them_too(Api api) {
    api.test(http -> {
      URI origin = URI.create(http.origin());
      String badLength = "POST /v1/workflows/hello/runs HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n";
      String hugeHeader = "GET /v1/runs HTTP/1.1\r\nHost: x\r\nX-Big: " + "a".repeat(20_000) + "\r\n\r\n";
      for (String request : new String[] {badLength, hugeHeader}) {
        String response = exchange(origin, request);
        String head = response.substring(0, response.indexOf("\r\n\r\n")).toLowerCase(Locale.ROOT);
        assertTrue(head.startsWith("http/1.1 4"), head);
        assertTrue(head.contains("\r\ncache-control: no-store"), head);
        assertTrue(head.contains("\r\nx-content-type-options: nosniff"), head);
        assertTrue(head.contains("application/problem+json"), head);
      }
    });
  }

  private static String exchange(URI origin, String request) throws IOException {
    try (Socket socket = new Socket(origin.getHost(), origin.getPort())) {
      socket.setSoTimeout(5000);
      OutputStream out = socket.getOutputStream();
      out.write(request.getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = socket.getInputStream();
      return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
    }
  }
}
