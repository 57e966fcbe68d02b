package dev.runway.engine;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Backoff;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.instance.Leases;
import dev.runway.run.Run;
import dev.runway.run.RunMachines;
import dev.runway.run.WorkflowRunMachine;
import dev.runway.workflow.ExpressionFailed;
import dev.runway.workflow.Step;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * Moves runs forward. {@link #planInstantMoves} makes every move that needs no waiting (pass a
 * gate, start or finish a delay, expire an approval, finish the run) and stops at an http step;
 * {@link #call} makes that step's call for a run this instance holds the lease on, then goes on
 * the same way. The call itself holds no thread: its answer is taken up on {@code executor}. Every
 * move is saved before the next call, so a crash loses at most the call in progress, which is then
 * made again (hence the Idempotency-Key it sends) if the step has attempts left.
 */
final class StepRunner extends CallingRunner<WorkflowRunMachine> {
  /**
   * The most a run's step progress (outputs and attempts) may take, in characters: half of what its
   * column holds, so that a run can always record why it failed. A step whose answer would take it
   * past this fails instead of keeping the answer.
   */
  static final int MAX_STEPS_CHARS = 512 * 1024;

  private final HttpStepCaller caller;
  private final RunMachines machines;

  StepRunner(GroupCommitter committer, EngineSettings settings, HttpStepCaller caller, RunMachines machines,
      Leases leases, Executor executor) {
    super(committer, settings, leases, executor);
    this.caller = caller;
    this.machines = machines;
  }

  @Override
  public Engine.Claim claim(Run run, Instant now) {
    WorkflowRunMachine m = machines.workflow(run, now);
    boolean call = planInstantMoves(m);
    return Engine.Claim.of(m, call ? leaseForCall(m) : m.toRun(null, null), call);
  }

  /**
   * Makes the moves that need no waiting; returns true when the run now stands at an http step
   * whose call is due (then {@link #leaseForCall} marks the attempt and the lease before saving).
   */
  boolean planInstantMoves(WorkflowRunMachine m) {
    return m.moveUntilWaiting(settings.approvalTimeoutSeconds());
  }

  /**
   * The run as saved when this instance takes it for an http call: the attempt recorded as started
   * (it counts from now on, whatever becomes of the call), and this instance's lease.
   */
  Run leaseForCall(WorkflowRunMachine m) {
    m.startAttempt();
    return leased(m);
  }

  /**
   * Makes the http call of a run saved by {@link #leaseForCall}, and every call after it, until the
   * run waits or ends. The future completes then; it fails only if a save failed (the lease runs out
   * and the run is taken up again).
   */
  @Override
  protected CompletableFuture<Run> callOnce(Run calling, CallMemory.Reservation room, Leases.Hold hold) {
    WorkflowRunMachine before = machines.workflow(calling, calling.updatedAt());
    int index = before.currentStep();
    Step.Http step = (Step.Http) before.definition().get(index);
    CompletableFuture<HttpStepCaller.Outcome> outcome;
    try {
      StepCall call = StepCall.of(step, before.expressionVariables(),
          () -> callBody(calling, index, before.currentAttempt(), before));
      outcome = caller.call(calling.workspaceId(), step, call.url(), call.headers(), call.body(),
          before.idempotencyKey(index));
    } catch (ExpressionFailed e) {
      outcome = CompletableFuture.completedFuture(HttpStepCaller.Outcome.expressionFailed(e.getMessage()));
    }
    return outcome.thenComposeAsync(answered -> settle(calling, answered, room, hold), executor);
  }

  @Override
  public long weight(Run run) {
    return CallMemory.weight(run, settings.maxResponseBytes());
  }

  private CompletableFuture<Run> settle(Run calling, HttpStepCaller.Outcome outcome, CallMemory.Reservation room, Leases.Hold hold) {
    WorkflowRunMachine m = moveOn(calling, outcome);
    boolean callAgain = planInstantMoves(m) && !stopping() && hasRoom(m, room);
    Run next = callAgain ? leaseForCall(m) : m.toRun(null, null);
    if (next.steps().length() > MAX_STEPS_CHARS) {
      m = moveOn(calling, HttpStepCaller.Outcome.fail(outcome.httpStatus(), "HTTP " + outcome.httpStatus()
          + " but the answer cannot be kept: with it, the run's step outputs and attempts would take over "
          + MAX_STEPS_CHARS + " characters"));
      callAgain = planInstantMoves(m) && !stopping() && hasRoom(m, room);
      next = callAgain ? leaseForCall(m) : m.toRun(null, null);
    }
    return save(next, m, hold, callAgain);
  }

  /**
   * Whether the run's next call fits in memory as the run now is (it grew by the answer). If not,
   * the run is saved due and unleased, and a later claim makes the call when there is room.
   */
  private boolean hasRoom(WorkflowRunMachine m, CallMemory.Reservation room) {
    return room.resize(weight(m.toRun(null, null)));
  }

  /** The run after the outcome of its attempt in progress. */
  private WorkflowRunMachine moveOn(Run calling, HttpStepCaller.Outcome outcome) {
    WorkflowRunMachine m = machines.workflow(calling, Time.now());
    Step.Http step = (Step.Http) m.definition().get(m.currentStep());
    int attempt = m.currentAttempt();
    m.recordAttempt(outcome.succeeded() ? "succeeded" : "failed", outcome.httpStatus(), outcome.message());
    if (outcome.succeeded()) {
      m.completeStep(outcome.output());
    } else if (outcome.retryable() && attempt < step.maxAttempts()) {
      m.retryAt(m.now().plus(Backoff.jittered(settings.retryBase(), attempt)));
    } else {
      String why = outcome.retryable() ? outcome.message() + " (after " + attempt + " attempts)" : outcome.message();
      m.failStep(outcome.code(), outcome.httpStatus(), why);
    }
    return m;
  }

  /** What the tool receives: the run, its inputs and the outputs of the steps before this one. */
  private static ObjectNode callBody(Run run, int index, int attempt, WorkflowRunMachine m) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.put("run_id", run.id()).put("workflow", run.workflowId()).put("project", run.project())
        .put("step_index", index).put("attempt", attempt);
    body.set("inputs", Json.tree(run.inputs()));
    ArrayNode outputs = body.putArray("outputs");
    for (int i = 0; i < index; i++) {
      outputs.add(m.step(i).get("output"));
    }
    return body;
  }

}
