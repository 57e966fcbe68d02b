package dev.runway.http;

import dev.runway.db.Slice;
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

  /** Builds a page from rows read within a byte budget (see {@link Slice}): it may stop before the limit. */
  public static <R, T> Page<T> of(Slice<R> rows, Function<R, T> view, Function<T, String> id) {
    List<T> data = rows.rows().stream().map(view).toList();
    boolean more = rows.more() && !data.isEmpty();
    return new Page<>(data, more, more ? id.apply(data.get(data.size() - 1)) : null);
  }
}
