package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.Agent;
import dev.runway.agent.AgentDefinition;
import dev.runway.agent.AgentService;
import dev.runway.agent.ToolSchemas;
import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Sha256;
import dev.runway.core.Time;
import dev.runway.core.WeighedCache;
import dev.runway.db.GroupCommitter;
import dev.runway.db.Tx;
import dev.runway.idempotency.IdempotencyStore;
import dev.runway.quota.QuotaExceeded;
import dev.runway.quota.Quotas;
import dev.runway.workflow.Step;
import dev.runway.workflow.Workflow;
import dev.runway.workflow.WorkflowService;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Starts workflow and agent runs: each start stored with its first moves and events in one commit,
 * replayed for a retry with the same Idempotency-Key; what every run of a definition version starts
 * with is worked out once and kept.
 */
public final class RunStarts {
  private final GroupCommitter committer;
  private final WorkflowService workflows;
  private final AgentService agents;
  private final IdempotencyStore idempotency;
  private final long approvalTimeoutSeconds;
  private final Runnable runDue;
  private final Quotas quotas;
  private final RunMachines machines;
  private final ThreadService threads;
  /**
   * What a new run of each workflow starts with, by workspace and workflow id (about 2 MB): a new
   * version of a workflow replaces its old template, which is not kept.
   */
  private final WeighedCache<String, WorkflowTemplate> templates = new WeighedCache<>(2_000_000, (key, t) ->
      key.length() + t.version().steps().length() + 2L * t.definition().length() + t.steps().length()
          + 3L * (t.version().inputsSchema() == null ? 0 : t.version().inputsSchema().length()) + 100);
  /** Agents' parsed definitions by workspace and agent id (about 1 MB), so a start checks no schema again. */
  private final WeighedCache<String, ParsedAgent> parsedAgents =
      new WeighedCache<>(1_000_000, (key, p) -> key.length() + 3L * p.source().length() + 100);

  /**
   * Writes go through {@code committer} (group commit); {@code runDue} is told when a run became
   * due now (the engine then looks at once); approval gates without a time-out of their own get
   * {@code approvalTimeoutSeconds}.
   */
  public RunStarts(GroupCommitter committer, WorkflowService workflows, AgentService agents,
      IdempotencyStore idempotency, long approvalTimeoutSeconds, Runnable runDue, Quotas quotas,
      RunMachines machines, ThreadService threads) {
    this.machines = machines;
    this.threads = threads;
    this.committer = committer;
    this.workflows = workflows;
    this.agents = agents;
    this.idempotency = idempotency;
    this.approvalTimeoutSeconds = approvalTimeoutSeconds;
    this.runDue = runDue;
    this.quotas = quotas;
  }

  /** A start request after validation at the edge. */
  public record StartRequest(String workflowId, String project, ObjectNode inputs, String idempotencyKey) {}

  /**
   * An agent run's start request after validation at the edge: {@code input} is text or an object;
   * {@code model} may be null; {@code stream}: the model streams its answers (run.message.delta
   * events); {@code threadId} the thread it continues, null to start a new one.
   */
  public record AgentStartRequest(String agentId, String project, JsonNode input, String model, boolean stream,
      String idempotencyKey, String threadId) {

    /** A request that starts a new thread. */
    public AgentStartRequest(String agentId, String project, JsonNode input, String model, boolean stream,
        String idempotencyKey) {
      this(agentId, project, input, model, stream, idempotencyKey, null);
    }
  }

  /** The response to send: status and JSON body, and whether it is a replay of a stored one. */
  public record Started(int status, String body, boolean replayed) {}

  /**
   * Starts a workflow run. Without an Idempotency-Key the returned future completes once the run is
   * committed, on the thread that wakes committers (see {@link GroupCommitter#submit}): the request
   * thread need not wait for it. With a key, the start is settled before this returns (a concurrent
   * twin is resolved by reading the stored response, which must not happen on that thread).
   */
  public CompletableFuture<Started> start(Principal caller, StartRequest request) {
    return start(caller, request.project(), request.idempotencyKey(), () -> requestHash(request),
        () -> firstMoves(newRun(caller, request), caller.keyId()));
  }

  /** A rerun request after validation at the edge: {@code fromStep} null to start over, {@code inputs} null for the run's own. */
  public record RerunRequest(String fromStep, ObjectNode inputs, String idempotencyKey) {}

  /**
   * Reruns workflow run {@code source} (as the caller may read it), as {@link #start} starts a run:
   * a new run of the definition it ran (that version, not the workflow's now), in its project, with
   * its inputs or new ones (which must meet the workflow's inputs_schema), naming it in
   * {@code rerun_of}. From a step, the steps before it keep what they did in {@code source} (shown
   * with {@code reused: true}, their outputs seen by later steps) and the rest run; each of them
   * must have succeeded or been skipped there (400 naming from_step). The source must have ended
   * and be neither an agent run nor a child run (409); its workflow must not be archived (404).
   */
  public CompletableFuture<Started> rerun(Principal caller, Run source, RerunRequest request) {
    if (source.isAgent() || source.parentRunId() != null) {
      throw DomainException.conflict("rerun_not_supported", "run '" + source.id() + "' is "
          + (source.isAgent() ? "an agent run" : "a child run of " + source.parentRunId() + " (rerun that run)")
          + ": only workflow runs started by a caller, a trigger or a schedule can be rerun");
    }
    if (!source.isEnded()) {
      throw new DomainException(Kind.CONFLICT, "run_state_conflict", "cannot rerun a run that is " + source.status()
          + ": a run can be rerun once it has ended (cancel it first)", null, 0, Map.of("current_status", source.status()));
    }
    Workflow workflow = workflows.findActive(caller.workspaceId(), source.workflowId())
        .orElseThrow(() -> DomainException.notFound("workflow_not_found", "no workflow '" + source.workflowId()
            + "' in workspace '" + caller.workspaceId() + "' (it is archived): its runs cannot be rerun"));
    if (request.inputs() != null) {
      ToolSchemas.Violation broken = template(workflow).violation(request.inputs());
      if (broken != null) {
        throw DomainException.invalid(broken.field(), broken.message());
      }
    }
    return start(caller, source.project(), request.idempotencyKey(),
        () -> Sha256.hex("POST /v1/runs/" + source.id() + "/rerun\n" + request.fromStep() + "\n"
            + (request.inputs() == null ? "" : Json.canonical(request.inputs()))),
        () -> firstMoves(rerunOf(source, request), caller.keyId()));
  }

  /** What a bulk rerun did: the new runs (each naming the run it reruns), and the runs it passed over, with why. */
  public record Reruns(List<Run> started, List<Skipped> skipped) {}

  /**
   * A run a bulk rerun passed over: {@code code} as a single rerun's refusal ({@code rerun_not_supported},
   * {@code run_state_conflict}, {@code quota_exceeded}).
   */
  public record Skipped(String runId, String code) {}

  /**
   * Reruns each of {@code sources} (runs of {@code workflowId} the caller may read) from the start,
   * as {@link #rerun} does, in one commit: all of them are stored, or none. Runs that one rerun would
   * refuse with a 409 (agent and child runs, runs not ended) are passed over, and so are those past
   * the workspace's runs a minute ({@code quota_exceeded}); an archived workflow is a 404 for all.
   */
  public Reruns rerunAll(Principal caller, String workflowId, List<Run> sources) {
    workflows.findActive(caller.workspaceId(), workflowId).orElseThrow(() -> DomainException.notFound(
        "workflow_not_found", "no workflow '" + workflowId + "' in workspace '" + caller.workspaceId()
            + "' (it is archived, or was never made): its runs cannot be rerun"));
    List<Firsts> firsts = new ArrayList<>();
    List<Skipped> skipped = new ArrayList<>();
    boolean quotaLeft = true;
    for (Run source : sources) {
      if (source.isAgent() || source.parentRunId() != null) {
        skipped.add(new Skipped(source.id(), "rerun_not_supported"));
      } else if (!source.isEnded()) {
        skipped.add(new Skipped(source.id(), "run_state_conflict"));
      } else if (quotaLeft && takeRunStart(caller.workspaceId())) {
        firsts.add(firstMoves(rerunOf(source, new RerunRequest(null, null, null)), caller.keyId()));
      } else {
        quotaLeft = false; // the workspace's runs a minute are used up: the rest wait for a later call
        skipped.add(new Skipped(source.id(), "quota_exceeded"));
      }
    }
    if (!firsts.isEmpty()) {
      boolean claimDue = committer.commit(caller.workspaceId(), tx -> {
        boolean due = false;
        for (Firsts f : firsts) {
          due |= insert(tx, f);
        }
        return due;
      });
      if (claimDue) {
        runDue.run();
      }
    }
    return new Reruns(firsts.stream().map(Firsts::started).toList(), skipped);
  }

  /** Whether the workspace may start one more run this minute (its quota taken if so). */
  private boolean takeRunStart(String workspaceId) {
    try {
      quotas.takeRunStart(workspaceId);
      return true;
    } catch (QuotaExceeded e) {
      return false;
    }
  }

  /** The new run of a rerun, standing at its first step to run, not yet stored. */
  private static Run rerunOf(Run source, RerunRequest request) {
    List<Step> steps = WorkflowRunMachine.parse(source.definition()).steps();
    List<String> ids = steps.stream().map(step -> step.flow().id()).toList();
    int from = request.fromStep() == null ? 0 : ids.indexOf(request.fromStep());
    if (from < 0) {
      throw DomainException.invalid("from_step", "run '" + source.id() + "' has no step '" + request.fromStep()
          + "' at the top level of its definition; its steps: " + String.join(", ", ids));
    }
    ArrayNode progress = WorkflowRunMachine.initialSteps(steps);
    JsonNode ran = Json.tree(source.steps());
    for (int i = 0; i < from; i++) {
      JsonNode step = ran.path(i);
      String status = step.path("status").asText();
      if (!status.equals("succeeded") && !status.equals("skipped")) {
        throw DomainException.invalid("from_step", "step '" + steps.get(i).flow().id() + "', before '"
            + request.fromStep() + "', is " + status + " in run '" + source.id() + "': rerun from it or an earlier step");
      }
      progress.set(i, ((ObjectNode) step.deepCopy()).put("reused", true));
    }
    Instant now = Time.now();
    String inputs = request.inputs() != null ? Json.string(request.inputs()) : source.inputs();
    Run run = Run.newWorkflowRun(Ids.newId("run", now.toEpochMilli()), source.workspaceId(), source.workflowId(),
        source.project(), source.requiresApproval(), inputs, now, source.definition(), null);
    return run.asRerunOf(source.id(), Json.string(progress), source.requiresApproval() ? -1 : from);
  }

  /** Starts an agent run, as {@link #start} does a workflow run; 404 if the agent is missing or archived. */
  public CompletableFuture<Started> startAgent(Principal caller, AgentStartRequest request) {
    return start(caller, request.project(), request.idempotencyKey(), () -> requestHash(request),
        () -> firstAgentMoves(caller, request));
  }

  private CompletableFuture<Started> start(Principal caller, String project, String idempotencyKey,
      Supplier<String> requestHash, Supplier<Firsts> firstMoves) {
    if (!caller.mayUseProject(project)) {
      throw new DomainException(Kind.FORBIDDEN, "project_forbidden", "this API key may not use project '" + project
          + "'", "project");
    }
    if (idempotencyKey != null) {
      return CompletableFuture.completedFuture(startOnce(caller, idempotencyKey, requestHash.get(), firstMoves));
    }
    Firsts firsts = firstMoves.get();
    quotas.takeRunStart(caller.workspaceId());
    String body = Json.string(RunView.of(firsts.started()));
    return committer.submit(caller.workspaceId(), tx -> insert(tx, firsts)).thenApply(claimDue -> {
      if (claimDue) {
        runDue.run();
      }
      return new Started(200, body, false);
    });
  }

  /**
   * A start with an Idempotency-Key. A stored response is replayed before anything else is looked
   * at: a retry gets what the first request got even if the workflow (or agent) was archived since.
   */
  private Started startOnce(Principal caller, String idempotencyKey, String requestHash, Supplier<Firsts> firstMoves) {
    Optional<IdempotencyStore.Stored> replay = idempotency.replay(caller, idempotencyKey, requestHash);
    if (replay.isPresent()) {
      return new Started(replay.get().status(), replay.get().body(), true);
    }
    Firsts firsts = firstMoves.get();
    quotas.takeRunStart(caller.workspaceId()); // a replay above is no new start
    Run run = firsts.started();
    String body = Json.string(RunView.of(run));
    boolean claimDue;
    try {
      claimDue = committer.commit(caller.workspaceId(), tx -> {
        // The key's row goes in with the run: a concurrent twin fails on it (or waits for it), then replays.
        idempotency.store(tx, caller, idempotencyKey, requestHash, new IdempotencyStore.Stored(200, body),
            run.createdAt());
        return insert(tx, firsts);
      });
    } catch (RuntimeException e) {
      IdempotencyStore.Stored twin = idempotency.afterFailure(e, caller, idempotencyKey, requestHash);
      return new Started(twin.status(), twin.body(), true);
    }
    if (claimDue) {
      runDue.run();
    }
    return new Started(200, body, false);
  }

  /**
   * A new run of the workflow, not yet stored; 404 if the workflow is missing or archived. The run
   * keeps the definition as it is now, so later edits of the workflow do not change it.
   */
  private Run newRun(Principal caller, StartRequest request) {
    Workflow workflow = workflows.findActive(caller.workspaceId(), request.workflowId())
        .orElseThrow(() -> DomainException.notFound("workflow_not_found",
            "no workflow '" + request.workflowId() + "' in workspace '" + caller.workspaceId() + "'"));
    ToolSchemas.Violation broken = template(workflow).violation(request.inputs());
    if (broken != null) {
      throw DomainException.invalid(broken.field(), broken.message());
    }
    return newRun(workflow, request.project(), request.inputs());
  }

  private Run newRun(Workflow workflow, String project, ObjectNode inputs) {
    return newRun(Ids.newId("run", Time.now().toEpochMilli()), workflow, project, inputs);
  }

  private Run newRun(String runId, Workflow workflow, String project, ObjectNode inputs) {
    return newRun(runId, template(workflow), workflow, project, inputs);
  }

  private Run newRun(String runId, WorkflowTemplate template, Workflow workflow, String project, ObjectNode inputs) {
    Instant now = Time.now();
    return Run.newWorkflowRun(runId, workflow.workspaceId(), workflow.id(), project, workflow.requiresApproval(),
        Json.string(inputs), now, template.definition(), template.steps());
  }

  /**
   * Starts a run of {@code workflow} with the id {@code runId} within {@code tx}, the transaction
   * that also marks what asked for it as done (a queued trigger request), so both commit or neither
   * does; a second start with the same id fails on the run's primary key. {@code actor} is named by
   * its start event; the run nests {@code depth} deep (1, or more for a run a crm step's change
   * triggered). Returns whether the engine has work for it at once that it must claim: then call
   * {@link #runsBecameDue} after the commit.
   */
  public boolean startInTransaction(Tx tx, String runId, Workflow workflow, String project, ObjectNode inputs,
      String actor, int depth) {
    WorkflowTemplate template = depth <= 1 ? template(workflow) : WorkflowTemplate.of(workflow, depth);
    Firsts firsts = firstMoves(newRun(runId, template, workflow, project, inputs), actor,
        template.violation(inputs));
    return insert(tx, firsts);
  }

  /**
   * Starts run {@code runId} of {@code workflow} in {@code tx} for trigger {@code triggerIndex}, a
   * schedule, at its time {@code scheduledAt}, as {@link #startInTransaction} does; its timeline
   * begins with {@code schedule.fired} and its events name {@value #SCHEDULE_ACTOR} as their actor.
   * Returns whether it has work due now.
   */
  public boolean startScheduled(Tx tx, String runId, Workflow workflow, String project, ObjectNode inputs,
      int triggerIndex, Instant scheduledAt) {
    return startFired(tx, runId, workflow, project, inputs, SCHEDULE_ACTOR, "schedule.fired",
        Map.of("trigger", triggerIndex, "scheduled_at", Json.time(scheduledAt)));
  }

  /** The actor of the runs that schedules start, and of their events. */
  public static final String SCHEDULE_ACTOR = "schedule";

  /**
   * Starts run {@code runId} of {@code workflow} in {@code tx} for a delivery to the hook of trigger
   * {@code triggerIndex} (see {@link #startInTransaction}): its timeline begins with
   * {@code hook.received} ({@code deliveryId} null when the sender named none), its events name
   * {@value #HOOK_ACTOR} as their actor. Returns whether it has work due now.
   */
  public boolean startHooked(Tx tx, String runId, Workflow workflow, String project, ObjectNode inputs,
      int triggerIndex, String deliveryId) {
    Map<String, Object> data = new java.util.LinkedHashMap<>();
    data.put("trigger", triggerIndex);
    data.put("delivery_id", deliveryId);
    return startFired(tx, runId, workflow, project, inputs, HOOK_ACTOR, "hook.received", data);
  }

  /** The actor of the runs that inbound webhooks start, and of their events. */
  public static final String HOOK_ACTOR = "hook";

  /** A run started by a trigger firing: {@code eventType} with {@code data} first in its timeline, {@code actor} on each event. */
  private boolean startFired(Tx tx, String runId, Workflow workflow, String project, ObjectNode inputs, String actor,
      String eventType, Map<String, Object> data) {
    WorkflowTemplate template = template(workflow);
    Run run = newRun(runId, template, workflow, project, inputs);
    Firsts firsts = firstMoves(run, actor, template.violation(inputs));
    firsts.events().add(0, RunMachine.event(run, eventType, actor, data, run.createdAt()));
    return insert(tx, firsts);
  }

  /** Tells the engine (and the trigger processor) that runs started by {@link #startInTransaction}, or requested, have work due now. */
  public void runsBecameDue() {
    runDue.run();
  }

  private WorkflowTemplate template(Workflow workflow) {
    String key = workflow.workspaceId() + "/" + workflow.id();
    WorkflowTemplate cached = templates.get(key);
    if (cached != null && cached.madeOf(workflow)) {
      return cached;
    }
    WorkflowTemplate made = WorkflowTemplate.of(workflow, 1);
    templates.put(key, made);
    return made;
  }

  /**
   * A new run as it started ({@code started}, what the caller is shown) and as it is stored: moved
   * on as far as it goes without waiting, with its events and first messages.
   */
  private record Firsts(Run started, Run run, List<Event> events, List<RunMessage> messages, boolean callDue,
      RunMachine machine, Attempting attempting, String actor, boolean newThread) {}

  /**
   * The moves a new run makes at once (finish a run without steps, stop at an approval gate, start
   * a delay) are made here and stored with the run in its first commit; the engine takes over when
   * the run stands at an http step or has to wait. The caller still gets the run as it started:
   * {@code running}.
   */
  private Firsts firstMoves(Run run, String actor) {
    return firstMoves(run, actor, null);
  }

  /** As {@link #firstMoves(Run, String)}; a run whose inputs are {@code broken} fails at once instead. */
  private Firsts firstMoves(Run run, String actor, ToolSchemas.Violation broken) {
    List<Event> events = new ArrayList<>();
    WorkflowRunMachine machine = machines.workflow(run, run.createdAt());
    boolean callDue = machine.start(actor, broken, approvalTimeoutSeconds, events);
    Run stored = machine.toRun(null, null);
    Attempting attempting = null;
    if (callDue) {
      int before = machine.events().size();
      machine.startAttempt();
      attempting = new Attempting(machine.toRun(null, null), List.copyOf(machine.events().subList(before,
          machine.events().size())));
    }
    return new Firsts(run.withConcurrencyKey(stored.concurrencyKey()), stored, events, List.of(), callDue, machine,
        attempting, actor, false);
  }

  /**
   * A new run that stands at its first http call as stored when the engine of this process takes
   * it in the run's commit (see {@link CallPlaces}): its attempt started, with that move's events.
   */
  private record Attempting(Run run, List<Event> events) {}

  /**
   * A new agent run: the agent as it is now, the model it asks for (the request's, or the agent's),
   * its first messages (instructions and input); its first model call is due at once, unless the
   * agent requires approval to start. Refused when the model is not allowed or the workspace's
   * tokens of the day are used up (see AgentService#checkStart).
   */
  private Firsts firstAgentMoves(Principal caller, AgentStartRequest request) {
    Agent agent = agents.get(caller.workspaceId(), request.agentId());
    if (agent.archived()) {
      throw DomainException.notFound("agent_not_found", "no agent '" + request.agentId() + "' in workspace '"
          + caller.workspaceId() + "'");
    }
    AgentDefinition definition = agentDefinition(agent);
    if (request.threadId() != null) {
      threads.continued(caller, request.threadId(), request.project());
    }
    Instant now = Time.now();
    agents.checkStart(caller.workspaceId(), definition, request.model(), now);
    String thread = request.threadId() != null ? request.threadId() : Ids.newId("thr", now.toEpochMilli());
    Run run = Run.newAgentRun(Ids.newId("run", now.toEpochMilli()), caller.workspaceId(), agent.id(),
        request.project(), definition.requiresApproval(), Json.string(request.input()), now,
        AgentRunMachine.definitionJson(definition, request.model() != null ? request.model() : definition.model()),
        AgentRunMachine.initialProgress(now.plusSeconds(definition.limits().timeoutSeconds()), request.stream()))
        .inThread(thread);
    List<Event> events = new ArrayList<>();
    events.add(RunMachine.started(run, caller.keyId()));
    AgentRunMachine machine = machines.agent(run, now);
    machine.begin(request.input());
    boolean callDue = machine.moveUntilWaiting(approvalTimeoutSeconds, 1) != AgentRunMachine.Next.NOTHING;
    events.addAll(machine.events());
    return new Firsts(run, machine.toRun(null, null), events, machine.messages(), callDue, machine, null,
        caller.keyId(), request.threadId() == null);
  }

  /** An agent's definition, parsed (its schemas checked) once per version of the agent. */
  private AgentDefinition agentDefinition(Agent agent) {
    String key = agent.workspaceId() + "/" + agent.id();
    ParsedAgent cached = parsedAgents.get(key);
    if (cached != null && cached.source().equals(agent.definition())) {
      return cached.definition();
    }
    AgentDefinition parsed = AgentDefinition.of(agent);
    parsedAgents.put(key, new ParsedAgent(agent.definition(), parsed));
    return parsed;
  }

  private record ParsedAgent(String source, AgentDefinition definition) {}

  /**
   * Stores the new run with its events and messages, and the child runs its first moves started; a
   * run of a workflow with a concurrency setting that finds no free place of its key is stored
   * queued or skipped instead (see {@link ConcurrencyKeys#admit}); so is an agent run whose thread
   * has another run active (see {@link Threads#admit}).
   * A run that stands at an http call goes to the engine of this process with its attempt started
   * when the engine has a place for it (see {@link CallPlaces}), else it is stored due, for a claim.
   * Returns whether it waits for a claim: then wake the engine after the commit.
   */
  private boolean insert(Tx tx, Firsts firsts) {
    if (firsts.machine() instanceof WorkflowRunMachine w) {
      ConcurrencyKeys.Held held = machines.concurrency().admit(tx, w, firsts.started(), firsts.run(), firsts.actor());
      if (held != null) { // queued, or skipped: its first moves are not made (see ConcurrencyKeys)
        RunDao.insert(tx, held.run());
        List<Event> events = new ArrayList<>(); // what began its timeline before its start (schedule.fired)
        for (Event e : firsts.events()) {
          if (e.type().equals("run.started")) {
            break;
          }
          events.add(e);
        }
        events.addAll(held.events());
        RunEvents.store(tx, held.run(), events);
        if (held.machine() != null) {
          machines.children().afterInsert(tx, held.machine(), held.run());
        }
        return false;
      }
    }
    Run stored = firsts.run();
    List<Event> events = firsts.events();
    if (stored.threadId() != null) {
      Threads.Admitted admitted = machines.threads().admit(tx, firsts.started(), stored, firsts.newThread(),
          firsts.actor());
      if (admitted.queuedEvent() != null) { // another run of the thread is active: this one waits its turn
        RunDao.insert(tx, admitted.run());
        RunEvents.store(tx, admitted.run(), List.of(admitted.queuedEvent()));
        return false;
      }
      stored = admitted.run();
    }
    CallPlaces.Place place = firsts.attempting() == null ? null : machines.places().take(stored);
    if (place != null) {
      stored = place.leaseIn(tx, firsts.attempting().run());
      events = new ArrayList<>(events);
      events.addAll(firsts.attempting().events());
    }
    RunDao.insert(tx, stored);
    RunEvents.store(tx, stored, events);
    RunMessageDao.insert(tx, firsts.messages());
    machines.signalWaits().register(tx, firsts.machine(), stored);
    machines.children().afterInsert(tx, firsts.machine(), stored);
    return firsts.callDue() && place == null;
  }

  private static String requestHash(StartRequest request) {
    String canonical = "POST /v1/workflows/" + request.workflowId() + "/runs\n" + request.project() + "\n"
        + Json.canonical(request.inputs());
    return Sha256.hex(canonical);
  }

  private static String requestHash(AgentStartRequest request) {
    String canonical = "POST /v1/agents/" + request.agentId() + "/runs\n" + request.project() + "\n"
        + Json.canonical(request.input()) + "\n" + (request.model() == null ? "" : request.model())
        + (request.stream() ? "\nstream" : "")
        + (request.threadId() == null ? "" : "\n" + request.threadId());
    return Sha256.hex(canonical);
  }
}
