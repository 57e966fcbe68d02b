package dev.runway.core;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * How a bounded total of places (calls in flight, webhook attempts, event streams, bytes) is shared
 * among workspaces, so that many workspaces, or one with many keys or endpoints, cannot take every
 * place: with H workspaces holding places, a workspace holding some may take another only while it
 * holds less than max(1, total / (H + 1)) (and its configured cap), and one holding none may always
 * take one while places are free. A newcomer always finds room, and N busy workspaces get about
 * total / N each. The callers check that places are free; this is the per-workspace part.
 */
public final class FairShares {
  private FairShares() {}

  /** What each of {@code holders} workspaces may hold of {@code total}: room is left for one more. */
  public static long share(long total, int holders) {
    return Math.max(1, total / (holders + 1));
  }

  /** The most a workspace may hold: its fair share, and no more than {@code cap}. */
  public static long limit(long total, int holders, long cap) {
    return Math.min(cap, share(total, holders));
  }

  /**
   * Whether a workspace holding {@code held} may take another place, with {@code holders}
   * workspaces holding places now (it among them when {@code held > 0}).
   */
  public static boolean mayTakeAnother(long total, int holders, long held, long cap) {
    return held <= 0 || held < limit(total, holders, cap);
  }

  /** The workspaces of {@code held} (what each holds now; all of them holders) that may take no more. */
  public static <K> Set<K> atTheirShare(Map<K, ? extends Number> held, long total, long cap) {
    int holders = held.size();
    Set<K> out = new HashSet<>();
    held.forEach((k, n) -> {
      if (!mayTakeAnother(total, holders, n.longValue(), cap)) {
        out.add(k);
      }
    });
    return out;
  }
}
