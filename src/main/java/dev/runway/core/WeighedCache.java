package dev.runway.core;

import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToLongBiFunction;

/**
 * A concurrent cache bounded by the total weight of its entries (about their size in bytes), never
 * by their count, which would let a tenant's large entries run the heap out. When the cache is over its weight, arbitrary entries make room (no
 * recency is tracked, so a read costs what a ConcurrentHashMap read costs); an entry heavier than
 * an eighth of the whole is not kept at all.
 */
public final class WeighedCache<K, V> {
  private final long maxWeight;
  private final ToLongBiFunction<K, V> weigher;
  private final ConcurrentHashMap<K, Weighed<V>> entries = new ConcurrentHashMap<>();
  private final AtomicLong weight = new AtomicLong();

  private record Weighed<V>(V value, long weight) {}

  /** {@code weigher} gives an entry's weight, its key included. */
  public WeighedCache(long maxWeight, ToLongBiFunction<K, V> weigher) {
    this.maxWeight = maxWeight;
    this.weigher = weigher;
  }

  /** The value kept for the key, or null. */
  public V get(K key) {
    Weighed<V> found = entries.get(key);
    return found == null ? null : found.value();
  }

  /** Keeps the value for the key, replacing (and so dropping) what was kept for it. */
  public void put(K key, V value) {
    long w = weigher.applyAsLong(key, value);
    if (w > maxWeight / 8) {
      remove(key);
      return;
    }
    Weighed<V> old = entries.put(key, new Weighed<>(value, w));
    makeRoom(weight.addAndGet(w - (old == null ? 0 : old.weight())));
  }

  /** Keeps the value unless one is kept for the key already. */
  public void putIfAbsent(K key, V value) {
    long w = weigher.applyAsLong(key, value);
    if (w > maxWeight / 8 || entries.putIfAbsent(key, new Weighed<>(value, w)) != null) {
      return;
    }
    makeRoom(weight.addAndGet(w));
  }

  public void remove(K key) {
    Weighed<V> old = entries.remove(key);
    if (old != null) {
      weight.addAndGet(-old.weight());
    }
  }

  /** The total weight kept now. */
  public long weight() {
    return weight.get();
  }

  public int size() {
    return entries.size();
  }

  private void makeRoom(long total) {
    for (Iterator<Map.Entry<K, Weighed<V>>> it = entries.entrySet().iterator(); total > maxWeight && it.hasNext(); ) {
      Map.Entry<K, Weighed<V>> e = it.next();
      // Removes exactly the entry seen, so each entry's weight leaves the total once.
      if (entries.remove(e.getKey(), e.getValue())) {
        total = weight.addAndGet(-e.getValue().weight());
      }
    }
  }
}
