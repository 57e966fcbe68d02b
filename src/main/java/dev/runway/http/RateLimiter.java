package dev.runway.http;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Token buckets by name (an API key id, a client address): each holds up to {@code burst} tokens
 * and gains {@code perSecond} a second; a request takes one or is refused.
 */
public final class RateLimiter {
  private static final int MAX_BUCKETS = 100_000;

  private final double perSecond;
  private final int burst;
  private final ConcurrentHashMap<String, Bucket> buckets = new ConcurrentHashMap<>();

  public RateLimiter(double perSecond, int burst) {
    this.perSecond = perSecond;
    this.burst = burst;
  }

  /** The state of a bucket after a take or a look: what the RateLimit-* headers say. */
  public record Quota(boolean allowed, int limit, int remaining, long resetSeconds, long retryAfterSeconds) {}

  /** Takes a token from the bucket if it has one. */
  public Quota take(String name) {
    return bucket(name).take(true);
  }

  /** The bucket's state, taking nothing. */
  public Quota peek(String name) {
    Bucket b = buckets.get(name);
    return b == null ? new Quota(true, burst, burst, 0, 0) : b.take(false);
  }

  private Bucket bucket(String name) {
    Bucket b = buckets.get(name);
    if (b != null) {
      return b;
    }
    if (buckets.size() >= MAX_BUCKETS) {
      // Full buckets hold no information (they are as new): dropping them bounds the memory.
      buckets.values().removeIf(Bucket::isFull);
      if (buckets.size() >= MAX_BUCKETS) {
        // A flood of names (say, client addresses of an IPv6 network) filled it with buckets in use:
        // forgetting them is better than an unbounded map. At about 150 bytes a bucket, 15 MB.
        buckets.clear();
      }
    }
    return buckets.computeIfAbsent(name, n -> new Bucket());
  }

  private final class Bucket {
    private double tokens = burst;
    private long refilledAt = System.nanoTime();

    synchronized Quota take(boolean consume) {
      long now = System.nanoTime();
      tokens = Math.min(burst, tokens + (now - refilledAt) / 1e9 * perSecond);
      refilledAt = now;
      boolean allowed = tokens >= 1;
      if (allowed && consume) {
        tokens -= 1;
      }
      long reset = (long) Math.ceil((burst - tokens) / perSecond);
      long retryAfter = allowed ? 0 : Math.max(1, (long) Math.ceil((1 - tokens) / perSecond));
      return new Quota(allowed, burst, (int) Math.floor(tokens), reset, retryAfter);
    }

    synchronized boolean isFull() {
      return tokens + (System.nanoTime() - refilledAt) / 1e9 * perSecond >= burst;
    }
  }
}
