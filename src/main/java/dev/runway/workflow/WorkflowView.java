package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import java.time.Instant;

/** A workflow as the API shows it. */
public record WorkflowView(
    String id,
    String name,
    String description,
    boolean requiresApproval,
    JsonNode steps,
    Instant createdAt,
    Instant updatedAt,
    Instant archivedAt) {

  public static WorkflowView of(Workflow w) {
    return new WorkflowView(w.id(), w.name(), w.description(), w.requiresApproval(), Json.tree(w.steps()),
        w.createdAt(), w.updatedAt(), w.archivedAt());
  }
}
