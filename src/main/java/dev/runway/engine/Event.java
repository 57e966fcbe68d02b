package dev.runway.engine;

import java.time.Instant;

/** One entry of a run's timeline: a transition or a step attempt. {@code data} is JSON text. */
public record Event(
    Long seq,
    String id,
    String workspaceId,
    String runId,
    String workflowId,
    String project,
    String type,
    String actor,
    Integer stepIndex,
    Integer attempt,
    String data,
    Instant createdAt) {}
