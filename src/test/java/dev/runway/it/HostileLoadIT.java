package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import dev.runway.support.ToolServer;
import dev.runway.support.WebhookReceiver;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The probes of issue 34 against the packaged jar at its shipped options (config/jvm.options:
 * 128 MB heap, exit on out-of-memory), where the finding needs the real heap, threads or sockets.
 *
 * <ul>
 *   <li>Item 1: anonymous console posts sent a byte at a time held every place in flight, so that
 *       /v1 answered 503; chunked 1 MB forms were parsed and echoed, and 50 at once ran the heap
 *       out. Now console bodies go through the same bounded reception as /v1's.
 *   <li>Item 2: a tenant makes 1,120 records of 60 KB, then reads them with limit=1000, four
 *       requests at once, and sends four 1 MiB syncs of 349,000 empty records at once. Before,
 *       either killed the server; now the pages stop early by bytes, the syncs are refused before
 *       their tree is built.
 *   <li>Item 4: runs of 8 steps of 60 KB and two slow endpoints subscribed to every event ran the
 *       heap out in about 20 s (each event carried the whole run). Now an event carries the run
 *       without its steps' outputs, and the dispatcher holds its bodies within a byte budget.
 * </ul>
 */
class HostileLoadIT {
  private static final String SYNC = "/v1/crm/contacts/records/sync";
  private static final String SIGNIN = "/console/signin";
  /** Connections posting to the console a byte a second, as in the probe (more than http.max_in_flight). */
  private static final int SLOW_POSTS = 170;
  private static final Duration FLOOD = Duration.ofSeconds(15);
  private static final int RUN_STARTS = 36;
  private static final int BIG_FORMS = 50;
  private static final int BIG_FORM_BYTES = 1_000_000;
  private static final int BIG_RUNS = 50;
  private static final int STEPS = 8;
  private static final int STEP_OUTPUT_CHARS = 60_000;
  private static final int MAX_EVENT_CHARS = 64 * 1024;

  /**
   * Item 1: 170 connections post to /console/signin with Content-Length: 60000 and send a byte a
   * second for 15 s, while a tenant starts 36 runs: every start answers 200. Then 50 chunked 1 MB
   * url-encoded forms, no cookie, at once: each is refused (413, or 429 past the bodies one address
   * may have arriving) without a byte of it echoed, and the server is still up and ready.
   */
  @Test
  void a_console_flood_leaves_run_starts_answering_and_chunked_1_mb_forms_are_refused() throws Exception {
    long t0 = System.nanoTime();
    RunwayProcess server = RunwayProcess.onFreshDatabase(TestDatabase.H2, Map.of(), "runway-hostile-console-");
    String key = server.command("keys", "create", "--workspace", "default", "--scopes", "runs:write,runs:read",
        "--name", "tenant").trim();
    Http api = api(server, key);
    List<Socket> slow = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(BIG_FORMS);
    try {
      server.start();
      byte[] head = ("POST " + SIGNIN + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
          + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 60000\r\n\r\nemail=")
          .getBytes(StandardCharsets.US_ASCII);
      for (int i = 0; i < SLOW_POSTS; i++) {
        Socket socket = new Socket("127.0.0.1", server.port);
        slow.add(socket);
        try {
          socket.getOutputStream().write(head);
          socket.getOutputStream().flush();
        } catch (IOException answered) {
          // refused already (429): the socket stays in the list and is closed at the end
        }
      }

      // A byte a second on every connection for 15 s; from the third second, 6 run starts a second.
      List<Future<Http.Reply>> starts = new ArrayList<>();
      long floodEnd = System.nanoTime() + FLOOD.toNanos();
      for (int second = 0; System.nanoTime() < floodEnd; second++) {
        for (Socket socket : slow) {
          try {
            socket.getOutputStream().write('a');
            socket.getOutputStream().flush();
          } catch (IOException answered) {
            // the server answered (429, 408) and closed: that is allowed, the point is the API
          }
        }
        if (second >= 2 && starts.size() < RUN_STARTS) {
          for (int i = 0; i < RUN_STARTS / 6; i++) {
            starts.add(pool.submit(() -> api.post("/v1/workflows/hello/runs", "{\"project\":\"flood\"}")));
          }
        }
        Thread.sleep(1000); // the pace of the probe: a byte a second
      }
      Map<Integer, Integer> startStatuses = new TreeMap<>();
      for (Future<Http.Reply> start : starts) {
        startStatuses.merge(start.get(60, TimeUnit.SECONDS).status(), 1, Integer::sum);
      }
      closeAll(slow);
      assertEquals(Map.of(200, RUN_STARTS), startStatuses,
          "run starts during the console flood (status: how many)\n" + server.log());

      // 50 chunked url-encoded forms of 1 MB at once, no cookie, no CSRF token.
      List<Future<String>> forms = new ArrayList<>();
      for (int i = 0; i < BIG_FORMS; i++) {
        forms.add(pool.submit(() -> postChunkedForm(server)));
      }
      Map<String, Integer> formAnswers = new TreeMap<>();
      for (Future<String> form : forms) {
        formAnswers.merge(form.get(60, TimeUnit.SECONDS), 1, Integer::sum);
      }
      System.out.printf("console flood: %d slow posts, run starts %s, %d chunked 1 MB forms %s; %d ms%n", SLOW_POSTS,
          startStatuses, BIG_FORMS, formAnswers, (System.nanoTime() - t0) / 1_000_000);
      Set<String> allowed = Set.of("413", "429", "closed");
      assertTrue(allowed.containsAll(formAnswers.keySet()), () -> "chunked 1 MB forms: " + formAnswers);
      assertTrue(formAnswers.getOrDefault("413", 0) > 0, () -> "chunked 1 MB forms: " + formAnswers);

      assertReady(server);
    } finally {
      closeAll(slow);
      pool.shutdownNow();
      server.stop();
    }
  }

  /**
   * Item 4: a workflow of 8 http steps each answered with 60 KB (a run record of about 480 KB), two
   * endpoints subscribed to every event answering after 10 s, 50 runs: every run succeeds, the
   * server stays up, and every event delivered carries the run without its steps' outputs, with the
   * path to read it, in less than 64 KiB; so does a run.succeeded event waiting in the delivery log
   * (its run has all 480 KB of outputs). It does not wait for a run.succeeded to arrive: behind
   * the slow endpoints it may take minutes, in an order the test does not control.
   */
  @Test
  void big_runs_with_slow_webhook_endpoints_leave_the_server_up_and_events_small() throws Exception {
    long t0 = System.nanoTime();
    try (ToolServer tool = ToolServer.start(); WebhookReceiver receiver = new WebhookReceiver()) {
      tool.script("/big", ToolServer.Reply.json(200, "{\"blob\":\"" + "b".repeat(STEP_OUTPUT_CHARS) + "\"}"));
      receiver.answer("/a", (id, attempt) -> new WebhookReceiver.Reply(200, null, Duration.ofSeconds(10)));
      receiver.answer("/b", (id, attempt) -> new WebhookReceiver.Reply(200, null, Duration.ofSeconds(10)));
      RunwayProcess server = RunwayProcess.onFreshDatabase(TestDatabase.H2,
          Map.of("RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS", "true"), "runway-hostile-webhooks-");
      String key = server.command("keys", "create", "--workspace", "default", "--name", "tenant").trim();
      Http api = api(server, key);
      try {
        server.start();
        StringBuilder steps = new StringBuilder();
        for (int i = 0; i < STEPS; i++) {
          steps.append(i == 0 ? "" : ",").append("{\"type\":\"http\",\"url\":\"").append(tool.url("/big"))
              .append("\",\"timeout_ms\":10000}");
        }
        Http.Reply put = api.put("/v1/workflows/big",
            "{\"name\":\"Big\",\"steps\":[" + steps + "]}");
        assertTrue(put.status() == 200 || put.status() == 201, () -> "workflow: " + put.body());
        List<String> endpointIds = new ArrayList<>();
        for (String path : List.of("/a", "/b")) {
          Http.Reply endpoint = api.post("/v1/webhook_endpoints",
              "{\"url\":\"" + receiver.url(path) + "\",\"event_types\":[\"*\"]}");
          assertEquals(201, endpoint.status(), endpoint::body);
          receiver.trust(Json.tree(endpoint.body()).get("secret").asText());
          endpointIds.add(Json.tree(endpoint.body()).get("id").asText());
        }

        Set<String> running = new LinkedHashSet<>();
        for (int i = 0; i < BIG_RUNS; i++) {
          Http.Reply started = api.post("/v1/workflows/big/runs", "{\"project\":\"big\"}");
          assertTrue(started.status() == 200 || started.status() == 201, () -> "start: " + started.body());
          running.add(Json.tree(started.body()).get("id").asText());
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (!running.isEmpty() && System.nanoTime() < deadline) {
          for (String run : List.copyOf(running)) {
            Http.Reply read = api.get("/v1/runs/" + run);
            assertEquals(200, read.status(), () -> "run " + run + ": " + read.status() + "\n" + server.log());
            String status = Json.tree(read.body()).get("status").asText();
            assertTrue(!status.equals("failed") && !status.equals("cancelled"), () -> "run " + run + " " + status);
            if (status.equals("succeeded")) {
              running.remove(run);
            }
          }
          if (!running.isEmpty()) {
            Thread.sleep(500);
          }
        }
        assertEquals(Set.of(), running, "runs not succeeded within 90 s\n" + server.log());

        // While the endpoints take 10 s per attempt (16 at a time each), the deliveries pile up pending.
        List<String> endpoints = List.copyOf(endpointIds);
        List<WebhookReceiver.Delivery> delivered = receiver.await(Duration.ofSeconds(60),
            got -> got.size() >= 2 * 16, "the first attempts at both endpoints");
        assertReady(server);
        for (WebhookReceiver.Delivery d : delivered) {
          String payload = Json.MAPPER.writeValueAsString(d.body());
          assertTrue(payload.length() < MAX_EVENT_CHARS, () -> d.type() + " of " + payload.length() + " characters");
          assertFalse(payload.contains("bbbbbbbb"), () -> d.type() + " carries a step's output");
          assertFalse(d.signedBy().isEmpty(), "signed with the endpoint's secret");
          JsonNode data = d.body().get("data");
          assertTrue(data.path("url").asText().startsWith("/v1/runs/"), () -> d.type() + ": " + data);
          data.path("steps").forEach(step -> assertFalse(step.has("output"), () -> d.type() + ": " + step));
        }
        // A run.succeeded event (every step done, 480 KB of outputs in the run) as it is sent: read from
        // the delivery log, where it waits behind the others for these slow endpoints.
        String succeededPath = "/v1/webhook_endpoints/" + endpoints.get(0)
            + "/deliveries?event_type=run.succeeded&limit=1";
        JsonNode succeeded = Json.tree(api.get(succeededPath).body()).get("data");
        for (long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
             succeeded.isEmpty() && System.nanoTime() < until; ) {
          Thread.sleep(200);
          succeeded = Json.tree(api.get(succeededPath).body()).get("data");
        }
        assertEquals(1, succeeded.size(), succeeded::toString);
        Http.Reply read = api.get("/v1/webhook_deliveries/"
            + succeeded.get(0).get("id").asText());
        assertEquals(200, read.status(), read::body);
        JsonNode payload = Json.tree(read.body()).get("payload");
        if (payload.isTextual()) {
          payload = Json.tree(payload.asText());
        }
        String sent = Json.MAPPER.writeValueAsString(payload);
        assertTrue(sent.length() < MAX_EVENT_CHARS, () -> "run.succeeded of " + sent.length() + " characters");
        JsonNode run = payload.get("data");
        assertEquals("succeeded", run.get("status").asText(), sent);
        assertTrue(run.path("url").asText().startsWith("/v1/runs/"), sent);
        assertEquals(STEPS, run.get("steps").size(), sent);
        run.get("steps").forEach(step -> assertFalse(step.has("output"), step::toString));
        System.out.printf("big runs: %d runs of %d steps of %d characters succeeded, %d deliveries received "
            + "(largest %d characters); %d ms%n", BIG_RUNS, STEPS, STEP_OUTPUT_CHARS, delivered.size(),
            delivered.stream().mapToInt(d -> d.body().toString().length()).max().orElse(0),
            (System.nanoTime() - t0) / 1_000_000);
        assertReady(server);
      } finally {
        server.stop();
      }
    }
  }

  @Test
  void big_records_read_with_limit_1000_and_syncs_of_empty_records_leave_the_server_up() throws Exception {
    RunwayProcess server = RunwayProcess.onFreshDatabase(TestDatabase.H2,
        Map.of("RUNWAY_RATELIMIT_PER_KEY_PER_SECOND", "0", "RUNWAY_ENGINE_ENABLED", "false"), "runway-hostile-");
    String key = server.command("keys", "create", "--workspace", "default", "--name", "tenant").trim();
    Http api = api(server, key);
    try {
      server.start();
      String value = "v".repeat(15_000);
      String properties = "{\"a\":\"" + value + "\",\"b\":\"" + value + "\",\"c\":\"" + value + "\",\"d\":\""
          + value + "\"}";
      for (int batch = 0; batch < 70; batch++) { // 70 syncs of 16 records of 60 KB: 1,120 records
        StringBuilder records = new StringBuilder();
        for (int i = 0; i < 16; i++) {
          records.append(i == 0 ? "" : ",").append("{\"external_id\":\"r-").append(batch * 16 + i)
              .append("\",\"properties\":").append(properties).append('}');
        }
        Http.Reply made = api.post(SYNC, "{\"records\":[" + records + "]}");
        assertEquals(200, made.status(), () -> "sync: " + made.status());
      }

      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        List<Future<Http.Reply>> reads = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
          for (int i = 0; i < 4; i++) {
            reads.add(pool.submit(() -> api.get("/v1/crm/contacts/records?limit=1000")));
          }
        }
        for (Future<Http.Reply> read : reads) {
          Http.Reply page = read.get();
          assertEquals(200, page.status(), () -> "read: " + page.status());
          JsonNode body = Json.tree(page.body());
          int rows = body.get("data").size();
          assertTrue(rows >= 1 && rows < 1000, () -> "a page of " + rows + " records of 60 KB");
          assertTrue(body.get("has_more").asBoolean());
        }

        StringBuilder empty = new StringBuilder("{\"records\":[");
        for (int i = 0; i < 349_000; i++) {
          empty.append(i == 0 ? "{}" : ",{}");
        }
        String emptyRecords = empty.append("]}").toString();
        List<Future<Http.Reply>> syncs = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
          syncs.add(pool.submit(() -> api.post(SYNC, emptyRecords)));
        }
        for (Future<Http.Reply> sync : syncs) {
          Http.Reply refused = sync.get();
          assertEquals(400, refused.status(), () -> "empty records: " + refused.status());
          assertEquals("records", Json.tree(refused.body()).get("param").asText());
        }
      } finally {
        pool.shutdownNow();
      }

      assertReady(server);
    } finally {
      server.stop();
    }
  }

  /** The server's API with this key, a request given up after 60 s (a loaded server may take long). */
  private static Http api(RunwayProcess server, String key) {
    return server.http(key).timeout(Duration.ofSeconds(60));
  }

  /** The server still answers /readyz 200 and never ran out of memory. */
  private static void assertReady(RunwayProcess server) throws IOException {
    assertFalse(server.logged("OutOfMemoryError"), "the server ran out of memory");
    Http.Reply ready = server.http(null).timeout(Duration.ofSeconds(10)).get("/readyz");
    assertEquals(200, ready.status(), ready.body());
  }

  /**
   * Posts a url-encoded form of 1 MB to /console/signin in chunks of 64 KB, without a cookie, and
   * reads the answer: its status ("413"), or "closed" if the server closed the connection without
   * one. Fails if the answer echoes the form's email.
   */
  private static String postChunkedForm(RunwayProcess server) throws IOException {
    try (Socket socket = new Socket("127.0.0.1", server.port)) {
      socket.setSoTimeout(30_000);
      OutputStream out = socket.getOutputStream();
      try {
        out.write(("POST " + SIGNIN + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            + "Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII));
        writeChunk(out, "csrf=x&password=y&email=");
        String chunk = "a".repeat(64 * 1024);
        for (int sent = 0; sent < BIG_FORM_BYTES; sent += chunk.length()) {
          writeChunk(out, chunk);
        }
        writeChunk(out, "%40example.com");
        out.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
      } catch (IOException answered) {
        // the server answered early and closed: read what it said
      }
      ByteArrayOutputStream answer = new ByteArrayOutputStream();
      try {
        InputStream in = socket.getInputStream();
        byte[] buffer = new byte[8192];
        for (int n; answer.size() < 256 * 1024 && (n = in.read(buffer)) > 0; ) {
          answer.write(buffer, 0, n);
        }
      } catch (IOException reset) {
        // closed after (or instead of) the answer
      }
      String text = answer.toString(StandardCharsets.ISO_8859_1);
      assertFalse(text.contains("aaaaaaaa"), "the form's email came back");
      if (!text.startsWith("HTTP/1.1 ")) {
        return "closed";
      }
      return text.substring("HTTP/1.1 ".length(), "HTTP/1.1 ".length() + 3);
    }
  }

  private static void writeChunk(OutputStream out, String data) throws IOException {
    out.write((Integer.toHexString(data.length()) + "\r\n" + data + "\r\n").getBytes(StandardCharsets.US_ASCII));
  }

  private static void closeAll(List<Socket> sockets) {
    for (Socket socket : sockets) {
      try {
        socket.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }
  }
}
