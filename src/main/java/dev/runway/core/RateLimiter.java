package dev.runway.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Token buckets by name (an API key id, a client address): each holds up to {@code burst} tokens
 * and gains {@code perSecond} a second; a request takes one or is refused. At most {@code
 * maxBuckets} names are kept: past it, full buckets (as good as new) are dropped first, then the
 * longest unused ones, down to nine tenths of the bound; never all at once, which gave every
 * client, the one being limited among them, a full bucket again.
 */
public final class RateLimiter {
  private static final int MAX_BUCKETS = 100_000;

  private final double perSecond;
  private final int burst;
  private final int maxBuckets;
  private final ConcurrentHashMap<String, Bucket> buckets = new ConcurrentHashMap<>();

  public RateLimiter(double perSecond, int burst) {
    this(perSecond, burst, MAX_BUCKETS);
  }

  /** With a bound of names of its own (the tests use a small one). */
  RateLimiter(double perSecond, int burst, int maxBuckets) {
    this.perSecond = perSecond;
    this.burst = burst;
    this.maxBuckets = maxBuckets;
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
    if (buckets.size() >= maxBuckets) {
      makeRoom();
    }
    return buckets.computeIfAbsent(name, n -> new Bucket());
  }

  /** Drops full buckets, then the longest unused, until a tenth of the bound is free (one thread at a time). */
  private synchronized void makeRoom() {
    if (buckets.size() < maxBuckets) {
      return; // another thread made room meanwhile
    }
    // Full buckets hold no information (they are as new): dropping them loses nothing.
    buckets.values().removeIf(Bucket::isFull);
    int keep = maxBuckets - Math.max(1, maxBuckets / 10);
    if (buckets.size() <= keep) {
      return;
    }
    // A flood of names filled it with buckets in use: the ones unused the longest go (a sort of
    // 100,000 at most once per 10,000 new names). At about 150 bytes a bucket, 15 MB at most.
    List<Map.Entry<String, Long>> used = new ArrayList<>(buckets.size());
    buckets.forEach((name, bucket) -> used.add(Map.entry(name, bucket.lastUsed())));
    used.sort(Map.Entry.comparingByValue());
    for (int i = 0; i < used.size() - keep; i++) {
      buckets.remove(used.get(i).getKey());
    }
  }

  /** How many names it holds now. */
  int size() {
    return buckets.size();
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

    synchronized long lastUsed() {
      return refilledAt;
    }

    synchronized boolean isFull() {
      return tokens + (System.nanoTime() - refilledAt) / 1e9 * perSecond >= burst;
    }
  }
}
