package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import java.time.Instant;

/** A transcript message as the API shows it: tool_calls in the Chat Completions API's shape. */
public record MessageView(int index, String role, String content, JsonNode toolCalls, String toolCallId,
    Instant createdAt) {

  public static MessageView of(RunMessage m) {
    return new MessageView(m.idx(), m.role(), m.content(), m.toolCalls() == null ? null : Json.tree(m.toolCalls()),
        m.toolCallId(), m.createdAt());
  }
}
