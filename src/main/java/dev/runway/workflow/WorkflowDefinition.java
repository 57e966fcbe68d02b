package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.http.JsonFields;
import java.util.Set;

/** What a caller (or a file under config/workflows) gives for a workflow, checked field by field. */
public record WorkflowDefinition(String name, String description, boolean requiresApproval, JsonNode steps) {
  private static final Set<String> FIELDS = Set.of("name", "description", "requires_approval", "steps");

  /** Reads a definition; a missing name defaults to the workflow id. Refuses bad fields with ApiException. */
  public static WorkflowDefinition parse(String workflowId, ObjectNode body) {
    JsonFields fields = JsonFields.of(body, FIELDS);
    return new WorkflowDefinition(
        fields.optionalString("name", workflowId, 200),
        fields.optionalString("description", "", 2000),
        fields.optionalBoolean("requires_approval", false),
        fields.optionalArray("steps"));
  }

  String stepsJson() {
    return Json.string(steps);
  }
}
