package dev.runway.run;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Sha256;
import dev.runway.core.Time;
import dev.runway.db.SqlErrors;
import dev.runway.http.ApiException;
import dev.runway.workflow.Workflow;
import dev.runway.workflow.WorkflowDao;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;

/** Starts runs (with Idempotency-Key replay) and reads them back. */
public final class RunService {
  private final Jdbi jdbi;
  private final Duration idempotencyTtl;

  public RunService(Jdbi jdbi, Duration idempotencyTtl) {
    this.jdbi = jdbi;
    this.idempotencyTtl = idempotencyTtl;
  }

  /** A start request after validation at the edge. */
  public record StartRequest(String workflowId, String project, ObjectNode inputs, String idempotencyKey) {}

  /** The response to send: status and JSON body, and whether it is a replay of a stored one. */
  public record Started(int status, String body, boolean replayed) {}

  public Started start(Principal caller, StartRequest request) {
    if (!caller.mayUseProject(request.project())) {
      throw new ApiException(403, "project_forbidden",
          "this API key may not use project '" + request.project() + "'", "project");
    }
    if (request.idempotencyKey() == null) {
      return jdbi.inTransaction(h -> {
        Run run = newRun(h, caller, request);
        h.attach(RunDao.class).insert(run);
        return new Started(200, Json.string(RunView.of(run)), false);
      });
    }
    String requestHash = requestHash(request);
    Optional<Started> replay = replay(caller, request.idempotencyKey(), requestHash);
    if (replay.isPresent()) {
      return replay.get();
    }
    try {
      return jdbi.inTransaction(h -> {
        Instant now = Time.now();
        IdempotencyDao keys = h.attach(IdempotencyDao.class);
        keys.deleteIfExpired(caller.workspaceId(), request.idempotencyKey(), now);
        Run run = newRun(h, caller, request);
        String body = Json.string(RunView.of(run));
        // The key row goes in first: a concurrent twin blocks on it until this commits, then replays.
        keys.insert(new IdempotencyRecord(caller.workspaceId(), request.idempotencyKey(), requestHash, 200, body,
            now, now.plus(idempotencyTtl)));
        h.attach(RunDao.class).insert(run);
        return new Started(200, body, false);
      });
    } catch (JdbiException e) {
      if (SqlErrors.isUniqueViolation(e) || SqlErrors.isLockTimeout(e)) {
        return replay(caller, request.idempotencyKey(), requestHash).orElseThrow(() -> new ApiException(409,
            "idempotency_in_progress", "a request with this Idempotency-Key is still being served; retry shortly",
            null, Map.of("Retry-After", "1")));
      }
      throw e;
    }
  }

  private Optional<Started> replay(Principal caller, String idempotencyKey, String requestHash) {
    Optional<IdempotencyRecord> stored = jdbi.withExtension(IdempotencyDao.class,
        dao -> dao.find(caller.workspaceId(), idempotencyKey));
    if (stored.isEmpty() || !Instant.now().isBefore(stored.get().expiresAt())) {
      return Optional.empty();
    }
    if (!stored.get().requestHash().equals(requestHash)) {
      throw new ApiException(422, "idempotency_key_mismatch",
          "this Idempotency-Key was already used with a different request", null);
    }
    return Optional.of(new Started(stored.get().responseStatus(), stored.get().responseBody(), true));
  }

  /** A new run of the workflow, not yet stored; 404 if the workflow is missing or archived. */
  private static Run newRun(Handle h, Principal caller, StartRequest request) {
    Workflow workflow = h.attach(WorkflowDao.class).find(caller.workspaceId(), request.workflowId())
        .filter(w -> !w.archived())
        .orElseThrow(() -> ApiException.notFound("workflow_not_found",
            "no workflow '" + request.workflowId() + "' in this workspace"));
    Instant now = Time.now();
    return new Run(Ids.newId("run", now.toEpochMilli()), caller.workspaceId(), workflow.id(),
        request.project(), RunStatus.RUNNING.wireName(), workflow.requiresApproval(), Json.string(request.inputs()),
        now, now, null, null, null);
  }

  private static String requestHash(StartRequest request) {
    String canonical = "POST /v1/workflows/" + request.workflowId() + "/runs\n" + request.project() + "\n"
        + Json.canonical(request.inputs());
    return Sha256.hex(canonical);
  }

  public Run get(Principal caller, String runId) {
    Run run = jdbi.withExtension(RunDao.class, dao -> dao.find(caller.workspaceId(), runId))
        .orElseThrow(() -> ApiException.notFound("run_not_found", "no run '" + runId + "' in this workspace"));
    if (!caller.mayUseProject(run.project())) {
      throw new ApiException(403, "project_forbidden",
          "this API key may not use project '" + run.project() + "'");
    }
    return run;
  }

  /** Up to {@code limit} runs, newest first, restricted to the caller's projects. */
  public List<Run> list(Principal caller, RunFilter filter, int limit) {
    if (filter.project() != null && !caller.mayUseProject(filter.project())) {
      throw new ApiException(403, "project_forbidden",
          "this API key may not use project '" + filter.project() + "'", "project");
    }
    RunFilter scoped = new RunFilter(filter.workflow(), filter.project(), filter.statuses(), filter.createdAfter(),
        filter.createdBefore(), filter.startingAfter(), caller.projects());
    return jdbi.withExtension(RunDao.class, dao -> dao.list(caller.workspaceId(), scoped, limit));
  }

  /** Drops stored idempotent responses past their time; returns how many. */
  public int sweepIdempotencyKeys() {
    return jdbi.withExtension(IdempotencyDao.class, dao -> dao.deleteExpired(Instant.now()));
  }
}
