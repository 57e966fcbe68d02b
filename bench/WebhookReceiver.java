import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The fast webhook receiver of bench/webhooks.py: answers every POST to /hook 204 at once (a
 * delivery whose signature does not check is still answered 204, and counted), and keeps what the
 * benchmark asks for: counts by event type, repeats of a webhook-id, bad signatures, and the
 * arrival time (epoch microseconds) of each run.succeeded with its run id. Started with
 * single-file source launch: java bench/WebhookReceiver.java [port] (0: any; the port is printed).
 *
 *   POST /hook          a delivery
 *   POST /_secret       the body is the endpoint's whsec_ secret: signatures are checked from now on
 *   POST /_reset        forgets every count, id and time
 *   GET  /_stats        {"received", "distinct", "repeats", "bad_signatures", "unsigned", "types": {type: n}}
 *   GET  /_succeeded    "run_id microseconds" lines of the run.succeeded deliveries since the last ask
 */
public final class WebhookReceiver {
  private static volatile byte[] key;
  private static final LongAdder received = new LongAdder();
  private static final LongAdder badSignatures = new LongAdder();
  private static final LongAdder unsigned = new LongAdder();
  private static final AtomicLong repeats = new AtomicLong();
  private static final Map<String, Boolean> ids = new ConcurrentHashMap<>();
  private static final Map<String, LongAdder> types = new ConcurrentHashMap<>();
  private static final ConcurrentLinkedQueue<String> succeeded = new ConcurrentLinkedQueue<>();
  private static final ThreadLocal<Mac> MACS = new ThreadLocal<>();

  public static void main(String[] args) throws Exception {
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
    int threads = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 1024);
    server.createContext("/hook", WebhookReceiver::hook);
    server.createContext("/_secret", x -> {
      String secret = new String(x.getRequestBody().readAllBytes(), StandardCharsets.UTF_8).trim();
      key = Base64.getDecoder().decode(secret.startsWith("whsec_") ? secret.substring(6) : secret);
      answer(x, 204, null);
    });
    server.createContext("/_reset", x -> {
      received.reset();
      badSignatures.reset();
      unsigned.reset();
      repeats.set(0);
      ids.clear();
      types.clear();
      succeeded.clear();
      answer(x, 204, null);
    });
    server.createContext("/_stats", x -> {
      StringBuilder b = new StringBuilder("{\"received\":").append(received.sum()).append(",\"distinct\":")
          .append(ids.size()).append(",\"repeats\":").append(repeats.get()).append(",\"bad_signatures\":")
          .append(badSignatures.sum()).append(",\"unsigned\":").append(unsigned.sum()).append(",\"types\":{");
      String sep = "";
      for (Map.Entry<String, LongAdder> e : types.entrySet()) {
        b.append(sep).append('"').append(e.getKey()).append("\":").append(e.getValue().sum());
        sep = ",";
      }
      answer(x, 200, b.append("}}").toString());
    });
    server.createContext("/_succeeded", x -> {
      StringBuilder b = new StringBuilder();
      for (String line = succeeded.poll(); line != null; line = succeeded.poll()) {
        b.append(line).append('\n');
      }
      answer(x, 200, b.toString());
    });
    server.setExecutor(threads == 0 ? null : Executors.newFixedThreadPool(threads));
    server.start();
    System.out.println(server.getAddress().getPort());
    System.out.flush();
  }

  private static void hook(HttpExchange x) throws IOException {
    byte[] body;
    try (InputStream in = x.getRequestBody()) {
      body = in.readAllBytes();
    }
    Instant now = Instant.now();
    long micros = now.getEpochSecond() * 1_000_000L + now.getNano() / 1000;
    received.increment();
    String id = x.getRequestHeaders().getFirst("webhook-id");
    if (id == null) {
      unsigned.increment();
    } else if (ids.putIfAbsent(id, Boolean.TRUE) != null) {
      repeats.incrementAndGet();
    }
    byte[] k = key;
    if (k != null && id != null && !signed(k, id, x.getRequestHeaders().getFirst("webhook-timestamp"),
        x.getRequestHeaders().getFirst("webhook-signature"), body)) {
      badSignatures.increment();
    }
    // The body starts {"id":"evt_…","type":"…","created_at":"…","data":{"id":"run_…" (WebhookOutbox.envelope).
    String text = new String(body, 0, Math.min(body.length, 400), StandardCharsets.UTF_8);
    String type = between(text, "\"type\":\"");
    types.computeIfAbsent(type == null ? "?" : type, t -> new LongAdder()).increment();
    if ("run.succeeded".equals(type)) {
      String run = between(text, "\"data\":{\"id\":\"");
      if (run != null) {
        succeeded.add(run + " " + micros);
      }
    }
    answer(x, 204, null);
  }

  private static String between(String text, String start) {
    int i = text.indexOf(start);
    if (i < 0) {
      return null;
    }
    int from = i + start.length();
    int to = text.indexOf('"', from);
    return to < 0 ? null : text.substring(from, to);
  }

  /** Standard Webhooks: one of the space-separated "v1,<base64 HMAC-SHA256 of id.timestamp.body>". */
  private static boolean signed(byte[] k, String id, String timestamp, String signatures, byte[] body) {
    if (timestamp == null || signatures == null) {
      return false;
    }
    try {
      Mac mac = MACS.get();
      if (mac == null) {
        mac = Mac.getInstance("HmacSHA256");
        MACS.set(mac);
      }
      mac.init(new SecretKeySpec(k, "HmacSHA256"));
      mac.update((id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8));
      byte[] expected = ("v1," + Base64.getEncoder().encodeToString(mac.doFinal(body))).getBytes(StandardCharsets.UTF_8);
      for (String s : signatures.split(" ")) {
        if (MessageDigest.isEqual(expected, s.getBytes(StandardCharsets.UTF_8))) {
          return Math.abs(System.currentTimeMillis() / 1000 - Long.parseLong(timestamp)) < 300;
        }
      }
      return false;
    } catch (Exception e) {
      return false;
    }
  }

  private static void answer(HttpExchange x, int status, String body) throws IOException {
    if (body == null) {
      x.sendResponseHeaders(status, -1);
      x.close();
      return;
    }
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    x.getResponseHeaders().set("Content-Type", status == 200 && body.startsWith("{") ? "application/json" : "text/plain");
    x.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = x.getResponseBody()) {
      out.write(bytes);
    }
  }
}
