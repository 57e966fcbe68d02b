package dev.runway.run;

import java.time.Instant;

/** A message of a thread: a message of one of its runs ({@code runId}), as {@link RunMessage}. */
public record ThreadMessage(String runId, int idx, String role, String content, String toolCalls, String toolCallId,
    Instant createdAt) {

  /** Its characters, as a window counts them. */
  long chars() {
    return (content == null ? 0 : content.length()) + (toolCalls == null ? 0 : toolCalls.length());
  }
}
