package dev.runway.http;

import dev.runway.core.RateLimiter;
import io.javalin.http.Context;
import java.util.Map;

/**
 * Runway's two limits: requests per API key, and failed authentications per client address (an
 * IPv6 client: its /64, see ClientAddress), so nobody can guess keys quickly. The address limit refuses only failing attempts: a valid key is
 * never refused for what other clients behind the same address (a load balancer, a NAT) did wrong.
 * Every response carries the RateLimit-* headers of the limit that applies to it: the key's once it
 * is known, else the address's.
 */
public final class RateLimits {
  private final RateLimiter perKey;
  private final RateLimiter authFailures;

  /** Either limiter may be null: no limit. */
  public RateLimits(RateLimiter perKey, RateLimiter authFailures) {
    this.perKey = perKey;
    this.authFailures = authFailures;
  }

  /** Before every request: the address's headers (the key's replace them once it is known). */
  public void addressHeaders(Context ctx) {
    if (authFailures != null) {
      headers(ctx, authFailures.peek(ClientAddress.of(ctx)));
    }
  }

  /**
   * Counts a failed authentication against the client's address; 429 instead of the 401 once the
   * address has failed too often.
   */
  void authenticationFailed(Context ctx, ApiException refusal) {
    if (authFailures == null) {
      throw refusal;
    }
    RateLimiter.Quota q = authFailures.take(ClientAddress.of(ctx));
    headers(ctx, q);
    if (!q.allowed()) {
      throw limited(q, "too many failed authentications from this address");
    }
    throw refusal;
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
