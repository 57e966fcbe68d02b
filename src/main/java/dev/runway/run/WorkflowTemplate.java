package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.ToolSchemas;
import dev.runway.core.Json;
import dev.runway.workflow.Step;
import dev.runway.workflow.Workflow;
import java.util.List;
import java.util.Objects;

/**
 * What every run of a workflow version starts with, as stored JSON (its definition and its steps'
 * first progress), and the schema its inputs must meet (null: any). {@code version} is the
 * workflow it was made of, to tell whether it is still current; {@code depth} is how deep its runs
 * nest (1: started by a caller or a trigger; a child run is one deeper than its parent).
 */
record WorkflowTemplate(Workflow version, int depth, String definition, String steps, JsonNode inputsSchema) {

  static WorkflowTemplate of(Workflow workflow, int depth) {
    List<Step> steps = Step.parseAll(Json.tree(workflow.steps()));
    ObjectNode definition = Json.MAPPER.createObjectNode().put("requires_approval", workflow.requiresApproval());
    Step.toJson(steps, definition.putArray("steps"));
    if (workflow.output() != null) {
      definition.set("output", Json.tree(workflow.output()));
    }
    if (workflow.concurrency() != null) {
      definition.set("concurrency", Json.tree(workflow.concurrency()));
    }
    if (depth > 1) {
      definition.put("depth", depth);
    }
    return new WorkflowTemplate(workflow, depth, Json.string(definition),
        Json.string(WorkflowRunMachine.initialSteps(steps)),
        workflow.inputsSchema() == null ? null : Json.tree(workflow.inputsSchema()));
  }

  boolean madeOf(Workflow workflow) {
    return version.requiresApproval() == workflow.requiresApproval() && version.steps().equals(workflow.steps())
        && Objects.equals(version.inputsSchema(), workflow.inputsSchema())
        && Objects.equals(version.output(), workflow.output())
        && Objects.equals(version.concurrency(), workflow.concurrency());
  }

  /** What is wrong with {@code inputs} by the inputs_schema; null when nothing is (or there is none). */
  ToolSchemas.Violation violation(ObjectNode inputs) {
    if (inputsSchema == null) {
      return null;
    }
    ObjectNode given = inputs == null ? Json.MAPPER.createObjectNode() : inputs;
    return ToolSchemas.firstViolationWithin(inputsSchema, given, "inputs", "the workflow's inputs_schema");
  }
}
