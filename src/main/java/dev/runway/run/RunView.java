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

  /** Most JSON a run event's {@code data} holds; a larger run is sent as a {@link Summary}. */
  int MAX_EVENT_DATA_CHARS = 64 * 1024;

  /**
   * The run as a run event carries it (a webhook's {@code data}): the run record without its steps'
   * outputs, with {@code url} to read them. A run of 8 steps of 60 KB is a 480 KB record, and the
   * dispatcher holds one per delivery in flight: 50 such runs and 2 slow endpoints ran the heap out.
   * When even that passes {@link #MAX_EVENT_DATA_CHARS} (large inputs, a long error), a summary
   * with {@code truncated: true} goes instead.
   */
  static String eventData(Run run) {
    RunView view = run.isAgent() ? AgentRun.of(run) : WorkflowRun.of(run).withoutOutputs();
    String json = Json.string(new Linked(view, url(run)));
    if (json.length() <= MAX_EVENT_DATA_CHARS) {
      return json;
    }
    return Json.string(new Summary(run.id(), run.kind(), run.workflowId(), run.agentId(), run.status(),
        run.requiresApproval(), run.project(), run.createdAt(), run.updatedAt(), run.finishedAt(), url(run), true));
  }

  private static String url(Run run) {
    return "/v1/runs/" + run.id();
  }

  /** A view with the path to read the whole run appended. */
  record Linked(@com.fasterxml.jackson.annotation.JsonUnwrapped RunView run, String url) {}

  /** What a run event carries when the run without outputs is still too large. */
  @JsonPropertyOrder({"id", "kind", "workflow", "agent", "status"})
  record Summary(String id, String kind, String workflow, String agent, String status, boolean requiresApproval,
      String project, Instant createdAt, Instant updatedAt, Instant finishedAt, String url, boolean truncated) {}

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
      String parentRunId,
      String rerunOf,
      String concurrencyKey,
      String project,
      @JsonRawValue String inputs,
      Instant updatedAt,
      Instant finishedAt,
      @JsonRawValue String approval,
      @JsonRawValue String error,
      @JsonRawValue String output,
      @JsonRawValue String steps) implements RunView {

    static WorkflowRun of(Run run) {
      return new WorkflowRun(run.id(), run.workflowId(), run.status(), run.requiresApproval(), run.createdAt(),
          Run.WORKFLOW, null, run.parentRunId(), run.rerunOf(), run.concurrencyKey(), run.project(), run.inputs(), run.updatedAt(), run.finishedAt(), run.approval(),
          run.error(), run.output(), run.steps());
    }

    /** The same run with each step's {@code output} left out (copied token by token, never as a tree). */
    WorkflowRun withoutOutputs() {
      String lean = steps == null ? null : Json.withoutFieldsAt(steps, 2, "output");
      return new WorkflowRun(id, workflow, status, requiresApproval, createdAt, kind, agent, parentRunId, rerunOf, concurrencyKey,
          project, inputs,
          updatedAt, finishedAt, approval, error, output, lean);
    }
  }

  /**
   * An agent run: its input, its output (the last assistant text, null until there is one), what it
   * used, the model it asks for and the endpoint that served it (null until the first model call),
   * its thread (null for a child run of a workflow's agent step), and whether the model streams its
   * answers.
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
      String parentRunId,
      String threadId,
      String project,
      @JsonRawValue String input,
      JsonNode output,
      JsonNode usage,
      String model,
      String modelEndpoint,
      boolean stream,
      Instant updatedAt,
      Instant finishedAt,
      @JsonRawValue String approval,
      @JsonRawValue String error) implements RunView {

    static AgentRun of(Run run) {
      JsonNode progress = Json.tree(run.steps());
      JsonNode definition = Json.tree(run.definition());
      String endpoint = progress.path("model_endpoint").asText(null);
      // The sandbox answers whatever model the run names: the run says so rather than name a model that never ran.
      String model = AgentRunMachine.SANDBOX.equals(endpoint) ? AgentRunMachine.SANDBOX : definition.path("model").asText();
      return new AgentRun(run.id(), Run.AGENT, run.agentId(), null, run.status(), run.requiresApproval(),
          run.createdAt(), run.parentRunId(), run.threadId(), run.project(), run.inputs(), progress.path("output"),
          progress.path("usage"), model, endpoint, progress.path("stream").asBoolean(false), run.updatedAt(),
          run.finishedAt(), run.approval(), run.error());
    }
  }
}
