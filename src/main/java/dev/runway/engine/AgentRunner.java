package dev.runway.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.AgentDefinition;
import dev.runway.agent.ModelOutcome;
import dev.runway.core.Backoff;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.db.Tx;
import dev.runway.instance.Leases;
import dev.runway.run.AgentRunMachine;
import dev.runway.run.Run;
import dev.runway.run.RunMachines;
import dev.runway.run.RunMessage;
import dev.runway.run.RunMessageDao;
import dev.runway.run.ThreadDao;
import dev.runway.run.Threads;
import dev.runway.usage.TokenQuota;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.IntPredicate;
import java.util.function.ToLongFunction;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves agent runs forward: a model call, then the tool calls of its answer (at once, up to
 * agents.max_parallel_tool_calls), then the next model call. Every call is recorded as started and
 * saved (with this instance's lease) before it goes out, and what came of it is saved as it
 * arrives: a crash loses at most the calls in progress, which are made again after the restart (a
 * tool call with the same Idempotency-Key). The calls hold
 * no thread while they wait; their answers are taken up on {@code executor}.
 */
final class AgentRunner extends CallingRunner<AgentRunMachine> {
  private static final Logger LOG = LoggerFactory.getLogger(AgentRunner.class);
  /** The room a model call's answer holds from the start: more is taken as a larger one arrives. */
  static final int MODEL_ANSWER_ROOM = 8 * 1024;

  private final Jdbi jdbi;
  private final ModelSettings modelSettings;
  private final ModelClient model;
  private final AgentToolCaller tools;
  private final McpClient mcp;
  private final RunMachines machines;
  private final TokenQuota tokens;
  /**
   * The workspaces' tokens of the day as read in the current claim round: the round's claims are
   * saved only after all of them are made, so a read per run would see the same figure as one per
   * workspace (a takeover of a hundred agent runs made a hundred reads).
   */
  private final Map<String, Long> usedThisRound = new HashMap<>();

  AgentRunner(Jdbi jdbi, GroupCommitter committer, EngineSettings settings, ModelSettings modelSettings,
      ModelClient model, AgentToolCaller tools, McpClient mcp, RunMachines machines, Leases leases,
      Executor executor) {
    super(committer, settings, leases, executor);
    this.jdbi = jdbi;
    this.modelSettings = modelSettings;
    this.model = model;
    this.tools = tools;
    this.mcp = mcp;
    this.machines = machines;
    this.tokens = new TokenQuota(jdbi, modelSettings.tokensPerWorkspacePerDay());
  }

  @Override
  public void newRound() {
    usedThisRound.clear();
  }

  @Override
  public Engine.Claim claim(Run run, Instant now) {
    AgentRunMachine m = machines.agent(run, now);
    AgentRunMachine.Next next = moveUntilWaiting(m,
        workspace -> usedThisRound.computeIfAbsent(workspace, w -> tokens.used(w, now)));
    return Engine.Claim.of(m, next == AgentRunMachine.Next.NOTHING ? m.toRun(null, null) : lease(m, next),
        next != AgentRunMachine.Next.NOTHING);
  }

  /**
   * The run's moves up to its next call; a model call only if its model is still allowed and the
   * workspace has tokens left for it today (else the run fails, see AgentRunMachine#mayCallModel);
   * {@code usedToday} reads a workspace's tokens of the day.
   */
  private AgentRunMachine.Next moveUntilWaiting(AgentRunMachine m, ToLongFunction<String> usedToday) {
    AgentRunMachine.Next next = m.moveUntilWaiting(settings.approvalTimeoutSeconds(), modelSettings.maxRetries() + 1);
    if (next != AgentRunMachine.Next.MODEL) {
      return next;
    }
    long used = 0;
    if (!tokens.unlimited()) {
      try {
        used = usedToday.applyAsLong(m.workspaceId()) + m.newTokens();
      } catch (RuntimeException e) {
        // Not known: no call now. The run is saved due now, as it stands, and taken up again.
        LOG.warn("run {}: the workspace's tokens of the day could not be read ({}); its model call waits",
            m.runId(), e.getMessage());
        return AgentRunMachine.Next.NOTHING;
      }
    }
    if (!m.mayCallModel(modelSettings.allowed(), tokens, used)) {
      return m.moveUntilWaiting(settings.approvalTimeoutSeconds(), modelSettings.maxRetries() + 1);
    }
    return next;
  }

  /** The run as saved when this instance makes its next call: the call recorded as started, and this instance's lease. */
  private Run lease(AgentRunMachine m, AgentRunMachine.Next next) {
    if (next == AgentRunMachine.Next.MODEL) {
      m.startModelCall(modelSettings.baseUrl());
    } else if (next == AgentRunMachine.Next.MCP_LIST) {
      m.startMcpList();
    } else {
      m.startToolCalls(parallelCap(m), true);
    }
    return leased(m);
  }

  /**
   * A call also holds the transcript a model call sends (read, then written into the request). A tool
   * call holds room for the largest answer; a model call for {@link #MODEL_ANSWER_ROOM}, and more as
   * a larger answer arrives (most answers are far smaller than agents.model.max_response_bytes, and
   * a thousand model calls that wait must fit in memory).
   */
  @Override
  public long weight(Run run) {
    JsonNode progress = Json.tree(run.steps());
    int answer = AgentRunMachine.callingModel(progress) ? MODEL_ANSWER_ROOM
        : AgentRunMachine.listingMcp(progress)
            ? settings.maxResponseBytes() * Math.min(modelSettings.maxParallelToolCalls(), AgentDefinition.MAX_MCP_SERVERS)
        : settings.maxResponseBytes() * Math.min(modelSettings.maxParallelToolCalls(), toMake(progress));
    return CallMemory.weight(run, answer) + 2 * (progress.path("transcript_chars").asLong()
        + progress.path("thread_context_chars").asLong());
  }

  /** The tool calls of the last answer without a result yet (at least 1). */
  private static int toMake(JsonNode progress) {
    int n = 0;
    for (JsonNode c : progress.path("tool_calls")) {
      String status = c.path("status").asText();
      n += status.equals("done") || status.equals("answered") ? 0 : 1;
    }
    return Math.max(1, n);
  }

  @Override
  protected CompletableFuture<Run> callOnce(Run calling, CallMemory.Reservation room, Leases.Hold hold) {
    AgentRunMachine before = machines.agent(calling, calling.updatedAt());
    Duration left = before.timeLeft();
    if (before.callingModel()) {
      List<RunMessage> transcript = jdbi.withExtension(RunMessageDao.class, dao -> dao.all(calling.id()));
      // What the run was given from its thread when it began: the same messages at every call (see Threads).
      JsonNode progress = Json.tree(calling.steps());
      List<RunMessage> context = progress.path("thread_context").isEmpty() ? List.of()
          : jdbi.withExtension(ThreadDao.class, dao -> Threads.context(progress, dao::range));
      ObjectNode request = before.modelRequest(transcript, context);
      Duration timeout = shorter(modelSettings.timeout(), left);
      // Room for the answer grows as it arrives, past what the reservation holds already.
      long withoutAnswer = weight(calling) - MODEL_ANSWER_ROOM;
      IntPredicate mayKeep = bytes -> bytes <= MODEL_ANSWER_ROOM || room.resize(withoutAnswer + bytes);
      if (!before.streams()) {
        return model.complete(request, timeout, mayKeep, null)
            .thenComposeAsync(outcome -> settle(calling, room, hold, m -> answered(m, outcome)), executor);
      }
      // The answer is saved after its pieces: a stream's reader sees every delta before the message.
      MessageDeltas deltas = new MessageDeltas(committer, before);
      return model.complete(request, timeout, mayKeep, deltas::add)
          .thenCompose(outcome -> deltas.flushed().thenApply(v -> outcome))
          .thenComposeAsync(outcome -> settle(calling, room, hold, m -> answered(m, outcome)), executor);
    }
    if (before.listingMcp()) {
      return listMcp(calling, before, left, room, hold);
    }
    Turn turn = new Turn(calling, room, hold);
    turn.send(calling, before.callingTools());
    return turn.done;
  }

  /** Lists the tools of every MCP server of the agent at once, then records them (or the failure). */
  private CompletableFuture<Run> listMcp(Run calling, AgentRunMachine before, Duration left,
      CallMemory.Reservation room, Leases.Hold hold) {
    List<AgentDefinition.McpServer> servers = before.definition().agent().mcpServers();
    List<CompletableFuture<McpClient.Listed>> lists = servers.stream().map(server -> mcp.list(calling.workspaceId(),
        calling.id(), server, shorter(Duration.ofMillis(server.timeoutMs()), left))).toList();
    return CompletableFuture.allOf(lists.toArray(CompletableFuture[]::new)).thenComposeAsync(v -> {
      Map<String, List<ObjectNode>> listed = new HashMap<>();
      Map<String, List<String>> skipped = new HashMap<>();
      Map<String, String> errors = new HashMap<>();
      for (int i = 0; i < servers.size(); i++) {
        McpClient.Listed one = lists.get(i).join();
        String name = servers.get(i).name();
        if (one.error() != null) {
          errors.put(name, one.error());
        } else {
          listed.put(name, one.tools());
          skipped.put(name, one.skipped());
        }
      }
      return settle(calling, room, hold, m -> m.mcpListed(listed, skipped, errors));
    }, executor);
  }

  /**
   * The tool calls of one answer, made at once (up to agents.max_parallel_tool_calls): each answer
   * is saved as it arrives, one save after another (each on the run as the one before left it), a
   * further call started in the place it frees; the answer of the last call in flight makes the
   * moves that follow (the next model call once every call has its result). {@link #done} is the
   * run of the next call, or null, as for a single call; it completes once no call of the turn is out.
   */
  private final class Turn {
    final CompletableFuture<Run> done = new CompletableFuture<>();
    private final CallMemory.Reservation room;
    private final Leases.Hold hold;
    /** The run as last saved by this turn. */
    private Run current;
    /** The saves of the answers, one after another. */
    private CompletableFuture<Void> saves = CompletableFuture.completedFuture(null);
    /** Calls sent and not answered yet. */
    private int out;
    /** The run was lost to a caller's move or another instance, or ended: the answers still out are dropped. */
    private boolean over;

    Turn(Run calling, CallMemory.Reservation room, Leases.Hold hold) {
      this.current = calling;
      this.room = room;
      this.hold = hold;
    }

    /** Sends {@code calls} of {@code run} (recorded as started in it, and saved). */
    void send(Run run, List<ObjectNode> calls) {
      AgentRunMachine m = machines.agent(run, run.updatedAt());
      Duration left = m.timeLeft();
      synchronized (this) {
        out += calls.size();
      }
      for (ObjectNode call : calls) {
        String id = call.get("id").asText();
        AgentDefinition.Tool tool = m.tool(call.get("name").asText());
        if (tool == null) {
          AgentRunMachine.McpTool mcpTool = m.mcpTool(call.get("name").asText());
          Duration timeout = shorter(Duration.ofMillis(mcpTool.server().timeoutMs()), left);
          mcp.call(run.workspaceId(), run.id(), mcpTool.server(), mcpTool.name(), AgentRunMachine.arguments(call),
              timeout).thenAccept(result -> answered(id, result));
          continue;
        }
        Duration timeout = shorter(Duration.ofMillis(tool.timeoutMs()), left);
        tools.call(run.workspaceId(), run.id(), run.agentId(), tool, id, AgentRunMachine.arguments(call), timeout)
            .thenAccept(result -> answered(id, result));
      }
    }

    private synchronized void answered(String id, AgentToolCaller.Result result) {
      out--;
      saves = saves.thenComposeAsync(v -> settleOne(id, result), executor).exceptionally(failure -> {
        synchronized (this) {
          over = true;
        }
        done.completeExceptionally(failure);
        return null;
      });
    }

    private CompletableFuture<Void> settleOne(String id, AgentToolCaller.Result result) {
      Run run;
      synchronized (this) {
        if (over) {
          endIfNoneOut(null);
          return CompletableFuture.completedFuture(null);
        }
        run = current;
      }
      AgentRunMachine m = machines.agent(run, Time.now());
      m.toolAnswered(id, result.ok(), result.httpStatus(), result.content(), result.message());
      if (m.callingTools().isEmpty()) {
        // The last call of the turn: the moves that follow, as after a single call.
        return settle(run, room, hold, moved -> moved.toolAnswered(id, result.ok(), result.httpStatus(),
            result.content(), result.message())).thenAccept(next -> {
              synchronized (this) {
                over = true;
              }
              done.complete(next);
            });
      }
      if (m.hasEnded()) {
        return save(m.toRun(null, null), m, hold, false).thenAccept(next -> {
          synchronized (this) {
            over = true;
            endIfNoneOut(null);
          }
        });
      }
      List<ObjectNode> more = stopping() ? List.of() : m.startToolCalls(parallelCap(m), false);
      Run next = leased(m);
      return save(next, m, hold, true).thenAccept(saved -> {
        synchronized (this) {
          if (saved == null) {
            over = true;
            endIfNoneOut(null);
            return;
          }
          current = saved;
        }
        if (!more.isEmpty()) {
          send(saved, more);
        }
      });
    }

    private synchronized void endIfNoneOut(Run next) {
      if (out == 0) {
        done.complete(next);
      }
    }
  }

  /** The most tool calls of the run's answer made at once: the server's cap, lowered by the agent's limits. */
  private int parallelCap(AgentRunMachine m) {
    return m.definition().agent().limits().parallelToolCalls(modelSettings.maxParallelToolCalls());
  }

  private static Duration shorter(Duration a, Duration b) {
    Duration least = a.compareTo(b) <= 0 ? a : b;
    return least.compareTo(Duration.ofMillis(1)) < 0 ? Duration.ofMillis(1) : least;
  }

  private void answered(AgentRunMachine m, ModelOutcome outcome) {
    if (outcome instanceof ModelOutcome.Answer answer) {
      m.modelAnswered(answer);
      return;
    }
    ModelOutcome.Failure failure = (ModelOutcome.Failure) outcome;
    boolean retry = failure.retryable() && m.modelAttempt() <= modelSettings.maxRetries();
    m.modelFailed(failure, retry ? m.now().plus(backoff(m.modelAttempt(), failure.retryAfter())) : null);
  }

  /** Records what came of the call, makes the moves that follow, and saves them with the next call's start. */
  private CompletableFuture<Run> settle(Run calling, CallMemory.Reservation room, Leases.Hold hold,
      java.util.function.Consumer<AgentRunMachine> outcome) {
    AgentRunMachine m = machines.agent(calling, Time.now());
    outcome.accept(m);
    AgentRunMachine.Next next = moveUntilWaiting(m, workspace -> tokens.used(workspace, m.now()));
    boolean callAgain = next != AgentRunMachine.Next.NOTHING && !stopping()
        && room.resize(weight(m.toRun(null, null)));
    Run save = callAgain ? lease(m, next) : m.toRun(null, null);
    return save(save, m, hold, callAgain);
  }

  /** The answer's tokens count even when the run changed meanwhile (canceled): the model used them. */
  @Override
  protected void saveAlso(Tx tx, AgentRunMachine m) {
    TokenQuota.add(tx, m.workspaceId(), m.agentId(), m.now(), m.newTokens());
  }

  /** Exponential backoff with jitter from agents.model.retry_base_ms, at least what Retry-After asked. */
  private Duration backoff(int attempt, Duration retryAfter) {
    Duration jittered = Backoff.jittered(modelSettings.retryBase(), attempt);
    if (retryAfter != null && retryAfter.compareTo(jittered) > 0) {
      return retryAfter.compareTo(Backoff.MAX) > 0 ? Backoff.MAX : retryAfter;
    }
    return jittered;
  }
}
