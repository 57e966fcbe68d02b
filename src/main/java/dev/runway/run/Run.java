package dev.runway.run;

import java.time.Instant;

/**
 * A run as stored: a workflow run ({@code kind} "workflow", {@code workflowId} set) or an agent run
 * ({@code kind} "agent", {@code agentId} set). {@code inputs}, {@code approval}, {@code error},
 * {@code definition} (the workflow or agent as it was at start) and {@code steps} (each step's
 * progress; an agent run's progress) are JSON text; so is {@code output}, a succeeded workflow
 * run's output (null until then, and for agent runs, whose output is in their progress).
 * {@code parentRunId} is the run whose step started this one (a child run), null for others;
 * {@code rerunOf} the run this one reruns (POST /v1/runs/{run_id}/rerun), null for others;
 * {@code concurrencyKey} the key its workflow's concurrency setting gave it at start, null for others;
 * {@code threadId} the thread of an agent run started through the API, null for others.
 */
public record Run(
    String id,
    String workspaceId,
    String kind,
    String workflowId,
    String agentId,
    String project,
    String status,
    boolean requiresApproval,
    String inputs,
    Instant createdAt,
    Instant updatedAt,
    Instant finishedAt,
    String approval,
    String error,
    String definition,
    String steps,
    int currentStep,
    Instant dueAt,
    String leaseOwner,
    Instant leaseUntil,
    int version,
    String output,
    String parentRunId,
    String rerunOf,
    String concurrencyKey,
    String threadId) {
  public static final String WORKFLOW = "workflow";
  public static final String AGENT = "agent";

  /**
   * A new workflow run, running from now: due at once, or waiting at its start's approval gate
   * ({@code currentStep} -1) when the workflow requires approval.
   */
  public static Run newWorkflowRun(String id, String workspaceId, String workflowId, String project,
      boolean requiresApproval, String inputs, Instant now, String definition, String steps) {
    return newRun(id, workspaceId, WORKFLOW, workflowId, null, project, requiresApproval, inputs, now, definition,
        steps);
  }

  /** A new agent run, as {@link #newWorkflowRun}; {@code input} is its input, {@code progress} its progress document. */
  public static Run newAgentRun(String id, String workspaceId, String agentId, String project,
      boolean requiresApproval, String input, Instant now, String definition, String progress) {
    return newRun(id, workspaceId, AGENT, null, agentId, project, requiresApproval, input, now, definition, progress);
  }

  private static Run newRun(String id, String workspaceId, String kind, String workflowId, String agentId,
      String project, boolean requiresApproval, String inputs, Instant now, String definition, String steps) {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, RunStatus.RUNNING.wireName(),
        requiresApproval, inputs, now, now, null, null, null, definition, steps, requiresApproval ? -1 : 0, now, null,
        null, 0, null, null, null, null, null);
  }

  /** The next version of this run: the same run (id, kind, inputs, definition) in a new state. */
  public Run next(RunStatus status, Instant updatedAt, Instant finishedAt, String approval, String error,
      String steps, int currentStep, Instant dueAt, String leaseOwner, Instant leaseUntil) {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, status.wireName(), requiresApproval, inputs,
        createdAt, updatedAt, finishedAt, approval, error, definition, steps, currentStep, dueAt, leaseOwner,
        leaseUntil, version + 1, output, parentRunId, rerunOf, concurrencyKey, threadId);
  }

  /** This run leased to {@code leaseOwner} until {@code leaseUntil}. */
  public Run withLease(String leaseOwner, Instant leaseUntil) {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, status, requiresApproval, inputs, createdAt,
        updatedAt, finishedAt, approval, error, definition, steps, currentStep, dueAt, leaseOwner, leaseUntil, version,
        output, parentRunId, rerunOf, concurrencyKey, threadId);
  }

  /** This run with {@code output} (JSON text) as its output. */
  public Run withOutput(String output) {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, status, requiresApproval, inputs, createdAt,
        updatedAt, finishedAt, approval, error, definition, steps, currentStep, dueAt, leaseOwner, leaseUntil, version,
        output, parentRunId, rerunOf, concurrencyKey, threadId);
  }

  /** This new run as a child of {@code parent}. */
  public Run childOf(String parent) {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, status, requiresApproval, inputs, createdAt,
        updatedAt, finishedAt, approval, error, definition, steps, currentStep, dueAt, leaseOwner, leaseUntil, version,
        output, parent, rerunOf, concurrencyKey, threadId);
  }

  /** This run with its inputs and definition replaced (to show a run whose stored documents are broken). */
  public Run withDocuments(String inputs, String definition) {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, status, requiresApproval, inputs, createdAt,
        updatedAt, finishedAt, approval, error, definition, steps, currentStep, dueAt, leaseOwner, leaseUntil, version,
        output, parentRunId, rerunOf, concurrencyKey, threadId);
  }

  /** This new run as a rerun of {@code run}, standing at step {@code currentStep} with {@code steps} (some reused). */
  public Run asRerunOf(String run, String steps, int currentStep) {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, status, requiresApproval, inputs, createdAt,
        updatedAt, finishedAt, approval, error, definition, steps, currentStep, dueAt, leaseOwner, leaseUntil, version,
        output, parentRunId, run, concurrencyKey, threadId);
  }

  /** This run with {@code key} as its concurrency key. */
  public Run withConcurrencyKey(String key) {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, status, requiresApproval, inputs, createdAt,
        updatedAt, finishedAt, approval, error, definition, steps, currentStep, dueAt, leaseOwner, leaseUntil, version,
        output, parentRunId, rerunOf, key, threadId);
  }

  /** This new run in thread {@code thread}. */
  public Run inThread(String thread) {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, status, requiresApproval, inputs, createdAt,
        updatedAt, finishedAt, approval, error, definition, steps, currentStep, dueAt, leaseOwner, leaseUntil, version,
        output, parentRunId, rerunOf, concurrencyKey, thread);
  }

  /** This run with {@code steps} as its progress, not yet saved (a thread's context added before its first save). */
  Run withProgress(String steps) {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, status, requiresApproval, inputs, createdAt,
        updatedAt, finishedAt, approval, error, definition, steps, currentStep, dueAt, leaseOwner, leaseUntil, version,
        output, parentRunId, rerunOf, concurrencyKey, threadId);
  }

  /** This new run as it waits its turn: {@code queued}, due never (the commit that frees a place starts it). */
  public Run queued() {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, RunStatus.QUEUED.wireName(), requiresApproval,
        inputs, createdAt, updatedAt, finishedAt, approval, error, definition, steps, currentStep, null, null, null,
        version, output, parentRunId, rerunOf, concurrencyKey, threadId);
  }

  /** This queued run as it starts at {@code now}: running and due, its version that of the stored row. */
  Run dequeued(Instant now) {
    return new Run(id, workspaceId, kind, workflowId, agentId, project, RunStatus.RUNNING.wireName(), requiresApproval,
        inputs, createdAt, updatedAt, finishedAt, approval, error, definition, steps, currentStep, now, null, null,
        version, output, parentRunId, rerunOf, concurrencyKey, threadId);
  }

  public boolean isAgent() {
    return AGENT.equals(kind);
  }

  /** Whether the run has ended: it never changes again. */
  public boolean isEnded() {
    return RunStatus.isEnded(status);
  }
}
