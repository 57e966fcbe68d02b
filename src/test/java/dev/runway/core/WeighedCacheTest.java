package dev.runway.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class WeighedCacheTest {
  private static WeighedCache<String, String> cache(long max) {
    return new WeighedCache<>(max, (k, v) -> k.length() + v.length());
  }

  @Test
  void keeps_entries_until_their_weight_passes_the_bound_then_makes_room() {
    WeighedCache<String, String> cache = cache(1000);
    for (int i = 0; i < 100; i++) {
      cache.put(String.format("k%02d", i), "v".repeat(97)); // weight 100
      assertTrue(cache.weight() <= 1000, "weight " + cache.weight() + " after " + i);
    }
    assertEquals(10, cache.size(), "ten entries of 100 fill 1000");
    assertEquals(1000, cache.weight());
  }

  @Test
  void a_replaced_value_leaves_no_weight_behind() {
    WeighedCache<String, String> cache = cache(1000);
    for (int i = 0; i < 50; i++) {
      cache.put("same", "v".repeat(i));
    }
    assertEquals(1, cache.size());
    assertEquals(4 + 49, cache.weight());
    assertEquals("v".repeat(49), cache.get("same"));
    cache.remove("same");
    assertEquals(0, cache.weight());
    assertNull(cache.get("same"));
  }

  @Test
  void an_entry_heavier_than_an_eighth_is_not_kept_and_drops_the_old_value() {
    WeighedCache<String, String> cache = cache(800);
    cache.put("k", "small");
    cache.put("k", "x".repeat(200));
    assertNull(cache.get("k"));
    assertEquals(0, cache.weight());
    cache.putIfAbsent("j", "x".repeat(200));
    assertNull(cache.get("j"));
  }

  @Test
  void put_if_absent_keeps_the_first_value() {
    WeighedCache<String, String> cache = cache(1000);
    cache.putIfAbsent("k", "first");
    cache.putIfAbsent("k", "second");
    assertEquals("first", cache.get("k"));
    assertEquals(6, cache.weight());
  }

  @Test
  void the_weight_stays_exact_under_concurrent_puts_and_removes() throws Exception {
    WeighedCache<String, String> cache = cache(5_000);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      int seed = t;
      done.add(pool.submit(() -> {
        for (int i = 0; i < 20_000; i++) {
          String key = "k" + ((i * 7 + seed) % 300);
          if (i % 5 == 0) {
            cache.remove(key);
          } else if (i % 2 == 0) {
            cache.putIfAbsent(key, "v".repeat(i % 90));
          } else {
            cache.put(key, "w".repeat(i % 70));
          }
        }
      }));
    }
    for (Future<?> f : done) {
      f.get();
    }
    pool.shutdown();
    long sum = 0;
    for (int i = 0; i < 300; i++) {
      String v = cache.get("k" + i);
      sum += v == null ? 0 : ("k" + i).length() + v.length();
    }
    assertEquals(sum, cache.weight(), "the running total is the sum of what is kept");
    assertTrue(cache.weight() <= 5_000 + 4 * 100, "within the bound, give or take the puts in flight");
  }
}
