package dev.runway.run;

import java.time.Instant;

/**
 * A run as stored. {@code inputs}, {@code approval}, {@code error}, {@code definition} (the
 * workflow as it was at start) and {@code steps} (each step's progress) are JSON text.
 */
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
    String error,
    String definition,
    String steps,
    int currentStep,
    Instant dueAt,
    String leaseOwner,
    Instant leaseUntil,
    int version) {}
