package dev.runway.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.sun.net.httpserver.HttpExchange;
import dev.runway.core.Json;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A tool for http steps to call: the JDK's HTTP server on 127.0.0.1, a free port. It records every
 * request (method, path, Idempotency-Key, JSON body) and answers from a per-path script. Without a
 * script a path answers 200 {"path": …, "call": n}. The last scripted reply of a path repeats.
 *
 * <pre>
 * try (ToolServer tool = ToolServer.start()) {
 *   tool.script("/flaky", Reply.status(500), Reply.status(500), Reply.json(200, "{\"ok\":true}"));
 *   tool.script("/slow", Reply.json(200, "{}").after(Duration.ofSeconds(2)));
 * }
 * </pre>
 */
public final class ToolServer implements AutoCloseable {

  /** One request the tool received. {@code body} is NullNode when it was empty or not JSON. */
  public record Call(String method, String path, String idempotencyKey, JsonNode body, Instant at,
      Map<String, String> headers, String rawQuery) {}

  /** One scripted answer: status, JSON body, and how long to wait before answering. */
  public record Reply(int status, String body, Duration delay) {
    public static Reply json(int status, String body) {
      return new Reply(status, body, Duration.ZERO);
    }

    public static Reply status(int status) {
      return json(status, "{\"status\":" + status + "}");
    }

    /** The same answer, sent only after sleeping {@code wait}. */
    public Reply after(Duration wait) {
      return new Reply(status, body, wait);
    }
  }

  private final LoopbackHttp http;
  private final List<Call> calls = new ArrayList<>();
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicInteger peak = new AtomicInteger();
  private final Map<String, Deque<Reply>> scripts = new HashMap<>();
  private final Map<String, CountDownLatch> gates = new HashMap<>();

  private ToolServer() {
    this.http = LoopbackHttp.serve("tool-server", this::handle); // last: the handler reads the fields above
  }

  public static ToolServer start() {
    return new ToolServer();
  }

  /** http://127.0.0.1:port + path. */
  public String url(String path) {
    return "http://127.0.0.1:" + http.port() + path;
  }

  public int port() {
    return http.port();
  }

  /** Answers the next calls to {@code path} with these replies in order; the last one repeats. */
  public synchronized void script(String path, Reply... replies) {
    scripts.put(path, new ArrayDeque<>(List.of(replies)));
  }

  /**
   * Holds the answers to calls of {@code path} (counted as in flight) until the latch returned is
   * counted down, at most 30 s; then each is answered from its script (after its delay).
   */
  public synchronized CountDownLatch hold(String path) {
    CountDownLatch gate = new CountDownLatch(1);
    gates.put(path, gate);
    return gate;
  }

  /** Every call so far, oldest first. */
  public synchronized List<Call> calls() {
    return List.copyOf(calls);
  }

  /** The most calls this tool was answering at once (counted for delayed replies). */
  public int peakConcurrency() {
    return peak.get();
  }

  /** The calls to one path, oldest first. */
  public synchronized List<Call> calls(String path) {
    return calls.stream().filter(c -> c.path().equals(path)).toList();
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      byte[] in;
      try (InputStream body = exchange.getRequestBody()) {
        in = body.readAllBytes();
      }
      String path = exchange.getRequestURI().getPath();
      Reply reply;
      int callNumber;
      CountDownLatch gate;
      boolean held;
      synchronized (this) {
        Map<String, String> headers = new HashMap<>();
        exchange.getRequestHeaders().forEach((name, values) -> headers.put(name, values.get(0)));
        calls.add(new Call(exchange.getRequestMethod(), path, exchange.getRequestHeaders().getFirst("Idempotency-Key"),
            parse(in), Instant.now(), headers, exchange.getRequestURI().getRawQuery()));
        callNumber = (int) calls.stream().filter(c -> c.path().equals(path)).count();
        Deque<Reply> script = scripts.get(path);
        if (script == null || script.isEmpty()) {
          reply = Reply.json(200, "{\"path\":\"" + path + "\",\"call\":" + callNumber + "}");
        } else {
          reply = script.size() > 1 ? script.poll() : script.peek();
        }
        gate = gates.get(path);
        held = !reply.delay().isZero() || gate != null;
        if (held) {
          // Counted under the lock that records the call: whoever sees the call in calls() sees it in flight.
          peak.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
        }
      }
      if (held) {
        try {
          if (gate != null) {
            gate.await(30, TimeUnit.SECONDS);
          }
          Thread.sleep(reply.delay().toMillis());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return; // the tool is closing
        } finally {
          inFlight.decrementAndGet();
        }
      }
      byte[] out = reply.body().getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "application/json");
      exchange.sendResponseHeaders(reply.status(), out.length == 0 ? -1 : out.length);
      if (out.length > 0) {
        try (OutputStream os = exchange.getResponseBody()) {
          os.write(out);
        }
      }
    } catch (IOException e) {
      // the caller hung up (e.g. its time-out passed): nothing to answer
    }
  }

  private static JsonNode parse(byte[] bytes) {
    if (bytes.length == 0) {
      return NullNode.getInstance();
    }
    try {
      return Json.MAPPER.readTree(bytes);
    } catch (IOException e) {
      return NullNode.getInstance();
    }
  }

  @Override
  public void close() {
    http.close();
  }
}
