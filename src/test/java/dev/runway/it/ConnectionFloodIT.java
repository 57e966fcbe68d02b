package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The shipped server (128 MB heap) under a flood of connections: just under its limit
 * (http.max_connections, raised here to 1,500), each sending run starts all at once, round after
 * round. Every request gets 200 or a 503 with Retry-After, the heap holds (Jetty's per-connection
 * header cache, 96 KB each, once filled it), every 200 is a stored run, and connections past the
 * limit get in once the idle ones are closed.
 */
class ConnectionFloodIT {
  private static final int LIMIT = 1_500;
  private static final int CONNECTIONS = LIMIT - 10;
  private static final int ROUNDS = 5;
  private static final int PAST_THE_LIMIT = 30;

  @BothDatabases
  void a_flood_of_connections_gets_200s_and_503s_and_the_server_holds(TestDatabase db) throws Exception {
    // One key sends everything: its own share of requests in flight is lifted, so the flood meets the
    // server's limit (http.max_in_flight) as a flood from many keys would.
    RunwayProcess server = RunwayProcess.onFreshDatabase(db, Map.of("RUNWAY_RATELIMIT_PER_KEY_PER_SECOND", "0",
        "RUNWAY_HTTP_MAX_IN_FLIGHT_PER_KEY", "100000", "RUNWAY_HTTP_MAX_CONNECTIONS", Integer.toString(LIMIT)),
        "runway-flood-");
    String key = server.command("keys", "create", "--workspace", "default", "--scopes", "runs:write,runs:read",
        "--name", "flood").trim();
    String body = "{\"project\":\"flood\"}";
    byte[] request = ("POST /v1/workflows/hello/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + key
        + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
        .getBytes(StandardCharsets.US_ASCII);
    ExecutorService readers = Executors.newFixedThreadPool(64);
    List<Socket> sockets = new ArrayList<>();
    try {
      server.start();
      for (int i = 0; i < CONNECTIONS; i++) {
        sockets.add(open(server.port));
      }
      Map<Integer, Integer> byStatus = new TreeMap<>();
      List<String> acknowledged = new ArrayList<>();
      for (int round = 0; round < ROUNDS; round++) {
        for (Socket s : sockets) {
          s.getOutputStream().write(request);
        }
        for (Reply r : replies(readers, sockets)) {
          byStatus.merge(r.status, 1, Integer::sum);
          if (r.status == 200) {
            acknowledged.add(Json.tree(r.body).get("id").asText());
          } else {
            assertEquals(503, r.status, r.body);
            assertEquals("1", r.headers.get("retry-after"), r.body);
            assertEquals("unavailable", Json.tree(r.body).get("code").asText(), r.body);
          }
        }
      }
      System.out.printf("%d connections x %d rounds on %s: %s%n", CONNECTIONS, ROUNDS, db.label(), byStatus);
      assertEquals(CONNECTIONS * ROUNDS, byStatus.values().stream().mapToInt(Integer::intValue).sum(), "every request answered");
      assertTrue(byStatus.containsKey(503), "past http.max_in_flight: 503s " + byStatus);
      assertFalse(server.logged("OutOfMemoryError"), server.log());

      // One more connection reaches the limit: the idle ones are closed after a second (Jetty's
      // own idle timeout is 30 s, so 10 s tell them apart) and the connections waiting in the
      // kernel's queue get in.
      Socket idle = sockets.get(0);
      List<Socket> late = new ArrayList<>();
      for (int i = 0; i < PAST_THE_LIMIT; i++) {
        Socket s = open(server.port);
        sockets.add(s);
        s.getOutputStream().write(request);
        late.add(s);
      }
      idle.setSoTimeout(10_000);
      assertEquals(-1, idle.getInputStream().read(), "an idle connection was closed by the server");
      for (Reply r : replies(readers, late)) {
        assertEquals(200, r.status, r.body);
        acknowledged.add(Json.tree(r.body).get("id").asText());
      }

      Http api = server.http(key);
      for (String id : acknowledged) {
        Http.Reply r = api.get("/v1/runs/" + id);
        assertEquals(200, r.status(), "acknowledged run " + id + ": " + r.body());
      }
    } finally {
      for (Socket s : sockets) {
        s.close();
      }
      readers.shutdownNow();
      server.stop();
    }
  }

  private static Socket open(int port) throws IOException {
    Socket s = new Socket("127.0.0.1", port);
    s.setSoTimeout(30_000);
    return s;
  }

  private record Reply(int status, Map<String, String> headers, String body) {}

  /** The next reply on each socket, read in parallel. */
  private static List<Reply> replies(ExecutorService readers, List<Socket> sockets) throws Exception {
    List<Future<Reply>> pending = new ArrayList<>();
    for (Socket s : sockets) {
      pending.add(readers.submit(() -> read(s.getInputStream())));
    }
    List<Reply> replies = new ArrayList<>();
    for (Future<Reply> f : pending) {
      replies.add(f.get(60, TimeUnit.SECONDS));
    }
    return replies;
  }

  /** One HTTP/1.1 response with a Content-Length body. */
  private static Reply read(InputStream in) throws IOException {
    String statusLine = line(in);
    Map<String, String> headers = new HashMap<>();
    for (String h = line(in); !h.isEmpty(); h = line(in)) {
      int colon = h.indexOf(':');
      headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
    }
    byte[] body = in.readNBytes(Integer.parseInt(headers.get("content-length")));
    return new Reply(Integer.parseInt(statusLine.split(" ")[1]), headers, new String(body, StandardCharsets.UTF_8));
  }

  private static String line(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    for (int b = in.read(); b != '\n'; b = in.read()) {
      if (b < 0) {
        throw new IOException("connection closed mid-response");
      }
      if (b != '\r') {
        line.write(b);
      }
    }
    return line.toString(StandardCharsets.US_ASCII);
  }
}
