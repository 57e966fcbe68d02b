package dev.runway.db;

import java.util.List;
import java.util.function.IntFunction;

/**
 * One page of rows read within a byte budget, and whether more follow. A page of 1,000 records of
 * 60 KB, or of 100 runs near their 512 KB bound, is 60 MB of JSON, more than the heap holds with
 * its copies as objects and as the answer: pages are bounded by the bytes of their stored JSON as
 * well as by rows. The rows' sizes are read first (a few numbers), then the rows that fit.
 */
public record Slice<T>(List<T> rows, boolean more) {

  /**
   * The first rows of a listing whose sizes (in stored characters, up to {@code limit + 1} of them,
   * in the listing's order) are {@code sizes}: as many as fit in {@code maxBytes}, at least one,
   * at most {@code limit}, read with {@code fetch} (given how many to read, in the same order).
   */
  public static <T> Slice<T> within(List<Long> sizes, int limit, long maxBytes, IntFunction<List<T>> fetch) {
    int rows = rowsWithin(sizes, limit, maxBytes);
    if (rows == 0) {
      return new Slice<>(List.of(), false);
    }
    List<T> read = fetch.apply(rows);
    return new Slice<>(read, sizes.size() > rows);
  }

  /** How many of the leading sizes fit in {@code maxBytes} together: at least one (if any), at most {@code limit}. */
  public static int rowsWithin(List<Long> sizes, int limit, long maxBytes) {
    int end = Math.min(limit, sizes.size());
    long total = 0;
    for (int i = 0; i < end; i++) {
      Long size = sizes.get(i);
      total += size == null ? 0 : size;
      if (total > maxBytes && i > 0) {
        return i;
      }
    }
    return end;
  }
}
