package dev.runway.engine;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.run.Run;
import dev.runway.run.RunDao;
import dev.runway.run.RunStatus;
import dev.runway.workflow.Step;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves one claimed run forward as far as it can go now: through its steps until it waits (a
 * delay, an approval, a retry) or ends. Every move is saved before the next begins, so a crash
 * loses at most the step in progress, which then runs again (hence the Idempotency-Key it sends).
 */
final class StepRunner {
  private static final Logger LOG = LoggerFactory.getLogger(StepRunner.class);
  private static final Duration MAX_BACKOFF = Duration.ofMinutes(5);

  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final EngineSettings settings;
  private final HttpStepCaller caller;
  private final String owner;

  StepRunner(Jdbi jdbi, GroupCommitter committer, EngineSettings settings, HttpStepCaller caller, String owner) {
    this.jdbi = jdbi;
    this.committer = committer;
    this.settings = settings;
    this.caller = caller;
    this.owner = owner;
  }

  /** Advances the run this instance holds the lease on; always gives the lease back. */
  void advance(String runId) {
    Optional<Run> loaded = jdbi.withExtension(RunDao.class, dao -> dao.findById(runId));
    while (loaded.isPresent()) {
      Run run = loaded.get();
      if (!owner.equals(run.leaseOwner())) {
        return; // a caller's move (cancel, approve) took the run; nothing left for us
      }
      loaded = step(run);
    }
  }

  /** Makes one move; returns the saved run to go on with, or empty when the run waits or ended. */
  private Optional<Run> step(Run run) {
    RunStateMachine m = new RunStateMachine(run, Time.now());
    RunStatus status = m.status();
    if (status != RunStatus.RUNNING && status != RunStatus.AWAITING_APPROVAL) {
      m.dueAgainAt(null); // terminal: nothing is due
      return save(m, false);
    }
    if (status == RunStatus.AWAITING_APPROVAL) {
      Instant expires = Instant.parse(m.approval().path("expires_at").asText());
      if (m.now().isBefore(expires)) {
        m.dueAgainAt(expires);
      } else {
        m.expireApproval();
      }
      return save(m, false);
    }
    if (m.currentStep() < 0) {
      m.awaitApproval(settings.approvalTimeoutSeconds());
      return save(m, false);
    }
    if (m.currentStep() >= m.definition().size()) {
      m.succeed();
      return save(m, false);
    }
    Step step = m.definition().get(m.currentStep());
    if (step instanceof Step.Approval approval) {
      m.awaitApproval(approval.timeoutSeconds());
      return save(m, false);
    }
    if (step instanceof Step.Delay delay) {
      ObjectNode state = m.step(m.currentStep());
      if (!state.hasNonNull("wake_at")) {
        m.startDelay(delay.seconds());
        return save(m, delay.seconds() == 0);
      }
      Instant wake = Instant.parse(state.get("wake_at").asText());
      if (m.now().isBefore(wake)) {
        m.dueAgainAt(wake);
        return save(m, false);
      }
      m.completeStep(null);
      return save(m, true);
    }
    return callHttp(run, m, (Step.Http) step);
  }

  private Optional<Run> callHttp(Run run, RunStateMachine m, Step.Http step) {
    int index = m.currentStep();
    int attempt = m.step(index).get("attempts").size() + 1;
    m.startAttempt(attempt);
    // Hold the lease for the whole call, so no other instance takes the run over meanwhile.
    Instant leaseUntil = m.now().plusMillis(step.timeoutMs()).plus(settings.lease());
    Run calling = m.toRun(owner, leaseUntil);
    if (!saveRun(calling, m)) {
      return Optional.empty();
    }
    Instant started = Time.now();
    HttpStepCaller.Outcome outcome = caller.call(step, callBody(run, index, attempt, m), run.id() + ":" + index);

    RunStateMachine after = new RunStateMachine(calling, Time.now());
    after.recordAttempt(attempt, started, outcome.succeeded() ? "succeeded" : "failed", outcome.httpStatus(),
        outcome.message());
    if (outcome.succeeded()) {
      after.completeStep(outcome.output());
      return save(after, true);
    }
    if (outcome.retryable() && attempt < step.maxAttempts()) {
      after.retryAt(after.now().plus(backoff(attempt)));
      return save(after, false);
    }
    String why = outcome.retryable() ? outcome.message() + " (after " + attempt + " attempts)" : outcome.message();
    after.failStep(outcome.httpStatus(), why);
    return save(after, false);
  }

  /** What the tool receives: the run, its inputs and the outputs of the steps before this one. */
  private static ObjectNode callBody(Run run, int index, int attempt, RunStateMachine m) {
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

  /** Exponential backoff with jitter: base * 2^(attempt-1), at most 5 minutes, then 50-100% of that. */
  private Duration backoff(int attempt) {
    long base = settings.retryBase().toMillis();
    long exp = Math.min(MAX_BACKOFF.toMillis(), base << Math.min(attempt - 1, 20));
    return Duration.ofMillis(exp / 2 + ThreadLocalRandom.current().nextLong(exp / 2 + 1));
  }

  /**
   * Saves the move; keeps the lease when the run goes on at once ({@code goOn}), else gives it back.
   * Empty when the run changed meanwhile (a caller's move won) or it need not go on.
   */
  private Optional<Run> save(RunStateMachine m, boolean goOn) {
    Run next = goOn ? m.toRun(owner, m.now().plus(settings.lease())) : m.toRun(null, null);
    if (!saveRun(next, m)) {
      return Optional.empty();
    }
    return goOn ? Optional.of(next) : Optional.empty();
  }

  private boolean saveRun(Run next, RunStateMachine m) {
    boolean saved = committer.commit(h -> {
      if (h.attach(RunDao.class).saveProgress(next) != 1) {
        return false;
      }
      h.attach(EventDao.class).insert(m.events());
      return true;
    });
    if (!saved) {
      LOG.info("run {} changed while the engine worked on it; leaving it as it is now", next.id());
    }
    return saved;
  }
}
