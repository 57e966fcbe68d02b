package dev.runway.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** A rate limiter full of names forgets full and long-unused buckets, never the ones in use. */
class RateLimiterTest {
  @Test
  void when_full_it_drops_the_longest_unused_buckets_not_all() {
    RateLimiter limiter = new RateLimiter(0.001, 1, 100); // a token per 1,000 s: an empty bucket stays empty
    assertTrue(limiter.take("attacker").allowed());
    assertFalse(limiter.take("attacker").allowed(), "its bucket is empty");
    for (int i = 0; i < 99; i++) {
      limiter.take("flood-" + i); // each of these empty too
    }
    assertFalse(limiter.take("attacker").allowed(), "used most recently");
    for (int i = 99; i < 300; i++) {
      limiter.take("flood-" + i);
      assertTrue(limiter.size() <= 100, "bounded");
    }
    // A bucket in use survives however many new names arrive: once the whole map was forgotten,
    // and with it every client's empty bucket.
    RateLimiter kept = new RateLimiter(0.001, 1, 100);
    kept.take("owner");
    for (int i = 0; i < 1000; i++) {
      kept.take("flood-" + i);
      assertFalse(kept.take("owner").allowed(), "never dropped while in use: " + i);
    }
  }

  @Test
  void full_buckets_go_first() {
    RateLimiter limiter = new RateLimiter(1000, 1, 10); // refilled within a millisecond
    for (int i = 0; i < 10; i++) {
      limiter.take("a" + i);
    }
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (System.nanoTime() < deadline && !java.util.stream.IntStream.range(0, 10)
        .allMatch(i -> limiter.peek("a" + i).allowed())) {
      Thread.onSpinWait();
    }
    limiter.take("new");
    assertEquals(1, limiter.size(), "the ten full buckets went, none of them in use");
  }
}
