package dev.runway.run;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.db.Tx;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What every kind of run shares: its state, its approval, its error, when it is next due, and the
 * moves on them (approve, reject, cancel, expire, fail, finish), each recorded as an event. A kind
 * ({@link WorkflowRunMachine} for workflows, {@link AgentRunMachine} for agents) adds its progress and
 * how it advances. {@link #toRun} and {@link #saveIn} save the new state, the events and messages of
 * the moves together, only if nobody else changed the run in between (its version).
 */
public abstract class RunMachine {
  public static final String ENGINE = "engine";

  protected final Run base;
  protected final Instant now;
  private final List<Event> events = new ArrayList<>();
  protected final List<RunMessage> messages = new ArrayList<>();
  protected RunStatus status;
  /** The step to run next (a workflow's); -1 while the run waits at its start's approval gate. */
  protected int currentStep;
  protected ObjectNode approval;
  protected ObjectNode error;
  protected Instant dueAt;
  protected Instant finishedAt;

  /** Keeps child and parent runs in step with this run's moves; null for a machine not made by {@link RunMachines}. */
  ChildRuns children;
  /** Hands on the place of a run's concurrency key when it ends; null for a machine not made by {@link RunMachines}. */
  ConcurrencyKeys concurrencyKeys;

  protected RunMachine(Run run, Instant now) {
    this.base = run;
    this.now = now;
    this.status = RunStatus.parse(run.status()).orElseThrow();
    this.currentStep = run.currentStep();
    this.approval = run.approval() == null ? null : (ObjectNode) Json.tree(run.approval());
    this.error = run.error() == null ? null : (ObjectNode) Json.tree(run.error());
    this.dueAt = run.dueAt();
    this.finishedAt = run.finishedAt();
  }

  /** The machine of the run's kind, its definition parsed now (see {@link RunMachines}, which keeps them parsed). */
  public static RunMachine of(Run run, Instant now) {
    return run.isAgent() ? new AgentRunMachine(run, now) : new WorkflowRunMachine(run, now);
  }

  public Instant now() {
    return now;
  }

  public List<Event> events() {
    return events;
  }

  /** The transcript messages the moves added (an agent run's). */
  public List<RunMessage> messages() {
    return messages;
  }

  /** The run's progress document as it is to be stored. */
  protected abstract String progress();

  /** The run to save: the new state with the next version, held by {@code leaseOwner} until {@code leaseUntil}. */
  public Run toRun(String leaseOwner, Instant leaseUntil) {
    return base.next(status, now, finishedAt, approval == null ? null : Json.string(approval),
        error == null ? null : Json.string(error), progress(), currentStep, dueAt, leaseOwner, leaseUntil);
  }

  /**
   * Saves {@code next} (made by {@link #toRun}) with the moves' events and messages, if the stored run
   * is still the version this machine read; false when it is not (someone else moved it first).
   */
  public boolean saveIn(Tx tx, Run next) {
    Run parent = children == null ? null : children.lockParent(tx, this, next);
    return saveIn(tx, next, tx.dao(RunDao.class).saveProgress(next), parent);
  }

  /** Like {@link #saveIn(Tx, Run)}, for moves made on a lease: only while the run is leased to {@code heldBy}. */
  public boolean saveHeldIn(Tx tx, Run next, String heldBy) {
    Run parent = children == null ? null : children.lockParent(tx, this, next);
    return saveIn(tx, next, tx.dao(RunDao.class).saveHeldProgress(next, heldBy), parent);
  }

  /** After the save: the events and messages, and what the moves ask of child and parent runs (see {@link ChildRuns}). */
  private boolean saveIn(Tx tx, Run next, int saved, Run parent) {
    if (saved != 1) {
      return false;
    }
    RunEvents.store(tx, next, events);
    RunMessageDao.insert(tx, messages);
    if (children != null) {
      children.saved(tx, this, next, parent);
    }
    if (concurrencyKeys != null && releases(base, next)) {
      concurrencyKeys.released(tx, next);
    }
    return true;
  }

  /**
   * Whether saving {@code next} over {@code before} frees a place of the run's concurrency key or of
   * its thread: an active run ended.
   */
  static boolean releases(Run before, Run next) {
    return (next.concurrencyKey() != null || next.threadId() != null) && next.isEnded()
        && RunStatus.parse(before.status()).map(RunStatus::isActive).orElse(false);
  }

  // ---- moves made by callers (approve, reject, cancel) ----

  public final void approve(String actor, String comment) {
    approve(actor, comment, null);
  }

  /**
   * Approves; with {@code toolCallIds} (not null) only those of the tool calls the approval asks
   * about (an agent run's), and the run goes on once every one is decided.
   */
  public final void approve(String actor, String comment, List<String> toolCallIds) {
    requireStatus("approve", RunStatus.AWAITING_APPROVAL);
    Map<String, Object> data = decisionData(comment, toolCallIds);
    if (toolCallIds != null && decidePart(true, comment, toolCallIds)) {
      record("run.approved", actor, null, null, data);
      return;
    }
    decide("approved", actor, comment);
    status = RunStatus.RUNNING;
    dueAt = now;
    approved(actor, comment);
    record("run.approved", actor, null, null, data);
  }

  public final void reject(String actor, String comment) {
    reject(actor, comment, null);
  }

  /** Rejects; with {@code toolCallIds} (not null) only those tool calls, as {@link #approve(String, String, List)}. */
  public final void reject(String actor, String comment, List<String> toolCallIds) {
    requireStatus("reject", RunStatus.AWAITING_APPROVAL);
    Map<String, Object> data = decisionData(comment, toolCallIds);
    if (toolCallIds != null && decidePart(false, comment, toolCallIds)) {
      record("run.approval_rejected", actor, null, null, data);
      return;
    }
    decide("rejected", actor, comment);
    if (!rejected(actor, comment)) {
      finish(RunStatus.REJECTED, actor, data);
    } else {
      status = RunStatus.RUNNING;
      dueAt = now;
      record("run.approval_rejected", actor, null, null, data);
    }
  }

  private static Map<String, Object> decisionData(String comment, List<String> toolCallIds) {
    Map<String, Object> data = new java.util.LinkedHashMap<>();
    data.put("comment", comment == null ? "" : comment);
    if (toolCallIds != null) {
      data.put("tool_call_ids", toolCallIds);
    }
    return data;
  }

  /**
   * Decides only the tool calls {@code toolCallIds} of what the approval asks: true when others
   * remain undecided and the run keeps waiting, false when the whole approval is now decided as one.
   * Only an agent run's approval of tool calls has parts.
   */
  protected boolean decidePart(boolean approve, String comment, List<String> toolCallIds) {
    throw DomainException.invalid("tool_call_ids", "tool_call_ids decides some of an agent run's tool calls; "
        + "this approval has none");
  }

  public final void cancel(String actor) {
    if (status.isEnded()) {
      throw conflict("cancel");
    }
    if (approval != null && "pending".equals(approval.path("status").asText())) {
      approval.put("status", "canceled");
    }
    canceled();
    finish(RunStatus.CANCELED, actor, Map.of());
  }

  /** What an approval does besides letting the run go on (the status is running again, due now). */
  protected abstract void approved(String actor, String comment);

  /**
   * What a rejection does: true when the run goes on (an agent's rejected tool call), false when it
   * ends rejected.
   */
  protected abstract boolean rejected(String actor, String comment);

  /** What a cancel closes besides the run (a call in progress, a step). */
  protected abstract void canceled();

  // ---- approvals ----

  /** Pauses at an approval that expires {@code timeoutSeconds} from now; returns it, for the kind to add to. */
  protected ObjectNode awaitApproval(long timeoutSeconds, Integer step) {
    Instant expires = now.plusSeconds(timeoutSeconds);
    approval = Json.MAPPER.createObjectNode().put("status", "pending");
    approval.put("requested_at", Json.time(now)).put("expires_at", Json.time(expires))
        .putNull("decided_at").putNull("decided_by").putNull("comment");
    status = RunStatus.AWAITING_APPROVAL;
    dueAt = expires;
    record("run.awaiting_approval", ENGINE, step, null, Map.of("expires_at", Json.time(expires)));
    return approval;
  }

  /**
   * Where every kind's advance starts: an approval whose time ran out fails the run now; an ended run
   * has nothing due; a run waiting at an approval is next due when it expires; a new run that
   * requires approval stops at its start's gate. True when the run is free to advance.
   */
  protected final boolean mayAdvance(long approvalTimeoutSeconds) {
    if (approvalTimedOut()) {
      expireApproval();
    }
    if (ended()) {
      dueAt = null;
      return false;
    }
    if (status == RunStatus.AWAITING_APPROVAL) {
      dueAt = Instant.parse(approval.path("expires_at").asText());
      return false;
    }
    if (currentStep < 0) {
      awaitApproval(approvalTimeoutSeconds, null);
      return false;
    }
    return true;
  }

  /** Whether the run waits at an approval whose time has run out, noticed by the engine or not. */
  public boolean approvalTimedOut() {
    return status == RunStatus.AWAITING_APPROVAL && approval != null
        && !now.isBefore(Instant.parse(approval.path("expires_at").asText()));
  }

  /** The approval's time ran out: the run fails with approval_expired. */
  public void expireApproval() {
    approval.put("status", "expired").put("decided_at", Json.time(now));
    approvalExpired();
    fail("approval_expired", "no decision on the approval before " + approval.path("expires_at").asText(), null);
  }

  /** What an expired approval closes besides the run. */
  protected void approvalExpired() {}

  private void decide(String decision, String actor, String comment) {
    approval.put("status", decision).put("decided_at", Json.time(now)).put("decided_by", actor);
    if (comment == null) {
      approval.putNull("comment");
    } else {
      approval.put("comment", comment);
    }
  }

  // ---- ends ----

  protected void fail(String code, String message, ObjectNode details) {
    error = Json.MAPPER.createObjectNode().put("code", code).put("message", message);
    if (details != null) {
      error.setAll(details);
    }
    finish(RunStatus.FAILED, ENGINE, Map.of("error", code));
  }

  protected void succeed() {
    finish(RunStatus.SUCCEEDED, ENGINE, Map.of());
  }

  protected void finish(RunStatus terminal, String actor, Map<String, Object> data) {
    status = terminal;
    finishedAt = now;
    dueAt = null;
    record(terminal.endEventType(), actor, null, null, data);
  }

  protected boolean ended() {
    return status.isEnded();
  }

  private void requireStatus(String action, RunStatus required) {
    if (status != required) {
      throw conflict(action);
    }
  }

  private DomainException conflict(String action) {
    return new DomainException(Kind.CONFLICT, "run_state_conflict",
        "cannot " + action + " a run that is " + status.wireName(), null, 0,
        Map.of("current_status", status.wireName()));
  }

  // ---- events ----

  /** A run's new state and the events of the move that led to it. */
  public record Moved(Run run, List<Event> events) {
    /** Saves the run and its events if the stored run is still the version before it. */
    public boolean saveIn(Tx tx) {
      if (tx.dao(RunDao.class).saveProgress(run) != 1) {
        return false;
      }
      RunEvents.store(tx, run, events);
      return true;
    }
  }

  /**
   * A run that cannot be read or moved (its stored documents are broken): it fails with
   * internal_error, without its documents being read, so that it neither stays due for ever nor
   * blocks the runs claimed with it.
   */
  public static Moved failedUnreadable(Run run, Instant now) {
    String error = Json.string(Map.of("code", "internal_error",
        "message", "the run's stored state could not be read; see the server log for " + run.id()));
    // What the run record shows of it must stay JSON: a broken document is shown as empty.
    String emptyProgress = run.isAgent() ? "{\"output\":null,\"usage\":{}}" : "[]";
    Run failed = run.withDocuments(readable(run.inputs(), "{}"), readable(run.definition(), "{}"))
        .next(RunStatus.FAILED, now, now, readable(run.approval(), null), error, readable(run.steps(), emptyProgress),
            run.currentStep(), null, null, null);
    return new Moved(failed, List.of(event(run, RunStatus.FAILED.endEventType(), ENGINE, null, null,
        Map.of("error", "internal_error"), now)));
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

  /** An event of the run as a whole (no step) at {@code at}. */
  static Event event(Run run, String type, String actor, Map<String, ?> data, Instant at) {
    return event(run, type, actor, null, null, data, at);
  }

  protected void record(String type, String actor, Integer step, Integer attempt, Map<String, ?> data) {
    events.add(event(base, type, actor, step, attempt, data, now));
  }

  /** An event's data with null values kept (Map.of refuses them). */
  protected static Map<String, Object> data(Object... keysAndValues) {
    Map<String, Object> data = new LinkedHashMap<>();
    for (int i = 0; i < keysAndValues.length; i += 2) {
      data.put((String) keysAndValues[i], keysAndValues[i + 1]);
    }
    return data;
  }

  static Event event(Run run, String type, String actor, Integer step, Integer attempt, Map<String, ?> data,
      Instant at) {
    return new Event(null, Ids.newId("evt", at.toEpochMilli()), run.workspaceId(), run.id(), run.workflowId(),
        run.agentId(), run.project(), type, actor, step, attempt, Json.string(data), at);
  }
}
