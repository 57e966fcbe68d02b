package dev.runway.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.outbound.SpecialAddresses;
import dev.runway.workflow.Step;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/** Makes one attempt of an http step: the call to the caller's tool, and what came of it. */
public final class HttpStepCaller {
  /**
   * Built at the first call: building an HttpClient takes about 0.15 s of start-up (its classes and
   * its selector thread), which a server that has no http step to run need not pay.
   */
  private static final class Client {
    static final HttpClient INSTANCE = HttpClient.newBuilder()
        .connectTimeout(Duration.ofSeconds(5))
        .followRedirects(HttpClient.Redirect.NEVER) // a redirect could lead to a forbidden address
        .build();
  }

  /** Closes response bodies still being read at their step's deadline, so a stalled tool cannot hold a worker. */
  private static final ScheduledExecutorService DEADLINES = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "runway-http-deadlines");
    t.setDaemon(true);
    return t;
  });
  private final boolean allowPrivateNetworks;
  private final int maxResponseBytes;

  public HttpStepCaller(boolean allowPrivateNetworks, int maxResponseBytes) {
    this.allowPrivateNetworks = allowPrivateNetworks;
    this.maxResponseBytes = maxResponseBytes;
  }

  /** How an attempt ended. {@code retryable} failures are tried again; others fail the step at once. */
  public record Outcome(boolean succeeded, boolean retryable, Integer httpStatus, String message, JsonNode output) {
    static Outcome success(int status, JsonNode output, String message) {
      return new Outcome(true, false, status, message, output);
    }

    static Outcome retry(Integer status, String message) {
      return new Outcome(false, true, status, message, null);
    }

    static Outcome fail(Integer status, String message) {
      return new Outcome(false, false, status, message, null);
    }
  }

  public Outcome call(Step.Http step, ObjectNode body, String idempotencyKey) {
    URI uri = URI.create(step.url());
    try {
      String refused = refusedAddress(uri.getHost());
      if (refused != null) {
        return Outcome.fail(null, refused);
      }
    } catch (UnknownHostException e) {
      return Outcome.retry(null, "cannot resolve host " + uri.getHost());
    }
    HttpRequest.Builder request = HttpRequest.newBuilder(uri)
        .timeout(Duration.ofMillis(step.timeoutMs()))
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", idempotencyKey)
        .header("User-Agent", "Runway");
    step.headers().forEach(request::header);
    if (step.method().equals("GET")) {
      request.GET();
    } else {
      request.method(step.method(), HttpRequest.BodyPublishers.ofByteArray(Json.bytes(body)));
    }
    long deadline = System.nanoTime() + step.timeoutMs() * 1_000_000L;
    try {
      // The request's time-out covers the wait for the headers; the deadline below covers the body.
      HttpResponse<InputStream> response = Client.INSTANCE.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
      int status = response.statusCode();
      byte[] bytes;
      AtomicBoolean timedOut = new AtomicBoolean();
      try (InputStream in = response.body()) {
        ScheduledFuture<?> watchdog = DEADLINES.schedule(() -> {
          timedOut.set(true);
          closeQuietly(in);
        }, Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        try {
          bytes = in.readNBytes(maxResponseBytes + 1);
        } catch (IOException e) {
          if (timedOut.get()) {
            return Outcome.retry(status, "HTTP " + status + " but the body did not arrive within " + step.timeoutMs() + " ms");
          }
          throw e;
        } finally {
          watchdog.cancel(false);
        }
      }
      if (status >= 200 && status < 300) {
        return success(status, bytes);
      }
      String message = "HTTP " + status + snippet(bytes);
      if (status >= 500 || status == 408 || status == 429) {
        return Outcome.retry(status, message);
      }
      return Outcome.fail(status, message);
    } catch (HttpTimeoutException e) {
      return Outcome.retry(null, "no answer within " + step.timeoutMs() + " ms");
    } catch (IOException e) {
      return Outcome.retry(null, "connection failed: " + e.getClass().getSimpleName()
          + (e.getMessage() == null ? "" : ": " + e.getMessage()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Outcome.retry(null, "interrupted (the engine is stopping)");
    }
  }

  private static void closeQuietly(InputStream in) {
    try {
      in.close();
    } catch (IOException ignored) {
      // the reader sees the stream closed
    }
  }

  private Outcome success(int status, byte[] bytes) {
    if (bytes.length == 0) {
      return Outcome.success(status, null, "HTTP " + status);
    }
    if (bytes.length > maxResponseBytes) {
      return Outcome.success(status, null, "HTTP " + status + "; response over " + maxResponseBytes
          + " bytes not kept");
    }
    try {
      return Outcome.success(status, Json.MAPPER.readTree(bytes), "HTTP " + status);
    } catch (IOException e) {
      return Outcome.success(status, null, "HTTP " + status + "; response is not JSON, not kept");
    }
  }

  private static String snippet(byte[] bytes) {
    if (bytes.length == 0) {
      return "";
    }
    String text = new String(bytes, 0, Math.min(bytes.length, 200), java.nio.charset.StandardCharsets.UTF_8);
    return ": " + text.replaceAll("\\s+", " ").trim();
  }

  /** Why the host may not be called, or null if it may. */
  private String refusedAddress(String host) throws UnknownHostException {
    if (allowPrivateNetworks) {
      return null;
    }
    for (InetAddress address : InetAddress.getAllByName(host)) {
      if (SpecialAddresses.isSpecial(address)) {
        return "refused to call " + host + " (" + address.getHostAddress() + "): loopback, link-local and private "
            + "addresses need engine.http.allow_private_networks=true";
      }
    }
    return null;
  }
}
