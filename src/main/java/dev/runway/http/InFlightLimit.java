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
  private static final String ADMITTED = "runway.admitted";
  private static final String KEY_ADMITTED = "runway.key_admitted";
  private static final String ADDRESS_ADMITTED = "runway.address_admitted";
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
    ctx.attribute(ADMITTED, Boolean.TRUE);
    if (!ctx.path().startsWith("/v1/") && !ctx.path().equals("/mcp")) {
      enterForAddress(ctx, ClientAddress.of(ctx));
    }
  }

  /** A request without a key: 429 if its client address has {@code maxPerKey} requests in flight already. */
  private void enterForAddress(Context ctx, String address) {
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
    ctx.attribute(ADDRESS_ADMITTED, address);
  }

  /**
   * Once the caller's key is known: 429 if that key has {@code maxPerKey} requests in flight already.
   * A key's counter stays once made (counters exist only for valid keys, so there are as many as
   * keys): removing it at zero took a lock on every request.
   */
  void enterForKey(Context ctx, String keyId) {
    AtomicInteger count = byKey.computeIfAbsent(keyId, k -> new AtomicInteger());
    if (count.incrementAndGet() > maxPerKey) {
      count.decrementAndGet();
      throw new ApiException(429, "rate_limited", "this API key has " + maxPerKey
          + " requests in flight already; send more once some have been answered", null, Map.of("Retry-After", "1"));
    }
    ctx.attribute(KEY_ADMITTED, count);
  }

  public void leave(Context ctx) {
    if (ctx.attribute(ADMITTED) != null) {
      ctx.attribute(ADMITTED, null);
      permits.release();
    }
    AtomicInteger count = ctx.attribute(KEY_ADMITTED);
    if (count != null) {
      ctx.attribute(KEY_ADMITTED, null);
      count.decrementAndGet();
    }
    String address = ctx.attribute(ADDRESS_ADMITTED);
    if (address != null) {
      ctx.attribute(ADDRESS_ADMITTED, null);
      byAddress.computeIfPresent(address, (a, n) -> n <= 1 ? null : n - 1);
    }
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
