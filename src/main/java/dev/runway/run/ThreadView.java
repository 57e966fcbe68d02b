package dev.runway.run;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.time.Instant;

/** A thread as the API shows it. */
@JsonPropertyOrder({"id", "object", "project"})
public record ThreadView(String id, String object, String project, Instant createdAt, Instant updatedAt, int runCount,
    String lastRunId, String activeRunId, int queuedRunCount) {

  public static ThreadView of(ThreadService.Summary s) {
    Instant updated = s.totals().updatedAt() == null ? s.thread().createdAt() : s.totals().updatedAt();
    return new ThreadView(s.thread().id(), "thread", s.thread().project(), s.thread().createdAt(), updated,
        s.totals().runCount(), s.totals().lastRunId(), s.activeRunId(), s.queuedRuns());
  }

  /** A thread's message as the API shows it: a run's transcript message, naming the run. */
  @JsonPropertyOrder({"run_id", "index"})
  public record Message(String runId, int index, String role, String content,
      com.fasterxml.jackson.databind.JsonNode toolCalls, String toolCallId, Instant createdAt) {

    public static Message of(ThreadMessage m) {
      return new Message(m.runId(), m.idx(), m.role(), m.content(),
          m.toolCalls() == null ? null : dev.runway.core.Json.tree(m.toolCalls()), m.toolCallId(), m.createdAt());
    }

    /** The cursor that pages on after this message: {@code <run_id>:<index>}. */
    public String cursor() {
      return runId + ":" + index;
    }
  }
}
