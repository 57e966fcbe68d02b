import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The local tool of bench/engine_latency.py and bench/agents.py: an `http` step's endpoint that
 * costs next to no CPU, so the figures measure Runway and not the tool (a Python tool and a Python
 * client share one interpreter lock and the machine's two cores with the server under test).
 * Started with single-file source launch: java bench/Tool.java [port] [delay_ms]; prints the port.
 *
 *   any method, any path   after delay_ms, 200 {"n": n + 1} to a body {"n": n}, else {"ok": true}
 *   GET /_stats            {"calls": calls so far, "peak": most calls in progress at once}
 *   POST /_reset           forgets both counts
 *
 * Keep-alive as a real tool offers it, with Nagle's algorithm off (else a kept-alive connection's
 * answer can wait about 40 ms for a delayed ACK).
 */
public final class Tool {
  private static final Pattern N = Pattern.compile("\"n\"\\s*:\\s*(-?\\d{1,18})\\s*[,}]");
  private static final AtomicLong calls = new AtomicLong();
  private static final AtomicInteger now = new AtomicInteger();
  private static final AtomicInteger peak = new AtomicInteger();
  private static long delayMs;

  public static void main(String[] args) throws Exception {
    System.setProperty("sun.net.httpserver.nodelay", "true");
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
    delayMs = args.length > 1 ? Long.parseLong(args[1]) : 0;
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 4096);
    server.createContext("/", Tool::call);
    server.createContext("/_stats", x -> answer(x, "{\"calls\":" + calls.get() + ",\"peak\":" + peak.get() + "}"));
    server.createContext("/_reset", x -> {
      calls.set(0);
      peak.set(0);
      answer(x, "{}");
    });
    // A thread per call in progress: calls that wait delay_ms wait side by side.
    server.setExecutor(Executors.newCachedThreadPool());
    server.start();
    System.out.println(server.getAddress().getPort());
    System.out.flush();
  }

  private static void call(HttpExchange x) throws IOException {
    String body = new String(x.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
    calls.incrementAndGet();
    peak.accumulateAndGet(now.incrementAndGet(), Math::max);
    try {
      if (delayMs > 0) {
        Thread.sleep(delayMs);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      now.decrementAndGet();
    }
    Matcher n = N.matcher(body);
    answer(x, n.find() ? "{\"n\":" + (Long.parseLong(n.group(1)) + 1) + "}" : "{\"ok\":true}");
  }

  private static void answer(HttpExchange x, String json) throws IOException {
    byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
    x.getResponseHeaders().set("Content-Type", "application/json");
    x.sendResponseHeaders(200, bytes.length);
    try (OutputStream out = x.getResponseBody()) {
      out.write(bytes);
    }
  }
}
