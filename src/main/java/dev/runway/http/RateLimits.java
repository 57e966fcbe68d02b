package dev.runway.http;

import io.javalin.http.Context;
import java.util.Map;

/**
 * Runway's two limits: requests per API key, and failed authentications per client address (so
 * nobody can guess keys quickly). Every response carries the RateLimit-* headers of the limit that
 * applies to it: the key's once it is known, else the address's.
 */
public final class RateLimits {
  private final RateLimiter perKey;
  private final RateLimiter authFailures;

  /** Either limiter may be null: no limit. */
  public RateLimits(RateLimiter perKey, RateLimiter authFailures) {
    this.perKey = perKey;
    this.authFailures = authFailures;
  }

  /**
   * Before every request: the address's headers (the key's replace them once it is known), and
   * 429 on the API if the address failed to authenticate too often.
   */
  public void checkAddress(Context ctx) {
    if (authFailures == null) {
      return;
    }
    RateLimiter.Quota q = authFailures.peek(ctx.ip());
    headers(ctx, q);
    if (!q.allowed() && ctx.path().startsWith("/v1/")) {
      throw limited(q, "too many failed authentications from this address");
    }
  }

  /** Counts a failed authentication against the client's address. */
  void authenticationFailed(Context ctx) {
    if (authFailures != null) {
      headers(ctx, authFailures.take(ctx.ip()));
    }
  }

  /** Takes a request from the key's bucket; 429 when it is empty. */
  void takeForKey(Context ctx, String keyId) {
    if (perKey == null) {
      return;
    }
    RateLimiter.Quota q = perKey.take(keyId);
    headers(ctx, q);
    if (!q.allowed()) {
      throw limited(q, "this API key sent more than " + q.limit() + " requests in a burst; slow down");
    }
  }

  private static void headers(Context ctx, RateLimiter.Quota q) {
    ctx.header("RateLimit-Limit", Integer.toString(q.limit()));
    ctx.header("RateLimit-Remaining", Integer.toString(q.remaining()));
    ctx.header("RateLimit-Reset", Long.toString(q.resetSeconds()));
  }

  private static ApiException limited(RateLimiter.Quota q, String detail) {
    return new ApiException(429, "rate_limited", detail + "; retry after " + q.retryAfterSeconds() + " s", null,
        Map.of("Retry-After", Long.toString(q.retryAfterSeconds())));
  }
}
