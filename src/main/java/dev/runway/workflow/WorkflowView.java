package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
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
    Instant createdAt,
    Instant updatedAt,
    Instant archivedAt) {

  /** What a header value given literally (not a secret reference) is shown as. */
  public static final String MASKED = "********";

  public static WorkflowView of(Workflow w) {
    return new WorkflowView(w.id(), w.name(), w.description(), w.requiresApproval(), masked(Json.tree(w.steps())),
        w.createdAt(), w.updatedAt(), w.archivedAt());
  }

  /**
   * The steps with every header value given literally masked: it may be a tool's credential, and
   * every reader of the workflow would see it. A value that refers to secrets is shown as written
   * ({{secrets.NAME}} holds no secret), which is how a tool's credentials are meant to be given.
   */
  private static JsonNode masked(JsonNode steps) {
    for (JsonNode step : steps) {
      if (step.path("headers") instanceof ObjectNode headers) {
        headers.fields().forEachRemaining(h -> {
          if (!h.getValue().isTextual() || !SecretReferences.refersToSecrets(h.getValue().textValue())) {
            h.setValue(TextNode.valueOf(MASKED));
          }
        });
      }
    }
    return steps;
  }
}
