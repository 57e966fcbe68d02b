package dev.runway.workflow;

import java.time.Instant;

/**
 * A workflow definition as stored; {@code steps} and {@code triggers} are JSON array text,
 * {@code inputsSchema}, {@code output} and {@code concurrency} JSON text or null (see {@link WorkflowDefinition}).
 */
public record Workflow(
    String workspaceId,
    String id,
    String name,
    String description,
    boolean requiresApproval,
    String steps,
    String triggers,
    Instant createdAt,
    Instant updatedAt,
    Instant archivedAt,
    String inputsSchema,
    String output,
    String concurrency) {

  public boolean archived() {
    return archivedAt != null;
  }
}
