package dev.runway.engine;

import dev.runway.core.FairShares;
import dev.runway.run.Run;
import java.util.HashMap;
import java.util.Map;

/**
 * The memory the calls in flight hold: each call's run (its documents), the request it sends (which
 * carries the run's inputs and earlier outputs) and room for its answer. Bounded in all and per
 * workspace (a fair share, see FairShares, within engine.max_call_bytes_in_flight's per-workspace part),
 * so that no tenant can fill the heap with calls that wait: a thousand calls of runs with
 * half a megabyte of outputs each would. Reservations are estimates (characters for bytes), made
 * before a call goes out; a call that finds no room now is left for a later round.
 */
final class CallMemory {
  private final long max;
  private final long maxPerWorkspace;
  private long used;
  private final Map<String, Long> byWorkspace = new HashMap<>();

  CallMemory(long max, long maxPerWorkspace) {
    this.max = max;
    this.maxPerWorkspace = maxPerWorkspace;
  }

  /** What a call of the run (as it will be saved for the call) holds, answer included. */
  static long weight(Run run, int maxAnswerBytes) {
    long documents = run.inputs().length() + run.definition().length() + run.steps().length()
        + length(run.approval()) + length(run.error());
    long request = run.inputs().length() + run.steps().length();
    return documents + request + maxAnswerBytes + 2048;
  }

  private static int length(String text) {
    return text == null ? 0 : text.length();
  }

  /**
   * Room for {@code bytes} of the workspace's calls, or null when there is none now. A workspace with
   * nothing in flight always gets room for one call (if the server has any), however large.
   */
  synchronized Reservation reserve(String workspaceId, long bytes) {
    long mine = byWorkspace.getOrDefault(workspaceId, 0L);
    if ((mine > 0 && mine + bytes > limit()) || (used > 0 && used + bytes > max)) {
      return null;
    }
    add(workspaceId, bytes);
    return new Reservation(workspaceId, bytes);
  }

  /** Whether the workspace has about used its share: its runs are left out of claims until it has room. */
  synchronized boolean full(String workspaceId) {
    return byWorkspace.getOrDefault(workspaceId, 0L) > limit() * 9 / 10;
  }

  /** What a workspace holding memory may hold: its fair share among those holding some, within its cap. */
  private long limit() {
    return FairShares.limit(max, byWorkspace.size(), maxPerWorkspace);
  }

  synchronized long used() {
    return used;
  }

  private void add(String workspaceId, long bytes) {
    used += bytes;
    byWorkspace.merge(workspaceId, bytes, Long::sum);
    if (byWorkspace.get(workspaceId) <= 0) {
      byWorkspace.remove(workspaceId);
    }
  }

  /** The room one run's calls hold; resized between calls as the run grows, given back at the end. */
  final class Reservation {
    private final String workspaceId;
    private long bytes;

    private Reservation(String workspaceId, long bytes) {
      this.workspaceId = workspaceId;
      this.bytes = bytes;
    }

    /** Makes it {@code to} bytes if there is room (growing), or at once (shrinking); false: unchanged. */
    boolean resize(long to) {
      synchronized (CallMemory.this) {
        long mine = byWorkspace.getOrDefault(workspaceId, 0L) - bytes;
        long others = used - bytes;
        if (to > bytes && ((mine > 0 && mine + to > limit()) || (others > 0 && others + to > max))) {
          return false;
        }
        add(workspaceId, to - bytes);
        bytes = to;
        return true;
      }
    }

    void release() {
      synchronized (CallMemory.this) {
        add(workspaceId, -bytes);
        bytes = 0;
      }
    }
  }
}
