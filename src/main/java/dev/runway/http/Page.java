package dev.runway.http;

import java.util.List;
import java.util.function.Function;

/** One page of a list: {@code data}, {@code has_more}, {@code next_cursor} (the last id, for starting_after). */
public record Page<T>(List<T> data, boolean hasMore, String nextCursor) {

  /** Builds a page from up to limit+1 fetched rows; the extra row only tells that there is more. */
  public static <R, T> Page<T> of(List<R> rows, int limit, Function<R, T> view, Function<T, String> id) {
    boolean more = rows.size() > limit;
    List<T> data = rows.stream().limit(limit).map(view).toList();
    return new Page<>(data, more, more ? id.apply(data.get(data.size() - 1)) : null);
  }
}
