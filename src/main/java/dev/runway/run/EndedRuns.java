package dev.runway.run;

import dev.runway.core.WeighedCache;
import java.util.Optional;

/**
 * Runs that have ended, kept in memory for GET /v1/runs/{id}. A run that has ended never changes
 * again (every save of a run is refused once it has a finished_at: see RunDao.saveProgress), so a
 * copy stays true on every instance and needs no invalidation. Runs still in progress are always
 * read from the database, where another instance may be moving them.
 *
 * <p>Bounded by the size of the runs' text (see WeighedCache).
 */
final class EndedRuns {
  /** A run larger than this (large inputs or step outputs) is not kept. */
  private static final int MAX_RUN_CHARS = 64 * 1024;

  /** About 4 MB of run text (JSON documents and ids, one byte a character for ASCII). */
  private final WeighedCache<String, Run> runs = new WeighedCache<>(4_000_000, (id, run) -> size(run));

  /** The ended run, if it is kept here and belongs to the workspace. */
  Optional<Run> find(String workspaceId, String runId) {
    Run run = runs.get(runId);
    return run != null && run.workspaceId().equals(workspaceId) ? Optional.of(run) : Optional.empty();
  }

  /** Keeps {@code run} if it has ended and is not too large. */
  void offer(Run run) {
    if (run.finishedAt() != null && size(run) <= MAX_RUN_CHARS) {
      runs.putIfAbsent(run.id(), run);
    }
  }

  private static long size(Run run) {
    return run.id().length() + run.workspaceId().length() + length(run.workflowId()) + length(run.agentId())
        + run.project().length()
        + run.status().length() + run.inputs().length() + length(run.approval()) + length(run.error())
        + run.definition().length() + run.steps().length() + 200; // the record itself and its times
  }

  private static int length(String text) {
    return text == null ? 0 : text.length();
  }
}
