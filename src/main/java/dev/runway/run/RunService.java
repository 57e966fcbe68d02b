package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.Agent;
import dev.runway.agent.AgentDefinition;
import dev.runway.agent.AgentService;
import dev.runway.auth.Principal;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Sha256;
import dev.runway.core.Time;
import dev.runway.core.WeighedCache;
import dev.runway.db.Slice;
import dev.runway.db.GroupCommitter;
import dev.runway.db.SqlErrors;
import dev.runway.db.Tx;
import dev.runway.engine.Event;
import dev.runway.engine.AgentRunMachine;
import dev.runway.engine.EventDao;
import dev.runway.engine.RunMachine;
import dev.runway.engine.RunStateMachine;
import dev.runway.http.ApiException;
import dev.runway.idempotency.IdempotencyStore;
import dev.runway.quota.Quotas;
import dev.runway.workflow.Step;
import dev.runway.workflow.Workflow;
import dev.runway.workflow.WorkflowService;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;

/**
 * Starts workflow and agent runs (with Idempotency-Key replay), reads them, their events and
 * transcripts, and applies callers' moves (approve, reject, cancel).
 */
public final class RunService {
  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final WorkflowService workflows;
  private final IdempotencyStore idempotency;
  private final long approvalTimeoutSeconds;
  private final Runnable runDue;
  private final Quotas quotas;
  /**
   * What a new run of each workflow starts with, by workspace and workflow id (about 2 MB): a new
   * version of a workflow replaces its old template, which is not kept.
   */
  private final WeighedCache<String, Template> templates = new WeighedCache<>(2_000_000, (key, t) ->
      key.length() + t.source().length() + t.definition().length() + t.steps().length() + 100);
  private final EndedRuns endedRuns = new EndedRuns();
  /** Agents' parsed definitions by workspace and agent id (about 1 MB), so a start checks no schema again. */
  private final WeighedCache<String, ParsedAgent> parsedAgents =
      new WeighedCache<>(1_000_000, (key, p) -> key.length() + 3L * p.source().length() + 100);
  private final AgentService agents;

  /**
   * Writes go through {@code committer} (group commit); {@code runDue} is told when a run became
   * due now (the engine then looks at once); approval gates without a time-out of their own get
   * {@code approvalTimeoutSeconds}.
   */
  public RunService(Jdbi jdbi, GroupCommitter committer, WorkflowService workflows, AgentService agents,
      IdempotencyStore idempotency, long approvalTimeoutSeconds, Runnable runDue, Quotas quotas) {
    this.jdbi = jdbi;
    this.quotas = quotas;
    this.agents = agents;
    this.committer = committer;
    this.workflows = workflows;
    this.idempotency = idempotency;
    this.approvalTimeoutSeconds = approvalTimeoutSeconds;
    this.runDue = runDue;
  }

  /** A start request after validation at the edge. */
  public record StartRequest(String workflowId, String project, ObjectNode inputs, String idempotencyKey) {}

  /** An agent run's start request after validation at the edge: {@code input} is text or an object; {@code model} may be null. */
  public record AgentStartRequest(String agentId, String project, JsonNode input, String model, String idempotencyKey) {}

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

  /** Starts an agent run, as {@link #start} does a workflow run; 404 if the agent is missing or archived. */
  public CompletableFuture<Started> startAgent(Principal caller, AgentStartRequest request) {
    return start(caller, request.project(), request.idempotencyKey(), () -> requestHash(request),
        () -> firstAgentMoves(caller, request));
  }

  private CompletableFuture<Started> start(Principal caller, String project, String idempotencyKey,
      Supplier<String> requestHash, Supplier<Firsts> firstMoves) {
    if (!caller.mayUseProject(project)) {
      throw new ApiException(403, "project_forbidden", "this API key may not use project '" + project + "'", "project");
    }
    if (idempotencyKey != null) {
      return CompletableFuture.completedFuture(startOnce(caller, idempotencyKey, requestHash.get(), firstMoves));
    }
    Firsts firsts = firstMoves.get();
    quotas.takeRunStart(caller.workspaceId());
    String body = Json.string(RunView.of(firsts.started()));
    return committer.submit(caller.workspaceId(), tx -> insert(tx, firsts)).thenApply(stored -> {
      firsts.wakeEngine(runDue);
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
    try {
      committer.commit(caller.workspaceId(), tx -> {
        // The key's row goes in with the run: a concurrent twin fails on it (or waits for it), then replays.
        idempotency.store(tx, caller, idempotencyKey, requestHash, new IdempotencyStore.Stored(200, body),
            run.createdAt());
        return insert(tx, firsts);
      });
    } catch (RuntimeException e) {
      IdempotencyStore.Stored twin = idempotency.afterFailure(e, caller, idempotencyKey, requestHash);
      return new Started(twin.status(), twin.body(), true);
    }
    firsts.wakeEngine(runDue);
    return new Started(200, body, false);
  }

  /**
   * A new run of the workflow, not yet stored; 404 if the workflow is missing or archived. The run
   * keeps the definition as it is now, so later edits of the workflow do not change it.
   */
  private Run newRun(Principal caller, StartRequest request) {
    Workflow workflow = workflows.findActive(caller.workspaceId(), request.workflowId())
        .orElseThrow(() -> ApiException.notFound("workflow_not_found",
            "no workflow '" + request.workflowId() + "' in workspace '" + caller.workspaceId() + "'"));
    return newRun(workflow, request.project(), request.inputs());
  }

  private Run newRun(Workflow workflow, String project, ObjectNode inputs) {
    return newRun(Ids.newId("run", Time.now().toEpochMilli()), workflow, project, inputs);
  }

  private Run newRun(String runId, Workflow workflow, String project, ObjectNode inputs) {
    Template template = template(workflow);
    Instant now = Time.now();
    return new Run(runId, workflow.workspaceId(), Run.WORKFLOW, workflow.id(), null,
        project, RunStatus.RUNNING.wireName(), workflow.requiresApproval(), Json.string(inputs),
        now, now, null, null, null, template.definition(), template.steps(),
        workflow.requiresApproval() ? -1 : 0, now, null, null, 0);
  }

  /**
   * Starts a run of {@code workflow} with the id {@code runId} within {@code tx}, the transaction
   * that also marks what asked for it as done (a queued trigger request), so both commit or neither
   * does; a second start with the same id fails on the run's primary key. {@code actor} is named by
   * its start event. Returns whether the engine has work for it at once: then call
   * {@link #runsBecameDue} after the commit.
   */
  public boolean startInTransaction(Tx tx, String runId, Workflow workflow, String project, ObjectNode inputs,
      String actor) {
    Firsts firsts = firstMoves(newRun(runId, workflow, project, inputs), actor);
    insert(tx, firsts);
    return firsts.callDue();
  }

  /** Tells the engine (and the trigger processor) that runs started by {@link #startInTransaction}, or requested, have work due now. */
  public void runsBecameDue() {
    runDue.run();
  }

  /**
   * What every run of a workflow version starts with, as stored JSON: worked out once per version.
   * {@code source} and {@code requiresApproval} are the version's, to tell whether it is still current.
   */
  private record Template(String source, boolean requiresApproval, String definition, String steps) {}

  private Template template(Workflow workflow) {
    String key = workflow.workspaceId() + "/" + workflow.id();
    Template cached = templates.get(key);
    if (cached != null && cached.requiresApproval() == workflow.requiresApproval()
        && cached.source().equals(workflow.steps())) {
      return cached;
    }
    List<Step> steps = Step.parseAll(Json.tree(workflow.steps()));
    ObjectNode definition = Json.MAPPER.createObjectNode().put("requires_approval", workflow.requiresApproval());
    Step.toJson(steps, definition.putArray("steps"));
    Template made = new Template(workflow.steps(), workflow.requiresApproval(), Json.string(definition),
        Json.string(RunStateMachine.initialSteps(steps)));
    templates.put(key, made);
    return made;
  }

  /**
   * A new run as it started ({@code started}, what the caller is shown) and as it is stored: moved
   * on as far as it goes without waiting, with its events and first messages.
   */
  private record Firsts(Run started, Run run, List<Event> events, List<RunMessage> messages, boolean callDue) {
    void wakeEngine(Runnable runDue) {
      if (callDue) {
        runDue.run();
      }
    }
  }

  /**
   * The moves a new run makes at once (finish a run without steps, stop at an approval gate, start
   * a delay) are made here and stored with the run in its first commit; the engine takes over when
   * the run stands at an http step or has to wait. The caller still gets the run as it started:
   * {@code running}.
   */
  private Firsts firstMoves(Run run, String actor) {
    // The started event is made first so that its id sorts before those of the moves that follow.
    List<Event> events = new ArrayList<>();
    events.add(RunStateMachine.started(run, actor));
    RunStateMachine machine = new RunStateMachine(run, run.createdAt());
    boolean callDue = machine.moveUntilWaiting(approvalTimeoutSeconds);
    events.addAll(machine.events());
    return new Firsts(run, machine.toRun(null, null), events, List.of(), callDue);
  }

  /**
   * A new agent run: the agent as it is now, the model it asks for (the request's, or the agent's),
   * its first messages (instructions and input); its first model call is due at once, unless the
   * agent requires approval to start. Refused when the model is not allowed or the workspace's
   * tokens of the day are used up (see AgentService#checkStart).
   */
  private Firsts firstAgentMoves(Principal caller, AgentStartRequest request) {
    Agent agent = agents.get(caller.workspaceId(), request.agentId());
    if (agent.archived()) {
      throw ApiException.notFound("agent_not_found", "no agent '" + request.agentId() + "' in workspace '"
          + caller.workspaceId() + "'");
    }
    AgentDefinition definition = agentDefinition(agent);
    Instant now = Time.now();
    agents.checkStart(caller.workspaceId(), definition, request.model(), now);
    Run run = new Run(Ids.newId("run", now.toEpochMilli()), caller.workspaceId(), Run.AGENT, null, agent.id(),
        request.project(), RunStatus.RUNNING.wireName(), definition.requiresApproval(), Json.string(request.input()),
        now, now, null, null, null,
        AgentRunMachine.definitionJson(definition, request.model() != null ? request.model() : definition.model()),
        AgentRunMachine.initialProgress(now.plusSeconds(definition.limits().timeoutSeconds())),
        definition.requiresApproval() ? -1 : 0, now, null, null, 0);
    List<Event> events = new ArrayList<>();
    events.add(RunMachine.started(run, caller.keyId()));
    AgentRunMachine machine = new AgentRunMachine(run, now);
    machine.begin(request.input());
    boolean callDue = machine.moveUntilWaiting(approvalTimeoutSeconds, 1) != AgentRunMachine.Next.NOTHING;
    events.addAll(machine.events());
    return new Firsts(run, machine.toRun(null, null), events, machine.messages(), callDue);
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

  private static Run insert(Tx tx, Firsts firsts) {
    RunDao.insert(tx, firsts.run());
    RunEvents.store(tx, firsts.run(), firsts.events());
    RunMessageDao.insert(tx, firsts.messages());
    return firsts.run();
  }

  /** Approves a run waiting at an approval; 409 run_state_conflict if it is not waiting. */
  public Run approve(Principal caller, String runId, String comment) {
    return move(caller, runId, m -> m.approve(caller.keyId(), comment));
  }

  public Run reject(Principal caller, String runId, String comment) {
    return move(caller, runId, m -> m.reject(caller.keyId(), comment));
  }

  /** Cancels a run that has not finished; 409 run_state_conflict if it has. */
  public Run cancel(Principal caller, String runId) {
    return move(caller, runId, m -> m.cancel(caller.keyId()));
  }

  /**
   * Applies a caller's move to the run under a row lock, with its events, in one transaction. An
   * approval past its time-out has failed, whether or not an engine noticed yet: then that expiry
   * is recorded instead, and the move is refused as for any ended run.
   */
  private Run move(Principal caller, String runId, Consumer<RunMachine> move) {
    AtomicBoolean tooLate = new AtomicBoolean();
    Run saved = committer.commit(caller.workspaceId(), tx -> {
      RunDao runs = tx.dao(RunDao.class);
      Run run = runs.findForUpdate(caller.workspaceId(), runId).orElseThrow(() -> runNotFound(caller.workspaceId(), runId));
      checkProject(caller, run);
      RunMachine machine = RunMachine.of(run, Time.now());
      tooLate.set(machine.approvalTimedOut());
      if (tooLate.get()) {
        machine.expireApproval();
      } else {
        move.accept(machine);
      }
      // A caller's move ends any engine lease: an engine still holding the old version will not save.
      Run next = machine.toRun(null, null);
      if (!machine.saveIn(tx, next)) {
        throw new IllegalStateException("run " + runId + " changed under its row lock");
      }
      return next;
    });
    if (tooLate.get()) {
      move.accept(RunMachine.of(saved, Time.now())); // an ended run: 409 run_state_conflict
    }
    if (saved.dueAt() != null) {
      runDue.run();
    }
    return saved;
  }

  /** The run's timeline, oldest first, after the event {@code startingAfter} (null: from the start). */
  public List<Event> events(Principal caller, String runId, String startingAfter, int limit) {
    get(caller, runId);
    return jdbi.withExtension(EventDao.class,
        dao -> dao.ofRun(runId, afterSeq(dao, caller, startingAfter), limit));
  }

  /** The workspace's events, oldest first, after {@code startingAfter}; only the key's projects. */
  public List<Event> workspaceEvents(Principal caller, String startingAfter, int limit) {
    return jdbi.withExtension(EventDao.class,
        dao -> dao.ofWorkspace(caller.workspaceId(), afterSeq(dao, caller, startingAfter), caller.projects(), limit));
  }

  /**
   * Where a stream of events starts: after the event {@code eventId} (named by the request's
   * {@code param}), else from now on.
   */
  public long streamStart(Principal caller, String eventId, String param) {
    return jdbi.withExtension(EventDao.class, dao -> eventId == null ? dao.lastSeq(caller.workspaceId())
        : seqOf(dao, caller, eventId, param));
  }

  /** Where a stream of a run's events starts: after the event {@code eventId}, else from the run's first. */
  public long runStreamStart(Principal caller, String eventId, String param) {
    return eventId == null ? 0 : jdbi.withExtension(EventDao.class, dao -> seqOf(dao, caller, eventId, param));
  }

  private static long afterSeq(EventDao dao, Principal caller, String eventId) {
    return eventId == null ? 0 : seqOf(dao, caller, eventId, "starting_after");
  }

  private static long seqOf(EventDao dao, Principal caller, String eventId, String param) {
    return dao.find(caller.workspaceId(), eventId).map(Event::seq).orElseThrow(() ->
        ApiException.validation(param, param + " names no event of this workspace"));
  }

  private static ApiException runNotFound(String workspaceId, String runId) {
    return ApiException.notFound("run_not_found", "no run '" + runId + "' in workspace '" + workspaceId + "'");
  }

  /**
   * A run of a project outside the key's list does not exist for it, as another workspace's run
   * does not: 404 either way, so the answer tells nothing about ids the key may not see.
   */
  private static void checkProject(Principal caller, Run run) {
    if (!caller.mayUseProject(run.project())) {
      throw runNotFound(caller.workspaceId(), run.id());
    }
  }

  private static String requestHash(StartRequest request) {
    String canonical = "POST /v1/workflows/" + request.workflowId() + "/runs\n" + request.project() + "\n"
        + Json.canonical(request.inputs());
    return Sha256.hex(canonical);
  }

  private static String requestHash(AgentStartRequest request) {
    String canonical = "POST /v1/agents/" + request.agentId() + "/runs\n" + request.project() + "\n"
        + Json.canonical(request.input()) + "\n" + (request.model() == null ? "" : request.model());
    return Sha256.hex(canonical);
  }

  /** An agent run's transcript, oldest first, after message {@code afterIndex} (-1: from the start); a workflow run has none. */
  public List<RunMessage> messages(Principal caller, String runId, int afterIndex, int limit) {
    Run run = get(caller, runId);
    if (!run.isAgent()) {
      return List.of();
    }
    return jdbi.withExtension(RunMessageDao.class, dao -> dao.page(runId, afterIndex, limit));
  }

  /** As {@link #messages(Principal, String, int, int)}, fewer when their stored JSON would pass {@code maxBytes}. */
  public Slice<RunMessage> messages(Principal caller, String runId, int afterIndex, int limit, long maxBytes) {
    Run run = get(caller, runId);
    if (!run.isAgent()) {
      return new Slice<>(List.of(), false);
    }
    return jdbi.withExtension(RunMessageDao.class, dao -> Slice.within(dao.sizes(runId, afterIndex, limit + 1),
        limit, maxBytes, rows -> dao.page(runId, afterIndex, rows)));
  }

  /** The run; an ended one from memory when this instance has read it before (see EndedRuns). */
  public Run get(Principal caller, String runId) {
    Run run = endedRuns.find(caller.workspaceId(), runId).orElseGet(() -> {
      Run read = jdbi.withHandle(h -> RunDao.find(h, caller.workspaceId(), runId))
          .orElseThrow(() -> runNotFound(caller.workspaceId(), runId));
      endedRuns.offer(read);
      return read;
    });
    checkProject(caller, run);
    return run;
  }

  /** Up to {@code limit} runs the caller may see, newest first; fewer when their stored JSON would pass {@code maxBytes}. */
  public Slice<Run> list(Principal caller, RunFilter filter, int limit, long maxBytes) {
    RunFilter scoped = scoped(caller, filter);
    return jdbi.withExtension(RunDao.class, dao -> dao.list(caller.workspaceId(), scoped, limit, maxBytes));
  }

  private static RunFilter scoped(Principal caller, RunFilter filter) {
    if (filter.project() != null && !caller.mayUseProject(filter.project())) {
      throw new ApiException(403, "project_forbidden",
          "this API key may not use project '" + filter.project() + "'", "project");
    }
    return new RunFilter(filter.kind(), filter.workflow(), filter.agent(), filter.project(), filter.statuses(),
        filter.createdAfter(), filter.createdBefore(), filter.startingAfter(), caller.projects());
  }

}
