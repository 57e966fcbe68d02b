package dev.runway.run;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import java.time.Instant;

/** The run record as the API shows it: the spec's five fields first. */
@JsonPropertyOrder({"id", "workflow", "status", "requires_approval", "created_at"})
public record RunView(
    String id,
    String workflow,
    String status,
    boolean requiresApproval,
    Instant createdAt,
    String project,
    JsonNode inputs,
    Instant updatedAt,
    Instant finishedAt,
    JsonNode approval,
    JsonNode error,
    JsonNode steps) {

  public static RunView of(Run run) {
    return new RunView(run.id(), run.workflowId(), run.status(), run.requiresApproval(), run.createdAt(),
        run.project(), Json.tree(run.inputs()), run.updatedAt(), run.finishedAt(),
        run.approval() == null ? null : Json.tree(run.approval()),
        run.error() == null ? null : Json.tree(run.error()),
        Json.tree(run.steps()));
  }
}
