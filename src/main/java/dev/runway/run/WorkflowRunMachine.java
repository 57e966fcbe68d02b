package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.ToolSchemas;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.workflow.Expression;
import dev.runway.workflow.ExpressionFailed;
import dev.runway.workflow.JsonTemplate;
import dev.runway.workflow.Step;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A workflow run's progress and the moves it may make (see the state diagram in docs/api.md): its steps,
 * one after another, on top of what every run shares ({@link RunMachine}). Each move changes the
 * state in memory and records its event; they are then saved together.
 */
public final class WorkflowRunMachine extends RunMachine {
  /**
   * The most characters a run's steps and output may take together: a run whose output would take
   * it past this fails with {@code output_too_large} (its step outputs are bounded on their own).
   */
  static final int MAX_RUN_CHARS = 512 * 1024;
  /** What makes the run's output when it succeeds; null: it has none. */
  private final JsonTemplate outputTemplate;
  /** How deep runs nest: a run at this depth starts no child run (its workflow step fails). */
  static final int MAX_DEPTH = 5;
  private final List<Step> definition;
  private final int depth;
  private final ArrayNode steps;
  private String output;
  /** The child runs the moves started, stored in the same commit as the moves (see {@link ChildRuns}). */
  private final List<ChildStart> childStarts = new ArrayList<>();
  /** The child runs to cancel with this run, in the same commit. */
  private final List<String> childrenToCancel = new ArrayList<>();

  /** A run's stored definition, parsed: its steps, what makes its output (null: none), how deep it nests. */
  record Definition(List<Step> steps, JsonTemplate output, int depth) {}

  /**
   * A child run that the step {@code step} starts, with the id {@code runId}: of workflow
   * {@code workflow} with {@code input} (an object), or of agent {@code agent} with {@code input}
   * (text or an object). One of workflow and agent is null.
   */
  record ChildStart(int step, String runId, String workflow, String agent, JsonNode input) {}

  /** The machine of {@code run}, its definition parsed now (see {@link RunMachines}, which keeps them parsed). */
  public WorkflowRunMachine(Run run, Instant now) {
    this(run, now, parse(run.definition()));
  }

  /** The machine of {@code run}, whose definition parsed is {@code definition}. */
  WorkflowRunMachine(Run run, Instant now, Definition definition) {
    super(run, now);
    this.definition = definition.steps();
    this.outputTemplate = definition.output();
    this.depth = definition.depth();
    this.steps = (ArrayNode) Json.tree(run.steps());
    this.output = run.output();
  }

  @Override
  protected String progress() {
    return Json.string(steps);
  }

  @Override
  public Run toRun(String leaseOwner, Instant leaseUntil) {
    return super.toRun(leaseOwner, leaseUntil).withOutput(output);
  }

  /** A run's stored definition, parsed. */
  static Definition parse(String definition) {
    JsonNode tree = Json.tree(definition);
    JsonNode output = tree.get("output");
    return new Definition(List.copyOf(Step.parseAll(tree.path("steps"))),
        output == null || output.isNull() ? null : JsonTemplate.compile(output, "output"), tree.path("depth").asInt(1));
  }

  /** The progress JSON of a new run: every step pending. */
  public static ArrayNode initialSteps(List<Step> definition) {
    ArrayNode steps = Json.MAPPER.createArrayNode();
    for (int i = 0; i < definition.size(); i++) {
      steps.addObject().put("index", i).put("id", definition.get(i).flow().id()).put("type", definition.get(i).type())
          .put("status", "pending")
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

  /**
   * Makes every move that needs no waiting (pass a gate, start or finish a delay, expire an
   * approval, finish the run) and stops where the run must wait. Returns true when it stands at an
   * http step whose call is due now; approval gates without a time-out of their own use
   * {@code approvalTimeoutSeconds}.
   */
  public boolean moveUntilWaiting(long approvalTimeoutSeconds) {
    while (true) {
      if (!mayAdvance(approvalTimeoutSeconds)) {
        return false;
      }
      if (currentStep >= definition.size()) {
        succeed();
        return false;
      }
      Step step = definition.get(currentStep);
      if (step(currentStep).path("status").asText().equals("pending") && step.flow().when() != null) {
        Boolean runs = holds(step.flow().when());
        if (runs == null) {
          continue; // the expression failed: so did the step, and the run unless the step goes on
        }
        if (!runs) {
          skipStep();
          continue;
        }
      }
      if (step instanceof Step.Approval gate) {
        awaitApproval(gate.timeoutSeconds());
        return false;
      }
      if (step instanceof Step.Workflow || step instanceof Step.Agent) {
        if (!step(currentStep).hasNonNull("child_run_id") && !startChild(step)) {
          continue; // the child could not start: the step failed, and the run unless the step goes on
        }
        dueAt = null; // the child's end moves the run on
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

  /**
   * What the step's expressions see: {@code inputs}, {@code steps.<id>.output} and {@code .status}
   * of every step (null and pending for those not reached), and {@code run} (id, project, workflow,
   * created_at).
   */
  public Map<String, JsonNode> expressionVariables() {
    ObjectNode byId = Json.MAPPER.createObjectNode();
    for (int i = 0; i < definition.size(); i++) {
      ObjectNode progress = step(i);
      byId.putObject(definition.get(i).flow().id()).put("status", progress.path("status").asText())
          .set("output", progress.path("output").isMissingNode() ? null : progress.get("output"));
    }
    ObjectNode run = Json.MAPPER.createObjectNode().put("id", base.id()).put("project", base.project())
        .put("workflow", base.workflowId()).put("created_at", Json.TIME.format(base.createdAt()));
    return Map.of("inputs", Json.tree(base.inputs()), "steps", byId, "run", run);
  }

  /**
   * A new run's first moves, as far as they go without waiting, its start event (by {@code actor})
   * first in {@code events}, then theirs; a run whose inputs are {@code broken} (null: they are not)
   * fails at once. Returns whether it then stands at a call due now.
   */
  boolean start(String actor, ToolSchemas.Violation broken, long approvalTimeoutSeconds, List<Event> events) {
    events.add(started(base, actor)); // first, so that its id sorts before those of the moves that follow
    boolean callDue = false;
    if (broken != null) {
      refuseInputs(broken.field(), broken.message());
    } else {
      callDue = moveUntilWaiting(approvalTimeoutSeconds);
    }
    events.addAll(events());
    return callDue;
  }

  /**
   * The run's inputs break its workflow's inputs_schema (a start the API would have refused, made by
   * a trigger): it fails at once with {@code inputs_invalid}, naming the field.
   */
  public void refuseInputs(String field, String message) {
    ObjectNode details = Json.MAPPER.createObjectNode().put("field", field);
    fail("inputs_invalid", message, details);
  }

  /**
   * The last step is done: the run succeeds with the output its workflow's {@code output} makes. An
   * output that fails to evaluate fails the run ({@code expression_failed}), as does one that would
   * take the run past {@link #MAX_RUN_CHARS} ({@code output_too_large}).
   */
  @Override
  protected void succeed() {
    if (outputTemplate != null) {
      String made;
      try {
        made = Json.string(outputTemplate.evaluate(expressionVariables()));
      } catch (ExpressionFailed e) {
        fail("expression_failed", "output: " + e.getMessage(), null);
        return;
      }
      if (made.length() + progress().length() > MAX_RUN_CHARS) {
        fail("output_too_large", "output: it takes " + made.length() + " characters, and with the steps' outputs "
            + "the run would take over " + MAX_RUN_CHARS, null);
        return;
      }
      output = made;
    }
    super.succeed();
  }

  /** Whether the current step's {@code if} holds; null when it could not be evaluated (the step then failed). */
  private Boolean holds(String when) {
    try {
      return Expression.compile(when, "if").test(expressionVariables());
    } catch (ExpressionFailed e) {
      failStep("expression_failed", null, "if: " + e.getMessage());
      return null;
    }
  }

  /**
   * Starts a child run for a workflow or agent step: makes its input, names it in the step and keeps it for
   * {@link ChildRuns} to store in this move's commit. False when it cannot (its inputs fail, or the
   * run is nested {@link #MAX_DEPTH} deep): the step failed.
   */
  private boolean startChild(Step step) {
    String workflow = step instanceof Step.Workflow call ? call.workflow() : null;
    String agent = step instanceof Step.Agent call ? call.agent() : null;
    if (depth >= MAX_DEPTH) {
      failStep("max_depth_exceeded", null, (workflow != null ? "workflow '" + workflow : "agent '" + agent)
          + "' was not started: runs nest at most " + MAX_DEPTH + " deep (a child run's child's …)");
      return false;
    }
    JsonNode input;
    try {
      input = workflow != null ? ((Step.Workflow) step).inputs(expressionVariables())
          : ((Step.Agent) step).input(expressionVariables());
    } catch (ExpressionFailed e) {
      failStep("expression_failed", null, (workflow != null ? "inputs: " : "input: ") + e.getMessage());
      return false;
    }
    String childId = Ids.newId("run", now.toEpochMilli());
    step(currentStep).put("status", "running").put("started_at", Json.TIME.format(now)).put("child_run_id", childId);
    childStarts.add(new ChildStart(currentStep, childId, workflow, agent, input));
    record("step.waiting", ENGINE, currentStep, null, Map.of("child_run_id", childId));
    return true;
  }

  /** The child runs this machine's moves started, not yet stored. */
  List<ChildStart> childStarts() {
    return childStarts;
  }

  /** The child runs to cancel with this run. */
  List<String> childrenToCancel() {
    return childrenToCancel;
  }

  int depth() {
    return depth;
  }

  /**
   * The current step's child run {@code childId} ended: the step succeeds with {@code output} or
   * fails ({@code child_failed}), and the run moves on. False when the run does not wait for it.
   */
  boolean childEnded(String childId, String childStatus, JsonNode output, JsonNode childError) {
    if (!waitsFor(childId)) {
      return false;
    }
    if (childStatus.equals(RunStatus.SUCCEEDED.wireName())) {
      JsonNode kept = output == null ? NullNode.getInstance() : output;
      int chars = Json.string(kept).length();
      if (chars + progress().length() > MAX_RUN_CHARS) {
        failStep("output_too_large", null, "child run " + childId + " succeeded, but its output (" + chars
            + " characters) cannot be kept: with it, the run's steps would take over " + MAX_RUN_CHARS + " characters");
      } else {
        completeStep(kept);
      }
    } else {
      String why = childError != null && childError.hasNonNull("message")
          ? ": " + childError.path("code").asText() + ": " + childError.path("message").asText() : "";
      failStep("child_failed", null, "child run " + childId + " ended " + childStatus + why);
    }
    return true;
  }

  /** The current step's child run {@code childId} could not be started ({@code code}, e.g. workflow_not_found). */
  boolean childNotStarted(String childId, String code, String message) {
    if (!waitsFor(childId)) {
      return false;
    }
    failStep(code, null, message);
    return true;
  }

  /**
   * The current step's child run {@code childId} waits for a person's approval (or no longer does):
   * the step shows {@code waiting} (or {@code running}). False when nothing changed.
   */
  boolean childAwaitsApproval(String childId, boolean awaits) {
    String shown = awaits ? "waiting" : "running";
    if (!waitsFor(childId) || step(currentStep).path("status").asText().equals(shown)) {
      return false;
    }
    step(currentStep).put("status", shown);
    return true;
  }

  /** Whether the run stands at a step that waits for child run {@code childId}. */
  private boolean waitsFor(String childId) {
    return !ended() && currentStep >= 0 && currentStep < steps.size() && !isDone(step(currentStep))
        && childId.equals(step(currentStep).path("child_run_id").asText(null));
  }

  /** The current step's {@code if} is false: it is skipped (its output null), and the run goes on. */
  private void skipStep() {
    finishStep(currentStep, "skipped", null);
    record("step.skipped", ENGINE, currentStep, null, Map.of());
    currentStep++;
    dueAt = now;
  }

  // ---- moves made by callers (approve, reject, cancel) ----

  @Override
  protected void approved(String actor, String comment) {
    if (currentStep >= 0) {
      finishStep(currentStep, "succeeded", null);
    }
    currentStep++;
  }

  @Override
  protected boolean rejected(String actor, String comment) {
    if (currentStep >= 0) {
      finishStep(currentStep, "failed", null);
    }
    return false;
  }

  @Override
  protected void canceled() {
    if (currentStep >= 0 && currentStep < steps.size() && !isDone(step(currentStep))
        && step(currentStep).hasNonNull("child_run_id")) {
      childrenToCancel.add(step(currentStep).get("child_run_id").asText());
    }
    ObjectNode open = openAttempt();
    if (open != null) {
      finishAttempt(open, open.get("attempt").asInt(), "canceled", null, "the run was canceled during the call");
    }
    if (currentStep >= 0 && currentStep < steps.size() && !isDone(step(currentStep))) {
      finishStep(currentStep, "canceled", null);
    }
  }

  // ---- moves made by the engine ----

  /** Pauses at an approval (the workflow's gate when currentStep is -1, else an approval step). */
  private void awaitApproval(long timeoutSeconds) {
    ObjectNode pending = awaitApproval(timeoutSeconds, currentStep >= 0 ? currentStep : null);
    if (currentStep >= 0) {
      step(currentStep).put("status", "waiting").put("started_at", Json.TIME.format(now));
      pending.put("step", currentStep);
    }
  }

  @Override
  protected void approvalExpired() {
    if (currentStep >= 0) {
      finishStep(currentStep, "failed", null);
    }
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
    record("step.attempt_finished", ENGINE, currentStep, attempt,
        data("outcome", outcome, "http_status", httpStatus, "message", message));
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

  /** The current step failed for good; so does the run, unless the step says on_failure: continue. */
  public void failStep(Integer httpStatus, String message) {
    failStep("step_failed", httpStatus, message);
  }

  /**
   * The current step failed for good, for the reason {@code code} (step_failed, expression_failed);
   * so does the run (with that code), unless the step says on_failure: continue: then the run goes on
   * to the next step, whose expressions see this one's status {@code failed}.
   */
  public void failStep(String code, Integer httpStatus, String message) {
    finishStep(currentStep, "failed", null);
    step(currentStep).set("error", Json.MAPPER.createObjectNode().put("code", code).put("message", message));
    record("step.failed", ENGINE, currentStep, null, Map.of("message", message));
    if (definition.get(currentStep).flow().continueOnFailure()) {
      currentStep++;
      dueAt = now;
      return;
    }
    ObjectNode details = Json.MAPPER.createObjectNode().put("step", currentStep);
    if (httpStatus == null) {
      details.putNull("http_status");
    } else {
      details.put("http_status", httpStatus);
    }
    fail(code, message, details);
  }

  // ---- helpers ----

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
    return s.equals("succeeded") || s.equals("failed") || s.equals("canceled") || s.equals("skipped");
  }
}
