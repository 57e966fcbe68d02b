package dev.runway.http;

import io.javalin.http.Context;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Semaphore;

/**
 * Bounds the requests being worked on at once. Past the bound a request gets a fast 503 rather
 * than joining an ever longer queue; while the server starts, and while it stops, new requests get
 * 503 (those in flight at a stop are waited for). Health checks are always answered.
 */
public final class InFlightLimit {
  private static final String ADMITTED = "runway.admitted";
  private final int max;
  private final Semaphore permits;
  private volatile boolean starting;
  private volatile boolean draining;

  /** A limit that admits requests at once. */
  public InFlightLimit(int max) {
    this(max, false);
  }

  private InFlightLimit(int max, boolean starting) {
    this.max = max;
    this.permits = new Semaphore(max);
    this.starting = starting;
  }

  /** A limit that refuses requests until {@link #ready()}: the server listens while it still starts. */
  public static InFlightLimit untilReady(int max) {
    return new InFlightLimit(max, true);
  }

  public void enter(Context ctx) {
    if (ctx.path().equals("/healthz") || ctx.path().equals("/readyz")) {
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
  }

  public void leave(Context ctx) {
    if (ctx.attribute(ADMITTED) != null) {
      ctx.attribute(ADMITTED, null);
      permits.release();
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
