package dev.runway.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.WeighedCache;
import dev.runway.http.ApiException;
import dev.runway.run.Run;
import dev.runway.run.RunStatus;
import dev.runway.workflow.Step;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One run's progress and the moves it may make (see the README's state diagram). Each move
 * changes the state in memory and records its event; {@link #toRun} and {@link #events} are then
 * saved together, only if nobody else changed the run in between (its version).
 */
public final class RunStateMachine {
  public static final String ENGINE = "engine";

  private final Run base;
  private final List<Step> definition;
  private final ArrayNode steps;
  private final Instant now;
  private final List<Event> events = new ArrayList<>();
  private RunStatus status;
  private int currentStep;
  private ObjectNode approval;
  private ObjectNode error;
  private Instant dueAt;
  private Instant finishedAt;

  public RunStateMachine(Run run, Instant now) {
    this.base = run;
    this.definition = parsedSteps(run.definition());
    this.steps = (ArrayNode) Json.tree(run.steps());
    this.now = now;
    this.status = RunStatus.parse(run.status()).orElseThrow();
    this.currentStep = run.currentStep();
    this.approval = run.approval() == null ? null : (ObjectNode) Json.tree(run.approval());
    this.error = run.error() == null ? null : (ObjectNode) Json.tree(run.error());
    this.dueAt = run.dueAt();
    this.finishedAt = run.finishedAt();
  }

  /**
   * Definitions are shared by many runs (one per workflow version): each is parsed once. Keyed by
   * the definition's text, weighed as three times it (the text and the parsed steps), about 3 MB.
   */
  private static final WeighedCache<String, List<Step>> PARSED =
      new WeighedCache<>(3_000_000, (definition, steps) -> 3L * definition.length());

  private static List<Step> parsedSteps(String definition) {
    List<Step> steps = PARSED.get(definition);
    if (steps == null) {
      steps = List.copyOf(Step.parseAll(Json.tree(definition).path("steps")));
      PARSED.put(definition, steps);
    }
    return steps;
  }

  /** The progress JSON of a new run: every step pending. */
  public static ArrayNode initialSteps(List<Step> definition) {
    ArrayNode steps = Json.MAPPER.createArrayNode();
    for (int i = 0; i < definition.size(); i++) {
      steps.addObject().put("index", i).put("type", definition.get(i).type()).put("status", "pending")
          .putNull("started_at").putNull("finished_at").putNull("output").putArray("attempts");
    }
    return steps;
  }

  public int currentStep() {
    return currentStep;
  }

  public List<Step> definition() {
    return definition;
  }

  public ObjectNode step(int index) {
    return (ObjectNode) steps.get(index);
  }

  public Instant now() {
    return now;
  }

  public List<Event> events() {
    return events;
  }

  /**
   * Makes every move that needs no waiting (pass a gate, start or finish a delay, expire an
   * approval, finish the run) and stops where the run must wait. Returns true when it stands at an
   * http step whose call is due now; approval gates without a time-out of their own use
   * {@code approvalTimeoutSeconds}.
   */
  public boolean moveUntilWaiting(long approvalTimeoutSeconds) {
    while (true) {
      if (status != RunStatus.RUNNING && status != RunStatus.AWAITING_APPROVAL) {
        dueAt = null; // ended: nothing is due
        return false;
      }
      if (status == RunStatus.AWAITING_APPROVAL) {
        if (approvalTimedOut()) {
          expireApproval();
        } else {
          dueAt = Instant.parse(approval.path("expires_at").asText());
        }
        return false;
      }
      if (currentStep < 0) {
        awaitApproval(approvalTimeoutSeconds);
        return false;
      }
      if (currentStep >= definition.size()) {
        succeed();
        return false;
      }
      Step step = definition.get(currentStep);
      if (step instanceof Step.Approval gate) {
        awaitApproval(gate.timeoutSeconds());
        return false;
      }
      if (step instanceof Step.Delay delay) {
        if (!step(currentStep).hasNonNull("wake_at")) {
          startDelay(delay.seconds());
        }
        Instant wake = Instant.parse(step(currentStep).get("wake_at").asText());
        if (now.isBefore(wake)) {
          dueAt = wake;
          return false;
        }
        completeStep(null);
        continue;
      }
      if (closeCutOffAttempt((Step.Http) step)) {
        continue; // no attempts left: the step (and the run) failed
      }
      return dueAt == null || !now.isBefore(dueAt); // an http step: due now, or waiting for its retry time
    }
  }

  /**
   * An attempt is recorded when it starts, before its call goes out: one whose outcome was never
   * recorded was cut off (the server stopped, or could not save what came of it). It counts, so that
   * a call whose answer cannot be saved is not made for ever: past max_attempts the step fails.
   * Returns true when the step failed.
   */
  private boolean closeCutOffAttempt(Step.Http step) {
    ObjectNode open = openAttempt();
    if (open == null) {
      return false;
    }
    int attempt = open.get("attempt").asInt();
    finishAttempt(open, attempt, "interrupted", null,
        "cut off before its answer was recorded (the server stopped, or could not save the answer)");
    if (attempt < step.maxAttempts()) {
      return false;
    }
    failStep(null, "attempt " + attempt + " was cut off before its answer was recorded (after " + attempt
        + " attempts)");
    return true;
  }

  /** The current step's attempt that has started and not finished, if any. */
  private ObjectNode openAttempt() {
    if (currentStep < 0 || currentStep >= steps.size()) {
      return null;
    }
    JsonNode attempts = step(currentStep).path("attempts");
    ObjectNode last = attempts.isEmpty() ? null : (ObjectNode) attempts.get(attempts.size() - 1);
    return last != null && last.path("finished_at").isNull() ? last : null;
  }

  /** The number of the current step's attempt in progress (the one {@link #startAttempt} recorded). */
  public int currentAttempt() {
    ObjectNode open = openAttempt();
    return open == null ? 0 : open.get("attempt").asInt();
  }

  /** The run to save: the new state with the next version, held by {@code leaseOwner} until {@code leaseUntil}. */
  public Run toRun(String leaseOwner, Instant leaseUntil) {
    return new Run(base.id(), base.workspaceId(), base.workflowId(), base.project(), status.wireName(),
        base.requiresApproval(), base.inputs(), base.createdAt(), now, finishedAt,
        approval == null ? null : Json.string(approval), error == null ? null : Json.string(error),
        base.definition(), Json.string(steps), currentStep, dueAt, leaseOwner, leaseUntil, base.version() + 1);
  }

  // ---- moves made by callers (approve, reject, cancel) ----

  public void approve(String actor, String comment) {
    requireStatus("approve", RunStatus.AWAITING_APPROVAL);
    decide("approved", actor, comment);
    if (currentStep >= 0) {
      finishStep(currentStep, "succeeded", null);
    }
    currentStep++;
    status = RunStatus.RUNNING;
    dueAt = now;
    record("run.approved", actor, null, null, Map.of("comment", comment == null ? "" : comment));
  }

  public void reject(String actor, String comment) {
    requireStatus("reject", RunStatus.AWAITING_APPROVAL);
    decide("rejected", actor, comment);
    if (currentStep >= 0) {
      finishStep(currentStep, "failed", null);
    }
    finish(RunStatus.REJECTED, actor, Map.of("comment", comment == null ? "" : comment));
  }

  public void cancel(String actor) {
    if (status != RunStatus.RUNNING && status != RunStatus.AWAITING_APPROVAL) {
      throw conflict("cancel");
    }
    if (approval != null && "pending".equals(approval.path("status").asText())) {
      approval.put("status", "canceled");
    }
    ObjectNode open = openAttempt();
    if (open != null) {
      finishAttempt(open, open.get("attempt").asInt(), "canceled", null, "the run was canceled during the call");
    }
    if (currentStep >= 0 && currentStep < steps.size() && !isDone(step(currentStep))) {
      finishStep(currentStep, "canceled", null);
    }
    finish(RunStatus.CANCELED, actor, Map.of());
  }

  // ---- moves made by the engine ----

  /** Pauses at an approval (the workflow's gate when currentStep is -1, else an approval step). */
  private void awaitApproval(long timeoutSeconds) {
    Instant expires = now.plusSeconds(timeoutSeconds);
    approval = Json.MAPPER.createObjectNode().put("status", "pending");
    approval.put("requested_at", Json.TIME.format(now)).put("expires_at", Json.TIME.format(expires))
        .putNull("decided_at").putNull("decided_by").putNull("comment");
    if (currentStep >= 0) {
      step(currentStep).put("status", "waiting").put("started_at", Json.TIME.format(now));
      approval.put("step", currentStep);
    }
    status = RunStatus.AWAITING_APPROVAL;
    dueAt = expires;
    record("run.awaiting_approval", ENGINE, currentStep >= 0 ? currentStep : null, null,
        Map.of("expires_at", Json.TIME.format(expires)));
  }

  /** Whether the run waits at an approval whose time has run out, noticed by the engine or not. */
  public boolean approvalTimedOut() {
    return status == RunStatus.AWAITING_APPROVAL && approval != null
        && !now.isBefore(Instant.parse(approval.path("expires_at").asText()));
  }

  /** The approval's time ran out: the run fails with approval_expired. */
  public void expireApproval() {
    approval.put("status", "expired").put("decided_at", Json.TIME.format(now));
    if (currentStep >= 0) {
      finishStep(currentStep, "failed", null);
    }
    fail("approval_expired", "no decision on the approval before " + approval.path("expires_at").asText(), null);
  }

  /** Starts the timer of a delay step. */
  private void startDelay(long seconds) {
    Instant wake = now.plusSeconds(seconds);
    step(currentStep).put("status", "waiting").put("started_at", Json.TIME.format(now))
        .put("wake_at", Json.TIME.format(wake));
    dueAt = wake;
    record("step.waiting", ENGINE, currentStep, null, Map.of("wake_at", Json.TIME.format(wake)));
  }

  /** Marks an http step as being called and records its next attempt as started, before the call goes out. */
  public void startAttempt() {
    ObjectNode step = step(currentStep);
    if (step.path("started_at").isNull()) {
      step.put("started_at", Json.TIME.format(now));
    }
    step.put("status", "running");
    ArrayNode attempts = (ArrayNode) step.get("attempts");
    int attempt = attempts.size() + 1;
    attempts.addObject().put("attempt", attempt).put("started_at", Json.TIME.format(now)).putNull("finished_at")
        .putNull("outcome").putNull("http_status").putNull("message");
    record("step.attempt_started", ENGINE, currentStep, attempt, Map.of());
  }

  /** Records how the attempt in progress ended. */
  public void recordAttempt(String outcome, Integer httpStatus, String message) {
    ObjectNode open = openAttempt();
    if (open == null) {
      throw new IllegalStateException("run " + base.id() + " has no attempt in progress");
    }
    finishAttempt(open, open.get("attempt").asInt(), outcome, httpStatus, message);
  }

  private void finishAttempt(ObjectNode a, int attempt, String outcome, Integer httpStatus, String message) {
    a.put("finished_at", Json.TIME.format(now)).put("outcome", outcome);
    if (httpStatus == null) {
      a.putNull("http_status");
    } else {
      a.put("http_status", httpStatus);
    }
    a.put("message", message);
    Map<String, Object> data = new java.util.LinkedHashMap<>();
    data.put("outcome", outcome);
    data.put("http_status", httpStatus);
    data.put("message", message);
    record("step.attempt_finished", ENGINE, currentStep, attempt, data);
  }

  /** The current step is done; the next one is due now. */
  public void completeStep(JsonNode output) {
    finishStep(currentStep, "succeeded", output);
    record("step.succeeded", ENGINE, currentStep, null, Map.of());
    currentStep++;
    dueAt = now;
  }

  /** An attempt failed and will be retried at {@code retryAt}. */
  public void retryAt(Instant retryAt) {
    step(currentStep).put("status", "retrying");
    dueAt = retryAt;
  }

  /** The current step failed for good; so does the run. */
  public void failStep(Integer httpStatus, String message) {
    finishStep(currentStep, "failed", null);
    record("step.failed", ENGINE, currentStep, null, Map.of("message", message));
    ObjectNode details = Json.MAPPER.createObjectNode().put("step", currentStep);
    if (httpStatus == null) {
      details.putNull("http_status");
    } else {
      details.put("http_status", httpStatus);
    }
    fail("step_failed", message, details);
  }

  private void succeed() {
    finish(RunStatus.SUCCEEDED, ENGINE, Map.of());
  }

  // ---- helpers ----

  private void fail(String code, String message, ObjectNode details) {
    error = Json.MAPPER.createObjectNode().put("code", code).put("message", message);
    if (details != null) {
      error.setAll(details);
    }
    finish(RunStatus.FAILED, ENGINE, Map.of("error", code));
  }

  private void finish(RunStatus terminal, String actor, Map<String, Object> data) {
    status = terminal;
    finishedAt = now;
    dueAt = null;
    record("run." + terminal.wireName(), actor, null, null, data);
  }

  private void decide(String decision, String actor, String comment) {
    approval.put("status", decision).put("decided_at", Json.TIME.format(now)).put("decided_by", actor);
    if (comment == null) {
      approval.putNull("comment");
    } else {
      approval.put("comment", comment);
    }
  }

  private void finishStep(int index, String stepStatus, JsonNode output) {
    ObjectNode step = step(index);
    step.put("status", stepStatus).put("finished_at", Json.TIME.format(now));
    if (step.path("started_at").isNull()) {
      step.put("started_at", Json.TIME.format(now));
    }
    if (output != null) {
      step.set("output", output);
    }
  }

  private static boolean isDone(ObjectNode step) {
    String s = step.path("status").asText();
    return s.equals("succeeded") || s.equals("failed") || s.equals("canceled");
  }

  private void requireStatus(String action, RunStatus required) {
    if (status != required) {
      throw conflict(action);
    }
  }

  private ApiException conflict(String action) {
    return new ApiException(409, "run_state_conflict",
        "cannot " + action + " a run that is " + status.wireName(), null,
        Map.of(), Map.of("current_status", status.wireName()));
  }

  /** A run's new state and the events of the move that led to it. */
  public record Moved(Run run, List<Event> events) {}

  /**
   * A run that cannot be read or moved (its stored documents are broken): it fails with
   * internal_error, without its documents being read, so that it neither stays due for ever nor
   * blocks the runs claimed with it.
   */
  public static Moved failedUnreadable(Run run, Instant now) {
    String error = Json.string(Map.of("code", "internal_error",
        "message", "the run's stored state could not be read; see the server log for " + run.id()));
    // What the run record shows of it must stay JSON: a broken document is shown as empty.
    Run failed = new Run(run.id(), run.workspaceId(), run.workflowId(), run.project(), RunStatus.FAILED.wireName(),
        run.requiresApproval(), readable(run.inputs(), "{}"), run.createdAt(), now, now, readable(run.approval(), null),
        error, run.definition(), readable(run.steps(), "[]"), run.currentStep(), null, null, null, run.version() + 1);
    return new Moved(failed, List.of(event(run, "run.failed", ENGINE, null, null, Map.of("error", "internal_error"),
        now)));
  }

  private static String readable(String json, String otherwise) {
    if (json == null) {
      return null;
    }
    try {
      Json.tree(json);
      return json;
    } catch (RuntimeException e) {
      return otherwise;
    }
  }

  /** Records the first event of a new run. */
  public static Event started(Run run, String actor) {
    return event(run, "run.started", actor, null, null, Map.of("status", run.status()), run.createdAt());
  }

  private void record(String type, String actor, Integer step, Integer attempt, Map<String, ?> data) {
    events.add(event(base, type, actor, step, attempt, data, now));
  }

  private static Event event(Run run, String type, String actor, Integer step, Integer attempt, Map<String, ?> data,
      Instant at) {
    return new Event(null, Ids.newId("evt", at.toEpochMilli()), run.workspaceId(), run.id(), run.workflowId(),
        run.project(), type, actor, step, attempt, Json.string(data), at);
  }
}
