package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.Agent;
import dev.runway.agent.AgentDao;
import dev.runway.agent.AgentDefinition;
import dev.runway.agent.AllowedModels;
import dev.runway.agent.ToolSchemas;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.Tx;
import dev.runway.workflow.Workflow;
import dev.runway.workflow.WorkflowDao;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Child runs (of {@code workflow} and {@code agent} steps, and the iterations of {@code foreach}
 * and {@code parallel} steps), kept in step with their parents in the commits that move either: a
 * child is stored in the commit of the move that reached its step (or ended an earlier iteration);
 * the parent's step takes note (completes, fails, starts the next iteration) in the commit that
 * ends the child, and shows {@code waiting} while the child waits for approval; canceling a run
 * cancels its children in the same commit. No thread waits for a child. Rows are locked parent
 * first, then child, in every such commit (an API move on a child locks the runs above it first
 * too, see RunService), so two of them cannot deadlock.
 */
final class ChildRuns {
  private final RunMachines machines;
  private final long approvalTimeoutSeconds;
  private final AllowedModels allowedModels;
  private final Runnable runDue;
  private final CallPlaces places;

  /**
   * Approval gates of a child without a time-out of their own get {@code approvalTimeoutSeconds};
   * child agent runs may ask only for {@code allowedModels}; {@code runDue} wakes the engine.
   */
  ChildRuns(RunMachines machines, long approvalTimeoutSeconds, AllowedModels allowedModels, Runnable runDue,
      CallPlaces places) {
    this.machines = machines;
    this.places = places;
    this.approvalTimeoutSeconds = approvalTimeoutSeconds;
    this.allowedModels = allowedModels;
    this.runDue = runDue;
  }

  /**
   * Before {@code next} (the new state of {@code m}'s run) is saved: locks its parent when the save
   * will change the parent (the child ends, or starts or stops waiting for approval), so that the
   * parent is locked before the child, as a cancel locks them. Returns the parent as locked, or null.
   */
  Run lockParent(Tx tx, RunMachine m, Run next) {
    if (next.parentRunId() == null) {
      return null;
    }
    boolean writesRecords = m instanceof WorkflowRunMachine w && w.crmWrite() != null; // may end the run in this commit
    if (!next.isEnded() && !writesRecords && awaitsApproval(m.base) == awaitsApproval(next)) {
      return null;
    }
    return lockParentOf(tx, next);
  }

  /** Locks the parent of {@code child} and the runs above it (see {@link #lockAncestors}); the parent as locked. */
  private static Run lockParentOf(Tx tx, Run child) {
    Told told = told(tx).get(child.parentRunId());
    if (told != null) {
      return told.locked(); // locked, with the runs above it, by an earlier child's end in this transaction
    }
    tx.flush(); // the parent may have been inserted in this transaction, by a batch not yet executed
    return lockAncestors(tx, child.workspaceId(), child.parentRunId());
  }

  /**
   * Saves {@code ended}, a run that ended without a machine's moves (its stored state could not be
   * read, see {@link RunMachine#failedUnreadable}), and tells its parent, as of any child that ends.
   */
  boolean saveEnded(Tx tx, RunMachine.Moved ended) {
    Run parent = ended.run().parentRunId() == null ? null : lockParentOf(tx, ended.run());
    Run before = tx.dao(RunDao.class).findForUpdate(ended.run().workspaceId(), ended.run().id()).orElse(null);
    if (!ended.saveIn(tx)) {
      return false;
    }
    if (parent != null) {
      tell(tx, parent, ended.run());
    }
    if (before != null && RunMachine.releases(before, ended.run())) {
      machines.concurrency().released(tx, ended.run());
    }
    return true;
  }

  /**
   * Locks run {@code parentId} and the runs above it, from the top down (what a change of a child
   * may move on: its parent, and theirs when that ends), so that every commit that moves a parent
   * and a child locks them in the same order, as a cancel does, and two such commits cannot
   * deadlock. Returns {@code parentId}'s run as locked, or null.
   */
  static Run lockAncestors(Tx tx, String workspaceId, String parentId) {
    RunDao runs = tx.dao(RunDao.class);
    List<String> chain = new ArrayList<>();
    for (String id = parentId; !id.isEmpty() && chain.size() <= WorkflowRunMachine.MAX_DEPTH; id = runs.parentOf(workspaceId, id)) {
      chain.add(0, id);
    }
    Run locked = null;
    for (String id : chain) {
      locked = runs.findForUpdate(workspaceId, id).orElse(null);
    }
    return locked;
  }

  /**
   * After {@code next} was saved: starts and cancels the children its moves asked for, writes the
   * records of the crm step it stopped at (see {@link CrmSteps}, whose save of the run moved on tells
   * the parent), else tells {@code parent} (locked by {@link #lockParent}).
   */
  void saved(Tx tx, RunMachine m, Run next, Run parent) {
    if (m instanceof WorkflowRunMachine w) {
      for (WorkflowRunMachine.ChildStart child : w.childStarts()) {
        start(tx, next, w.depth() + 1, child);
      }
      for (String child : w.childrenToCancel()) {
        cancel(tx, next, child);
      }
      if (machines.signalWaits().saved(tx, w, next)) {
        return; // it took a kept signal and saved the run again, moved on: that save told the parent
      }
      if (w.crmWrite() != null) {
        machines.crmSteps().write(tx, w, next); // saves the run again, moved on: that save tells the parent
        return;
      }
    }
    if (parent != null) {
      tell(tx, parent, next);
    }
  }

  /** Stores a child run of {@code parent}, with its first moves; a child that cannot start fails the parent's step. */
  private void start(Tx tx, Run parent, int depth, WorkflowRunMachine.ChildStart child) {
    if (child.agent() != null) {
      startAgent(tx, parent, child);
      return;
    }
    if (child.definition() != null) {
      startIteration(tx, parent, child);
      return;
    }
    Optional<Workflow> workflow = tx.dao(WorkflowDao.class).find(parent.workspaceId(), child.workflow())
        .filter(w -> !w.archived());
    if (workflow.isEmpty()) {
      notStarted(tx, parent, child, "workflow_not_found", "no workflow '" + child.workflow()
          + "' in the workspace (it was never made, or is archived): its child run was not started");
      return;
    }
    WorkflowTemplate template = WorkflowTemplate.of(workflow.get(), depth);
    Instant now = Time.now();
    ObjectNode inputs = (ObjectNode) child.input();
    Run run = Run.newWorkflowRun(child.runId(), parent.workspaceId(), child.workflow(), parent.project(),
        workflow.get().requiresApproval(), Json.string(inputs), now, template.definition(), template.steps())
        .childOf(parent.id());
    insertWorkflowChild(tx, parent, run, template.violation(inputs));
  }

  /**
   * Stores an iteration of a foreach or parallel step of {@code parent}: a child run of the parent's
   * workflow whose definition the step made (its steps, item, index), with the parent's inputs.
   */
  private void startIteration(Tx tx, Run parent, WorkflowRunMachine.ChildStart child) {
    Instant now = Time.now();
    WorkflowRunMachine.Definition parsed = WorkflowRunMachine.parse(child.definition());
    Run run = Run.newWorkflowRun(child.runId(), parent.workspaceId(), parent.workflowId(), parent.project(), false,
        Json.string(child.input()), now, child.definition(),
        Json.string(WorkflowRunMachine.initialSteps(parsed.steps()))).childOf(parent.id());
    insertWorkflowChild(tx, parent, run, null);
  }

  /**
   * Stores a new workflow child run of {@code parent} after its first moves (it fails at once when
   * its inputs are {@code broken}), with its events, and what those moves ask of other runs.
   */
  private void insertWorkflowChild(Tx tx, Run parent, Run run, ToolSchemas.Violation broken) {
    List<Event> events = new ArrayList<>();
    WorkflowRunMachine cm = machines.workflow(run, run.createdAt());
    boolean due = cm.start(parent.id(), broken, approvalTimeoutSeconds, events);
    Run stored = cm.toRun(null, null);
    ConcurrencyKeys.Held held = machines.concurrency().admit(tx, cm, run, stored, parent.id());
    if (held != null) { // queued (the parent's step waits on), or skipped (the parent is told it ended)
      RunDao.insert(tx, held.run());
      RunEvents.store(tx, held.run(), held.events());
      if (held.machine() != null) {
        afterInsert(tx, held.machine(), held.run());
      }
      return;
    }
    CallPlaces.Place place = due ? places.take(stored) : null;
    if (place != null) { // stored leased, its attempt started, as a claim would (see CallPlaces)
      int before = cm.events().size();
      cm.startAttempt();
      events.addAll(cm.events().subList(before, cm.events().size()));
      stored = place.leaseIn(tx, cm.toRun(null, null));
    }
    RunDao.insert(tx, stored);
    RunEvents.store(tx, stored, events);
    machines.signalWaits().register(tx, cm, stored);
    afterInsert(tx, cm, stored);
    if (due && place == null) {
      tx.afterCommit(runDue);
    }
  }

  /**
   * Stores a child agent run of {@code parent} with its first messages (the agent as it is now, the
   * step's model or else the agent's own); a missing or archived agent, or a model that
   * agents.model.allowed no longer names (it is read at start), fails the parent's step. The
   * workspace's token quota and the agent's limits apply to it as to any agent run, at its model calls.
   */
  private void startAgent(Tx tx, Run parent, WorkflowRunMachine.ChildStart child) {
    Optional<Agent> agent = tx.dao(AgentDao.class).find(parent.workspaceId(), child.agent()).filter(a -> !a.archived());
    if (agent.isEmpty()) {
      notStarted(tx, parent, child, "agent_not_found", "no agent '" + child.agent()
          + "' in the workspace (it was never made, or is archived): its run was not started");
      return;
    }
    AgentDefinition definition = AgentDefinition.of(agent.get());
    String model = child.model() != null ? child.model() : definition.model();
    if (!allowedModels.allows(model)) {
      notStarted(tx, parent, child, "model_not_allowed", "its run was not started: "
          + allowedModels.refusal(model, child.model() != null ? "the step's model" : "the agent's model"));
      return;
    }
    Instant now = Time.now();
    Run run = Run.newAgentRun(child.runId(), parent.workspaceId(), child.agent(), parent.project(),
        definition.requiresApproval(), Json.string(child.input()), now, AgentRunMachine.definitionJson(definition, model),
        AgentRunMachine.initialProgress(now.plusSeconds(definition.limits().timeoutSeconds()))).childOf(parent.id());
    List<Event> events = new ArrayList<>();
    events.add(RunMachine.started(run, parent.id()));
    AgentRunMachine am = machines.agent(run, now);
    am.begin(child.input());
    boolean due = am.moveUntilWaiting(approvalTimeoutSeconds, 1) != AgentRunMachine.Next.NOTHING;
    events.addAll(am.events());
    Run stored = am.toRun(null, null);
    RunDao.insert(tx, stored);
    RunEvents.store(tx, stored, events);
    RunMessageDao.insert(tx, am.messages());
    afterInsert(tx, am, stored);
    if (due) {
      tx.afterCommit(runDue);
    }
  }

  /** The parent's step could not start its child ({@code code}): it fails, in this commit. */
  private void notStarted(Tx tx, Run parent, WorkflowRunMachine.ChildStart child, String code, String message) {
    tx.flush();
    Run locked = tx.dao(RunDao.class).findForUpdate(parent.workspaceId(), parent.id()).orElseThrow();
    WorkflowRunMachine pm = machines.workflow(locked, Time.now());
    if (pm.childNotStarted(child.runId(), code, message)) {
      if (pm.moveUntilWaiting(approvalTimeoutSeconds)) {
        tx.afterCommit(runDue);
      }
      save(tx, pm, pm.toRun(locked.leaseOwner(), locked.leaseUntil()));
    }
  }

  /**
   * After a new run {@code stored} (made by {@code m}'s first moves) was stored: does what its moves
   * ask of other runs, its own children, and its parent when it ended at once.
   */
  void afterInsert(Tx tx, RunMachine m, Run stored) {
    saved(tx, m, stored, lockParent(tx, m, stored));
  }

  /** Cancels child run {@code childId} of {@code parent} (and so its own children), if it has not ended. */
  private void cancel(Tx tx, Run parent, String childId) {
    tx.flush();
    Optional<Run> child = tx.dao(RunDao.class).findForUpdate(parent.workspaceId(), childId);
    if (child.isEmpty() || child.get().isEnded()) {
      return;
    }
    RunMachine cm = machines.of(child.get(), Time.now());
    cm.cancel(parent.id());
    save(tx, cm, cm.toRun(null, null));
  }

  /**
   * Tells the parent what became of its child {@code child}: it ended, or waits for approval, or no
   * longer does. The parent is saved once, before the transaction commits, however many of its
   * children a group commit tells of: a foreach's iterations end by the dozen, and each save
   * writes the parent's whole progress.
   */
  private void tell(Tx tx, Run parent, Run child) {
    Map<String, Told> told = told(tx);
    Told pending = told.get(parent.id());
    WorkflowRunMachine pm = pending != null ? pending.machine()
        : parent.isEnded() || parent.isAgent() ? null : machines.workflow(parent, Time.now());
    if (pm == null || pm.ended()) {
      return;
    }
    boolean changed = child.isEnded()
        ? pm.childEnded(child.id(), child.status(), output(child), child.error() == null ? null : Json.tree(child.error()),
            executions(child))
        : pm.childAwaitsApproval(child.id(), awaitsApproval(child));
    if (changed && child.isEnded() && pm.moveUntilWaiting(approvalTimeoutSeconds)) {
      tx.afterCommit(runDue); // it stands at an http step: the engine makes the call
    }
    if (changed && pending == null) {
      told.put(parent.id(), new Told(pm, parent));
      tx.beforeCommit(() -> {
        told.remove(parent.id()); // a child it starts now and that ends at once tells it anew
        save(tx, pm, pm.toRun(parent.leaseOwner(), parent.leaseUntil()));
      });
    }
  }

  /** A parent told of its children's ends in this transaction, as locked, and its machine with their news. */
  private record Told(WorkflowRunMachine machine, Run locked) {}

  private static final Object TOLD = new Object();

  /** The parents told in this transaction and not yet saved, by id. */
  private static Map<String, Told> told(Tx tx) {
    return tx.local(TOLD, k -> new HashMap<String, Told>());
  }

  /**
   * Whether the run waits for a person: it is at an approval, or its current step waits for a child
   * that does (so a grandchild's approval shows all the way up).
   */
  private static boolean awaitsApproval(Run run) {
    if (RunStatus.AWAITING_APPROVAL.wireName().equals(run.status())) {
      return true;
    }
    if (run.isAgent() || run.isEnded() || run.currentStep() < 0) {
      return false;
    }
    JsonNode step = Json.tree(run.steps()).path(run.currentStep());
    return step.path("status").asText().equals("waiting") && (step.hasNonNull("child_run_id") || step.has("iterations"));
  }

  /** The steps a child run executed, as its parent counts them if it is an iteration (an agent run: none). */
  private static int executions(Run run) {
    return run.isAgent() ? 0 : WorkflowRunMachine.executions(Json.tree(run.steps()));
  }

  /** A run's output as a step passes it on: a workflow run's {@code output}, an agent run's. */
  private static JsonNode output(Run run) {
    if (run.isAgent()) {
      return Json.tree(run.steps()).path("output");
    }
    return run.output() == null ? null : Json.tree(run.output());
  }

  /** Saves a run locked in this transaction; it cannot have changed under the lock. */
  static void save(Tx tx, RunMachine m, Run next) {
    if (!m.saveIn(tx, next)) {
      throw new IllegalStateException("run " + next.id() + " changed under its row lock");
    }
  }
}
