package dev.runway.http;

import io.javalin.http.Context;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Bounds the requests being worked on at once. Past the bound a request gets a fast 503 rather
 * than joining an ever longer queue; while the server starts, and while it stops, new requests get
 * 503 (those in flight at a stop are waited for). Health checks and metrics scrapes are always
 * answered. One API key may hold only so many of the places (past that, 429 for that key), so no
 * key can take them all; so may one client address outside {@code /v1} (the console's pages and
 * forms, which have no key: a flood of sign-ins waiting for a password hash once could).
 */
public final class InFlightLimit {
  /**
   * The request's {@link Admission}: one attribute for what it holds, read once when it leaves
   * (Jetty's request attributes cost a map lookup through several wrappers each).
   */
  private static final String ADMISSION = "runway.admission";
  private final int max;
  private final int maxPerKey;
  private final Semaphore permits;
  private final ConcurrentHashMap<String, AtomicInteger> byKey = new ConcurrentHashMap<>();
  /** Places held outside /v1 by client address; an address holding none has no entry (there may be many). */
  private final ConcurrentHashMap<String, Integer> byAddress = new ConcurrentHashMap<>();
  private volatile boolean starting;
  private volatile boolean draining;

  /** A limit that admits requests at once. */
  public InFlightLimit(int max, int maxPerKey) {
    this(max, maxPerKey, false);
  }

  private InFlightLimit(int max, int maxPerKey, boolean starting) {
    this.max = max;
    this.maxPerKey = maxPerKey;
    this.permits = new Semaphore(max);
    this.starting = starting;
  }

  /** A limit that refuses requests until {@link #ready()}: the server listens while it still starts. */
  public static InFlightLimit untilReady(int max, int maxPerKey) {
    return new InFlightLimit(max, maxPerKey, true);
  }

  public void enter(Context ctx) {
    // Health checks, and scrapes of the metrics: most wanted when the server is at its limit.
    if (ctx.path().equals("/healthz") || ctx.path().equals("/readyz") || ctx.path().equals("/metrics")) {
      return;
    }
    if (starting) {
      throw unavailable("the server is starting; retry shortly");
    }
    if (draining) {
      ctx.header("Connection", "close");
      throw unavailable("the server is stopping; retry on another instance or shortly");
    }
    if (!permits.tryAcquire()) {
      throw unavailable("the server is at its limit of " + max + " requests in flight; retry shortly");
    }
    Admission admission = new Admission();
    ctx.attribute(ADMISSION, admission);
    if (!ctx.path().startsWith("/v1/") && !ctx.path().equals("/mcp")) {
      enterForAddress(admission, ClientAddress.of(ctx));
    }
  }

  /** A request without a key: 429 if its client address has {@code maxPerKey} requests in flight already. */
  private void enterForAddress(Admission admission, String address) {
    boolean[] admitted = {false};
    byAddress.compute(address, (a, n) -> {
      int held = n == null ? 0 : n;
      admitted[0] = held < maxPerKey;
      return admitted[0] ? held + 1 : n;
    });
    if (!admitted[0]) {
      throw new ApiException(429, "rate_limited", "this client address has " + maxPerKey
          + " requests in flight already; send more once some have been answered", null, Map.of("Retry-After", "1"));
    }
    admission.address = address;
  }

  /**
   * Once the caller's key is known: 429 if that key has {@code maxPerKey} requests in flight already.
   * A key's counter stays once made (counters exist only for valid keys, so there are as many as
   * keys): removing it at zero took a lock on every request.
   */
  void enterForKey(Context ctx, String keyId) {
    Admission admission = ctx.attribute(ADMISSION); // set: enter runs before the auth handler (RunwayApp)
    AtomicInteger count = byKey.computeIfAbsent(keyId, k -> new AtomicInteger());
    if (count.incrementAndGet() > maxPerKey) {
      count.decrementAndGet();
      throw new ApiException(429, "rate_limited", "this API key has " + maxPerKey
          + " requests in flight already; send more once some have been answered", null, Map.of("Retry-After", "1"));
    }
    admission.key = count;
  }

  /** Gives back what the request holds; once, however often it is called. */
  public void leave(Context ctx) {
    Admission admission = ctx.attribute(ADMISSION);
    if (admission == null || admission.left) {
      return;
    }
    admission.left = true;
    permits.release();
    if (admission.key != null) {
      admission.key.decrementAndGet();
    }
    if (admission.address != null) {
      byAddress.computeIfPresent(admission.address, (a, n) -> n <= 1 ? null : n - 1);
    }
  }

  /** What an admitted request holds: a place, and that of its key or of its client address. */
  private static final class Admission {
    AtomicInteger key;
    String address;
    boolean left;
  }

  /** Admits requests from now on. */
  public void ready() {
    starting = false;
  }

  public boolean starting() {
    return starting;
  }

  public boolean draining() {
    return draining;
  }

  /** Refuses new requests from now on and waits up to {@code patience} for those in flight; true if all finished. */
  public boolean drain(Duration patience) {
    draining = true;
    long deadline = System.nanoTime() + patience.toNanos();
    while (permits.availablePermits() < max) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return true;
  }

  private static ApiException unavailable(String detail) {
    return new ApiException(503, "unavailable", detail, null, Map.of("Retry-After", "1"));
  }
}
