package dev.runway.run;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.annotation.JsonRawValue;
import java.time.Instant;

/**
 * The run record as the API shows it: the spec's five fields first. The JSON documents a run keeps
 * ({@code inputs}, {@code approval}, {@code error}, {@code steps}) were written by Runway and are
 * sent as stored, without parsing them again.
 */
@JsonPropertyOrder({"id", "workflow", "status", "requires_approval", "created_at"})
public record RunView(
    String id,
    String workflow,
    String status,
    boolean requiresApproval,
    Instant createdAt,
    String project,
    @JsonRawValue String inputs,
    Instant updatedAt,
    Instant finishedAt,
    @JsonRawValue String approval,
    @JsonRawValue String error,
    @JsonRawValue String steps) {

  public static RunView of(Run run) {
    return new RunView(run.id(), run.workflowId(), run.status(), run.requiresApproval(), run.createdAt(),
        run.project(), run.inputs(), run.updatedAt(), run.finishedAt(), run.approval(), run.error(), run.steps());
  }
}
