package dev.runway.run;

import java.time.Instant;

/** One entry of a run's timeline: a transition, a step attempt, a model or tool call. {@code data} is JSON text. */
public record Event(
    Long seq,
    String id,
    String workspaceId,
    String runId,
    String workflowId,
    String agentId,
    String project,
    String type,
    String actor,
    Integer stepIndex,
    Integer attempt,
    String data,
    Instant createdAt) {}
