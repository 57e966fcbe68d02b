package dev.runway.engine;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.run.Run;
import dev.runway.run.WorkflowRunMachine;
import dev.runway.workflow.Step;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves runs forward. {@link #planInstantMoves} makes every move that needs no waiting (pass a
 * gate, start or finish a delay, expire an approval, finish the run) and stops at an http step;
 * {@link #call} makes that step's call for a run this instance holds the lease on, then goes on
 * the same way. The call itself holds no thread: its answer is taken up on {@code executor}. Every
 * move is saved before the next call, so a crash loses at most the call in progress, which is then
 * made again (hence the Idempotency-Key it sends) if the step has attempts left.
 */
final class StepRunner implements RunAdvancer {
  private static final Logger LOG = LoggerFactory.getLogger(StepRunner.class);
  /**
   * The most a run's step progress (outputs and attempts) may take, in characters: half of what its
   * column holds, so that a run can always record why it failed. A step whose answer would take it
   * past this fails instead of keeping the answer.
   */
  static final int MAX_STEPS_CHARS = 512 * 1024;

  private final GroupCommitter committer;
  private final EngineSettings settings;
  private final HttpStepCaller caller;
  private final String owner;
  private final Executor executor;
  private volatile boolean stopping;

  StepRunner(GroupCommitter committer, EngineSettings settings, HttpStepCaller caller, String owner, Executor executor) {
    this.committer = committer;
    this.settings = settings;
    this.caller = caller;
    this.owner = owner;
    this.executor = executor;
  }

  @Override
  public Engine.Claim claim(Run run, Instant now) {
    WorkflowRunMachine m = new WorkflowRunMachine(run, now);
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
   * (it counts from now on, whatever becomes of the call), and a lease for the call's length.
   */
  Run leaseForCall(WorkflowRunMachine m) {
    Step.Http step = (Step.Http) m.definition().get(m.currentStep());
    m.startAttempt();
    return m.toRun(owner, m.now().plusMillis(step.timeoutMs()).plus(settings.lease()));
  }

  /**
   * Makes the http call of a run saved by {@link #leaseForCall}, and every call after it, until the
   * run waits or ends. The future completes then; it fails only if a save failed (the lease runs out
   * and the run is taken up again).
   */
  @Override
  public CompletableFuture<Void> call(Run calling, CallMemory.Reservation room) {
    return CompletableFuture.supplyAsync(() -> callOnce(calling, room), executor)
        .thenCompose(answered -> answered)
        .thenCompose(next -> next == null ? CompletableFuture.completedFuture(null) : call(next, room));
  }

  /** One call and the move it leads to; the run of the next call, or null when the run now waits or ended. */
  private CompletableFuture<Run> callOnce(Run calling, CallMemory.Reservation room) {
    WorkflowRunMachine before = new WorkflowRunMachine(calling, calling.updatedAt());
    int index = before.currentStep();
    Step.Http step = (Step.Http) before.definition().get(index);
    ObjectNode body = callBody(calling, index, before.currentAttempt(), before);
    return caller.call(calling.workspaceId(), step, body, calling.id() + ":" + index)
        .thenApplyAsync(outcome -> settle(calling, outcome, room), executor);
  }

  @Override
  public long weight(Run run) {
    return CallMemory.weight(run, settings.maxResponseBytes());
  }

  /**
   * From now on, a run whose call has been answered is saved without starting its next call: the
   * next start (or another instance) makes it, and no attempt is cut off by this stop.
   */
  @Override
  public void stop() {
    stopping = true;
  }

  private Run settle(Run calling, HttpStepCaller.Outcome outcome, CallMemory.Reservation room) {
    WorkflowRunMachine m = moveOn(calling, outcome);
    boolean callAgain = planInstantMoves(m) && !stopping && hasRoom(m, room);
    Run next = callAgain ? leaseForCall(m) : m.toRun(null, null);
    if (next.steps().length() > MAX_STEPS_CHARS) {
      m = moveOn(calling, HttpStepCaller.Outcome.fail(outcome.httpStatus(), "HTTP " + outcome.httpStatus()
          + " but the answer cannot be kept: with it, the run's step outputs and attempts would take over "
          + MAX_STEPS_CHARS + " characters"));
      callAgain = planInstantMoves(m) && !stopping && hasRoom(m, room);
      next = callAgain ? leaseForCall(m) : m.toRun(null, null);
    }
    return save(next, m) && callAgain ? next : null;
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
    WorkflowRunMachine m = new WorkflowRunMachine(calling, Time.now());
    Step.Http step = (Step.Http) m.definition().get(m.currentStep());
    int attempt = m.currentAttempt();
    m.recordAttempt(outcome.succeeded() ? "succeeded" : "failed", outcome.httpStatus(), outcome.message());
    if (outcome.succeeded()) {
      m.completeStep(outcome.output());
    } else if (outcome.retryable() && attempt < step.maxAttempts()) {
      m.retryAt(m.now().plus(Backoff.jittered(settings.retryBase(), attempt)));
    } else {
      String why = outcome.retryable() ? outcome.message() + " (after " + attempt + " attempts)" : outcome.message();
      m.failStep(outcome.httpStatus(), why);
    }
    return m;
  }

  /** Saves a move if the run is still as it was read; false when a caller's move (cancel, approve) came first. */
  private boolean save(Run next, WorkflowRunMachine m) {
    boolean saved = committer.commit(next.workspaceId(), tx -> m.saveIn(tx, next));
    if (!saved) {
      LOG.info("run {} changed while its http step ran; leaving it as it is now", next.id());
    }
    return saved;
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
