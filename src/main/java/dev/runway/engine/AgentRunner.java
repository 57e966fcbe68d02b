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
 * Moves agent runs forward: a model call, then each tool call of its answer, then the next model
 * call. Every call is recorded as started and saved (with this instance's lease) before it goes
 * out, and what came of it is saved before the next: a crash loses at most the call in progress,
 * which is made again after the restart (a tool call with the same Idempotency-Key). The calls hold
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
  private final RunMachines machines;
  private final TokenQuota tokens;
  /**
   * The workspaces' tokens of the day as read in the current claim round: the round's claims are
   * saved only after all of them are made, so a read per run would see the same figure as one per
   * workspace (a takeover of a hundred agent runs made a hundred reads).
   */
  private final Map<String, Long> usedThisRound = new HashMap<>();

  AgentRunner(Jdbi jdbi, GroupCommitter committer, EngineSettings settings, ModelSettings modelSettings,
      ModelClient model, AgentToolCaller tools, RunMachines machines, Leases leases, Executor executor) {
    super(committer, settings, leases, executor);
    this.jdbi = jdbi;
    this.modelSettings = modelSettings;
    this.model = model;
    this.tools = tools;
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
    } else {
      m.startToolCall();
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
    int answer = AgentRunMachine.callingModel(progress) ? MODEL_ANSWER_ROOM : settings.maxResponseBytes();
    return CallMemory.weight(run, answer) + 2 * progress.path("transcript_chars").asLong();
  }

  @Override
  protected CompletableFuture<Run> callOnce(Run calling, CallMemory.Reservation room, Leases.Hold hold) {
    AgentRunMachine before = machines.agent(calling, calling.updatedAt());
    Duration left = before.timeLeft();
    if (before.callingModel()) {
      List<RunMessage> transcript = jdbi.withExtension(RunMessageDao.class, dao -> dao.all(calling.id()));
      ObjectNode request = before.modelRequest(transcript);
      Duration timeout = shorter(modelSettings.timeout(), left);
      // Room for the answer grows as it arrives, past what the reservation holds already.
      long withoutAnswer = weight(calling) - MODEL_ANSWER_ROOM;
      IntPredicate mayKeep = bytes -> bytes <= MODEL_ANSWER_ROOM || room.resize(withoutAnswer + bytes);
      return model.complete(request, timeout, mayKeep)
          .thenComposeAsync(outcome -> settle(calling, room, hold, m -> answered(m, outcome)), executor);
    }
    ObjectNode call = before.nextToolCall();
    AgentDefinition.Tool tool = before.tool(call.get("name").asText());
    JsonNode arguments = AgentRunMachine.arguments(call);
    Duration timeout = shorter(Duration.ofMillis(tool.timeoutMs()), left);
    return tools.call(calling.workspaceId(), calling.id(), calling.agentId(), tool, call.get("id").asText(), arguments,
        timeout).thenComposeAsync(result -> settle(calling, room, hold,
            m -> m.toolAnswered(result.ok(), result.httpStatus(), result.content(), result.message())), executor);
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
    TokenQuota.add(tx, m.workspaceId(), m.now(), m.newTokens());
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
