package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.secret.SecretReferences;
import java.time.Instant;

/** A workflow as the API shows it. */
public record WorkflowView(
    String id,
    String name,
    String description,
    boolean requiresApproval,
    JsonNode steps,
    JsonNode triggers,
    Instant createdAt,
    Instant updatedAt,
    Instant archivedAt,
    JsonNode inputsSchema,
    JsonNode output) {

  public static WorkflowView of(Workflow w) {
    return new WorkflowView(w.id(), w.name(), w.description(), w.requiresApproval(), masked(Json.tree(w.steps())),
        Json.tree(w.triggers()), w.createdAt(), w.updatedAt(), w.archivedAt(), tree(w.inputsSchema()),
        tree(w.output()));
  }

  private static JsonNode tree(String json) {
    return json == null ? null : Json.tree(json);
  }

  /** The steps with every header value given literally masked (see SecretReferences.maskLiteral). */
  private static JsonNode masked(JsonNode steps) {
    steps.forEach(step -> SecretReferences.maskLiteral(step.path("headers")));
    return steps;
  }
}
