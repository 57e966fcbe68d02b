package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Sha256;
import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.db.Tx;
import dev.runway.idempotency.IdempotencyStore;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.jdbi.v3.core.Jdbi;

/**
 * Signals sent to runs (POST /v1/runs/{run_id}/signals/{name} with an API key, or a run's one-use
 * signal URL): under the run's row lock, a run that stands at a wait step for the name takes the
 * signal and moves on in the commit that stores it; else the signal is kept, for the first wait of
 * that name the run reaches (see {@link SignalWaits}). A run that ended takes none (409).
 */
public final class RunSignals {
  /** The most signals kept for one run (sent before a wait took them): past it 409 too_many_signals. */
  public static final int MAX_KEPT = 100;
  /** The actor of what a signal URL's signal does: the URL has no key. */
  public static final String SIGNAL_URL_ACTOR = "signal_url";

  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final RunMachines machines;
  private final IdempotencyStore idempotency;
  private final long approvalTimeoutSeconds;
  private final Runnable runDue;

  public RunSignals(Jdbi jdbi, GroupCommitter committer, RunMachines machines, IdempotencyStore idempotency,
      long approvalTimeoutSeconds, Runnable runDue) {
    this.jdbi = jdbi;
    this.committer = committer;
    this.machines = machines;
    this.idempotency = idempotency;
    this.approvalTimeoutSeconds = approvalTimeoutSeconds;
    this.runDue = runDue;
  }

  /** What a send answers: its status and JSON body, and whether it replays a stored answer. */
  public record Sent(int status, String body, boolean replayed) {}

  /**
   * Sends signal {@code name} with {@code body} to run {@code runId} of the caller's workspace (a
   * run of a project outside the key's list does not exist for it: 404). With an Idempotency-Key,
   * a retry gets the first answer again and sends nothing.
   */
  public Sent send(Principal caller, String runId, String name, JsonNode body, String idempotencyKey) {
    if (idempotencyKey == null) {
      ObjectNode answer = committer.commit(caller.workspaceId(),
          tx -> deliver(tx, caller.workspaceId(), runId, name, body, "api", caller));
      return new Sent(202, Json.string(answer), false);
    }
    String requestHash = Sha256.hex("POST /v1/runs/" + runId + "/signals/" + name + "\n" + Json.canonical(body));
    Optional<IdempotencyStore.Stored> replay = idempotency.replay(caller, idempotencyKey, requestHash);
    if (replay.isPresent()) {
      return new Sent(replay.get().status(), replay.get().body(), true);
    }
    try {
      String answer = committer.commit(caller.workspaceId(), tx -> {
        String made = Json.string(deliver(tx, caller.workspaceId(), runId, name, body, "api", caller));
        // The key's row goes in with the signal: a concurrent twin fails on it (or waits for it), then replays.
        idempotency.store(tx, caller, idempotencyKey, requestHash, new IdempotencyStore.Stored(202, made), Time.now());
        return made;
      });
      return new Sent(202, answer, false);
    } catch (DomainException e) {
      throw e;
    } catch (RuntimeException e) {
      IdempotencyStore.Stored twin = idempotency.afterFailure(e, caller, idempotencyKey, requestHash);
      return new Sent(twin.status(), twin.body(), true);
    }
  }

  /**
   * Sends the signal of the signal URL whose token is {@code token}, with {@code body}, and uses the
   * URL up. An unknown token, a used one and one whose wait ended are all 404 signal_url_not_found:
   * the token is looked up by its hash, so the answer takes as long whichever it is.
   */
  public Sent sendByUrl(String token, JsonNode body) {
    String hash = SignalUrls.hash(token);
    RunSignalDao.UrlTarget target = jdbi.withExtension(RunSignalDao.class, dao -> dao.findUrl(hash))
        .orElseThrow(RunSignals::urlNotFound);
    ObjectNode answer = committer.commit(target.workspaceId(), tx -> {
      if (tx.dao(RunSignalDao.class).useUrl(hash, Time.now()) != 1) {
        throw urlNotFound(); // used, or its wait ended, meanwhile
      }
      return deliver(tx, target.workspaceId(), target.runId(), target.name(), body, "url", null);
    });
    return new Sent(202, Json.string(answer), false);
  }

  /** The signals sent to a run, oldest first (for the console and tests). */
  public java.util.List<RunSignal> ofRun(String workspaceId, String runId) {
    return jdbi.withExtension(RunSignalDao.class, dao -> dao.ofRun(workspaceId, runId));
  }

  /** Stores the signal in {@code tx}: taken by the wait the run stands at, or kept. */
  private ObjectNode deliver(Tx tx, String workspaceId, String runId, String name, JsonNode body, String via,
      Principal caller) {
    RunDao runs = tx.dao(RunDao.class);
    // The runs above first, as every commit that moves a child and its parents locks them (see ChildRuns).
    ChildRuns.lockAncestors(tx, workspaceId, runs.parentOf(workspaceId, runId));
    Run run = runs.findForUpdate(workspaceId, runId).orElseThrow(() -> runNotFound(workspaceId, runId));
    if (caller != null && !caller.mayUseProject(run.project())) {
      throw runNotFound(workspaceId, runId);
    }
    if (run.isEnded()) {
      if (caller == null) {
        throw urlNotFound(); // its URL ended with the run (the lookup raced the end)
      }
      throw new DomainException(Kind.CONFLICT, "run_state_conflict", "cannot signal a run that is " + run.status()
          + ": it has ended", null, 0, Map.of("current_status", run.status()));
    }
    String text = Json.string(body);
    if (text.length() > WorkflowRunMachine.MAX_RUN_CHARS) { // never kept by a run (http.max_body_bytes may be larger)
      throw new DomainException(Kind.TOO_LARGE, "body_too_large", "a signal's body takes at most "
          + WorkflowRunMachine.MAX_RUN_CHARS + " characters as JSON, as a run keeps at most that", null);
    }
    Instant now = Time.now();
    String id = Ids.newId("sig", now.toEpochMilli());
    RunSignalDao signals = tx.dao(RunSignalDao.class);
    ObjectNode answer = Json.MAPPER.createObjectNode().put("id", id).put("run_id", runId).put("signal", name);
    if (!run.isAgent()) {
      WorkflowRunMachine m = machines.workflow(run, now);
      if (m.waitsForSignal(name)) {
        String step = m.definition().get(m.currentStep()).flow().id();
        signals.insert(new RunSignal(id, workspaceId, runId, name, text, via, now, now, m.currentStep()));
        m.signalReceived(id, name, body, via, caller != null ? caller.keyId() : SIGNAL_URL_ACTOR);
        if (m.moveUntilWaiting(approvalTimeoutSeconds)) {
          tx.afterCommit(runDue); // it stands at an http step: the engine makes the call
        }
        ChildRuns.save(tx, m, m.toRun(null, null));
        return answer.put("status", "delivered").put("step", step);
      }
    }
    if (signals.countKept(runId, MAX_KEPT) >= MAX_KEPT) {
      throw new DomainException(Kind.CONFLICT, "too_many_signals", "run " + runId + " already keeps " + MAX_KEPT
          + " signals that no wait step took: it takes no more until one does", null, 0,
          Map.of("current_status", run.status()));
    }
    signals.insert(new RunSignal(id, workspaceId, runId, name, text, via, now, null, null));
    return answer.put("status", "kept").putNull("step");
  }

  private static DomainException runNotFound(String workspaceId, String runId) {
    return DomainException.notFound("run_not_found", "no run '" + runId + "' in workspace '" + workspaceId + "'");
  }

  private static DomainException urlNotFound() {
    return DomainException.notFound("signal_url_not_found", "no signal URL with this token: it was never made, was "
        + "used already, or its wait (or run) has ended");
  }
}
