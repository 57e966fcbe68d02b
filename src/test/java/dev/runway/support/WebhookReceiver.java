package dev.runway.support;

import com.fasterxml.jackson.databind.JsonNode;
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
import java.util.Base64;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.Predicate;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A local webhook receiver: records every delivery, checks its Standard Webhooks signature against
 * the secrets it was given, and answers as scripted per path (status, Retry-After, delay), or as a
 * function of each delivery's webhook-id and attempt.
 */
public final class WebhookReceiver implements AutoCloseable {
  /**
   * One delivery received; {@code signedBy} lists the known secrets whose signature it carries;
   * {@code status} is what the receiver answered (the sender may not have read it: it may have died).
   */
  public record Delivery(String path, String webhookId, String timestamp, String signature, JsonNode body,
      Instant at, List<String> signedBy, int status) {
    public String type() {
      return body.path("type").asText();
    }
  }

  /** A scripted answer. */
  public record Reply(int status, String retryAfter, Duration delay) {
    public static Reply status(int status) {
      return new Reply(status, null, Duration.ZERO);
    }
  }

  private final LoopbackHttp http;
  private final List<Delivery> deliveries = new CopyOnWriteArrayList<>();
  private final List<String> secrets = new CopyOnWriteArrayList<>();
  private final Map<String, Deque<Reply>> scripts = new HashMap<>();
  private final Map<String, BiFunction<String, Integer, Reply>> answers = new HashMap<>();
  private final Map<String, AtomicInteger> received = new java.util.concurrent.ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> inFlight = new java.util.concurrent.ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> peak = new java.util.concurrent.ConcurrentHashMap<>();

  public WebhookReceiver() {
    this.http = LoopbackHttp.serve("webhook-receiver", this::handle);
  }

  public String url(String path) {
    return "http://127.0.0.1:" + http.port() + path;
  }

  /** Signatures made with this secret are recognised from now on. */
  public void trust(String secret) {
    secrets.add(secret);
  }

  /** Answers the next deliveries to {@code path} with these replies in order; the last one repeats. */
  public synchronized void script(String path, Reply... replies) {
    answers.remove(path);
    scripts.put(path, new ArrayDeque<>(List.of(replies)));
  }

  /**
   * Answers each delivery to {@code path} with {@code reply.apply(webhookId, attempt)}, where
   * attempt counts the deliveries of that webhook-id this receiver has had (1 for the first).
   */
  public synchronized void answer(String path, BiFunction<String, Integer, Reply> reply) {
    scripts.remove(path);
    answers.put(path, reply);
  }

  public List<Delivery> deliveries() {
    return List.copyOf(deliveries);
  }

  public List<Delivery> deliveries(String path) {
    return deliveries.stream().filter(d -> d.path().equals(path)).toList();
  }

  /** The most deliveries of one webhook-id this receiver was answering at once. */
  public int peakPerWebhookId() {
    return peak.values().stream().mapToInt(AtomicInteger::get).max().orElse(0);
  }

  /** Waits (up to {@code timeout}) until the deliveries received satisfy {@code done}; fails the test otherwise. */
  public List<Delivery> await(Duration timeout, Predicate<List<Delivery>> done, String what) {
    long until = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < until) {
      List<Delivery> now = deliveries();
      if (done.test(now)) {
        return now;
      }
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    throw new AssertionError("timed out waiting for " + what + "; received: "
        + deliveries().stream().map(d -> d.path() + " " + d.type()).toList());
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      byte[] in;
      try (InputStream body = exchange.getRequestBody()) {
        in = body.readAllBytes();
      }
      String path = exchange.getRequestURI().getPath();
      String id = exchange.getRequestHeaders().getFirst("webhook-id");
      String timestamp = exchange.getRequestHeaders().getFirst("webhook-timestamp");
      String signature = exchange.getRequestHeaders().getFirst("webhook-signature");
      AtomicInteger now = inFlight.computeIfAbsent(String.valueOf(id), k -> new AtomicInteger());
      peak.computeIfAbsent(String.valueOf(id), k -> new AtomicInteger()).accumulateAndGet(now.incrementAndGet(),
          Math::max);
      try {
        int attempt = received.computeIfAbsent(String.valueOf(id), k -> new AtomicInteger()).incrementAndGet();
        Reply reply;
        synchronized (this) {
          Deque<Reply> script = scripts.get(path);
          BiFunction<String, Integer, Reply> answer = answers.get(path);
          reply = answer != null ? answer.apply(id, attempt)
              : script == null || script.isEmpty() ? Reply.status(200)
              : script.size() > 1 ? script.poll() : script.peek();
        }
        deliveries.add(new Delivery(path, id, timestamp, signature, parse(in), Instant.now(),
            signedBy(id, timestamp, signature, in), reply.status()));
        if (!reply.delay().isZero()) {
          Thread.sleep(reply.delay().toMillis());
        }
        if (reply.retryAfter() != null) {
          exchange.getResponseHeaders().set("Retry-After", reply.retryAfter());
        }
        byte[] out = ("{\"received\":" + Json.string(id) + "}").getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(reply.status(), out.length);
        try (OutputStream os = exchange.getResponseBody()) {
          os.write(out);
        }
      } finally {
        now.decrementAndGet();
      }
    } catch (IOException | InterruptedException e) {
      // the sender hung up (its time-out passed) or the receiver is closing
    }
  }

  private List<String> signedBy(String id, String timestamp, String header, byte[] body) {
    List<String> by = new ArrayList<>();
    if (id == null || timestamp == null || header == null) {
      return by;
    }
    List<String> given = List.of(header.split(" "));
    for (String secret : secrets) {
      if (given.contains("v1," + sign(secret, id + "." + timestamp + "." + new String(body, StandardCharsets.UTF_8)))) {
        by.add(secret);
      }
    }
    return by;
  }

  /** The Standard Webhooks signature, as a receiver computes it. */
  public static String sign(String secret, String signedContent) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(Base64.getDecoder().decode(secret.substring("whsec_".length())), "HmacSHA256"));
      return Base64.getEncoder().encodeToString(mac.doFinal(signedContent.getBytes(StandardCharsets.UTF_8)));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static JsonNode parse(byte[] bytes) {
    try {
      return Json.MAPPER.readTree(bytes);
    } catch (IOException e) {
      return com.fasterxml.jackson.databind.node.NullNode.getInstance();
    }
  }

  @Override
  public void close() {
    http.close();
  }
}
