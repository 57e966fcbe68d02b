package dev.runway.run;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.annotation.JsonRawValue;
import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import java.time.Instant;

/**
 * The run record as the API shows it, by kind. The JSON documents a run keeps ({@code inputs},
 * {@code approval}, {@code error}, {@code steps}) were written by Runway and are sent as stored,
 * without parsing them again.
 */
public sealed interface RunView permits RunView.WorkflowRun, RunView.AgentRun {
  String id();

  static RunView of(Run run) {
    return run.isAgent() ? AgentRun.of(run) : WorkflowRun.of(run);
  }

  /** A workflow run: the spec's five fields first. */
  @JsonPropertyOrder({"id", "workflow", "status", "requires_approval", "created_at", "kind", "agent"})
  record WorkflowRun(
      String id,
      String workflow,
      String status,
      boolean requiresApproval,
      Instant createdAt,
      String kind,
      String agent,
      String project,
      @JsonRawValue String inputs,
      Instant updatedAt,
      Instant finishedAt,
      @JsonRawValue String approval,
      @JsonRawValue String error,
      @JsonRawValue String steps) implements RunView {

    static WorkflowRun of(Run run) {
      return new WorkflowRun(run.id(), run.workflowId(), run.status(), run.requiresApproval(), run.createdAt(),
          Run.WORKFLOW, null, run.project(), run.inputs(), run.updatedAt(), run.finishedAt(), run.approval(),
          run.error(), run.steps());
    }
  }

  /**
   * An agent run: its input, its output (the last assistant text, null until there is one), what it
   * used, the model it asks for and the endpoint that served it (null until the first model call).
   */
  @JsonPropertyOrder({"id", "kind", "agent", "workflow", "status", "requires_approval", "created_at"})
  record AgentRun(
      String id,
      String kind,
      String agent,
      String workflow,
      String status,
      boolean requiresApproval,
      Instant createdAt,
      String project,
      @JsonRawValue String input,
      JsonNode output,
      JsonNode usage,
      String model,
      String modelEndpoint,
      Instant updatedAt,
      Instant finishedAt,
      @JsonRawValue String approval,
      @JsonRawValue String error) implements RunView {

    static AgentRun of(Run run) {
      JsonNode progress = Json.tree(run.steps());
      JsonNode definition = Json.tree(run.definition());
      return new AgentRun(run.id(), Run.AGENT, run.agentId(), null, run.status(), run.requiresApproval(),
          run.createdAt(), run.project(), run.inputs(), progress.path("output"), progress.path("usage"),
          definition.path("model").asText(), progress.path("model_endpoint").asText(null), run.updatedAt(), run.finishedAt(),
          run.approval(), run.error());
    }
  }
}
