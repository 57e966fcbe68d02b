package dev.runway.run;

import java.time.Instant;

/**
 * A run as stored: a workflow run ({@code kind} "workflow", {@code workflowId} set) or an agent run
 * ({@code kind} "agent", {@code agentId} set). {@code inputs}, {@code approval}, {@code error},
 * {@code definition} (the workflow or agent as it was at start) and {@code steps} (each step's
 * progress; an agent run's progress) are JSON text.
 */
public record Run(
    String id,
    String workspaceId,
    String kind,
    String workflowId,
    String agentId,
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
    int version) {
  public static final String WORKFLOW = "workflow";
  public static final String AGENT = "agent";

  public boolean isAgent() {
    return AGENT.equals(kind);
  }
}
