package dev.runway.run;

import java.time.Instant;

/**
 * One message of an agent run's transcript, as the Chat Completions API has it: {@code role}
 * system, user, assistant or tool; {@code content} its text (null for an assistant message with
 * tool calls only); {@code toolCalls} the assistant's tool calls as JSON text; {@code toolCallId}
 * the call a tool message answers.
 */
public record RunMessage(String runId, int idx, String role, String content, String toolCalls, String toolCallId,
    Instant createdAt) {}
