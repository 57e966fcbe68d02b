package dev.runway.run;

import java.time.Instant;

/** A run as stored; {@code inputs}, {@code approval} and {@code error} are JSON text. */
public record Run(
    String id,
    String workspaceId,
    String workflowId,
    String project,
    String status,
    boolean requiresApproval,
    String inputs,
    Instant createdAt,
    Instant updatedAt,
    Instant finishedAt,
    String approval,
    String error) {}
