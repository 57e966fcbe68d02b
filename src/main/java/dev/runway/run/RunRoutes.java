package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.JsonFields;
import dev.runway.db.Slice;
import dev.runway.http.AuthHandler;
import dev.runway.http.Page;
import dev.runway.http.PathParams;
import dev.runway.http.QueryParams;
import dev.runway.http.RequestBodies;
import dev.runway.http.Responses;
import io.javalin.http.Context;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/** HTTP handlers for starting, reading and listing runs. */
public final class RunRoutes {
  private static final Set<String> START_FIELDS = Set.of("project", "inputs");
  private static final Set<String> AGENT_START_FIELDS = Set.of("project", "input", "model", "stream", "thread_id");
  private static final Set<String> MESSAGE_PARAMS = Set.of("limit", "starting_after");
  private static final Set<String> DECISION_FIELDS = Set.of("comment", "tool_call_ids");
  private static final Set<String> LIST_PARAMS =
      Set.of("kind", "workflow", "agent", "project", "status", "created_after", "created_before", "limit", "starting_after",
          "parent_run_id");
  public static final String IDEMPOTENCY_KEY = "Idempotency-Key";

  private final RunStarts starts;
  private final RunService runs;
  private final RequestBodies bodies;
  private final Executor requestThreads;
  private final long maxPageBytes;

  /**
   * {@code requestThreads} finish a start once its run is committed: the server's request threads,
   * so that the thread that wakes committers never writes a response (a slow client would hold it).
   * A page of runs or messages holds at most {@code maxPageBytes} of their stored JSON (at least one).
   */
  public RunRoutes(RunStarts starts, RunService runs, RequestBodies bodies, Executor requestThreads,
      long maxPageBytes) {
    this.starts = starts;
    this.maxPageBytes = maxPageBytes;
    this.runs = runs;
    this.bodies = bodies;
    this.requestThreads = requestThreads;
  }

  public void start(Context ctx) {
    String workflowId = PathParams.slug(ctx, "id");
    String idempotencyKey = idempotencyKey(ctx);
    StartBody body = startBody(bodies.requiredObject(ctx));
    RunStarts.StartRequest request =
        new RunStarts.StartRequest(workflowId, body.project(), body.inputs(), idempotencyKey);
    // The request thread does not wait for the commit: it serves other requests meanwhile.
    respond(ctx, starts.start(AuthHandler.principal(ctx), request));
  }

  /** POST /v1/runs/{runId}/rerun: a new run of the definition a run ran, from a step or from the start. */
  public void rerun(Context ctx) {
    String idempotencyKey = idempotencyKey(ctx);
    RunStarts.RerunRequest request = rerunBody(bodies.optionalObject(ctx), idempotencyKey);
    Principal caller = AuthHandler.principal(ctx);
    respond(ctx, starts.rerun(caller, runs.get(caller, runId(ctx)), request));
  }

  /** Checks a rerun body: {from_step?, inputs?}. */
  public static RunStarts.RerunRequest rerunBody(ObjectNode body, String idempotencyKey) {
    JsonFields fields = JsonFields.of(body, RERUN_FIELDS);
    String fromStep = fields.optionalString("from_step", null, 64);
    ObjectNode inputs = body.hasNonNull("inputs") ? fields.optionalObject("inputs") : null;
    return new RunStarts.RerunRequest(fromStep, inputs, idempotencyKey);
  }

  private static final Set<String> RERUN_FIELDS = Set.of("from_step", "inputs");

  /**
   * POST /v1/runs/rerun: reruns from the start each run of a workflow that the filter finds
   * ({@code workflow} required; {@code status}, default failed; {@code created_after},
   * {@code created_before}), newest first, up to {@code limit} (1-1000, default 100), in one commit.
   */
  public void rerunAll(Context ctx) {
    ObjectNode body = bodies.requiredObject(ctx);
    JsonFields fields = JsonFields.of(body, BULK_RERUN_FIELDS);
    String workflow = fields.requiredSlug("workflow");
    List<String> statuses = body.hasNonNull("status") ? statuses(fields.optionalString("status", null, 200))
        : List.of(RunStatus.FAILED.wireName());
    Instant after = body.hasNonNull("created_after")
        ? QueryParams.parseTime(fields.optionalString("created_after", null, 64), "created_after") : null;
    Instant before = body.hasNonNull("created_before")
        ? QueryParams.parseTime(fields.optionalString("created_before", null, 64), "created_before") : null;
    int limit = (int) fields.optionalLong("limit", 100, 1, 1000);
    Principal caller = AuthHandler.principal(ctx);
    List<Run> found = new ArrayList<>();
    String from = null;
    while (found.size() < limit) {
      Slice<Run> page = runs.list(caller, new RunFilter(Run.WORKFLOW, workflow, null, null, statuses, after, before,
          from, null, null), Math.min(100, limit - found.size()), maxPageBytes);
      found.addAll(page.rows());
      if (!page.more() || page.rows().isEmpty()) {
        break;
      }
      from = page.rows().get(page.rows().size() - 1).id();
    }
    RunStarts.Reruns done = starts.rerunAll(caller, workflow, found);
    ObjectNode answer = Json.MAPPER.createObjectNode();
    ArrayNode started = answer.putArray("data");
    done.started().forEach(r -> started.addObject().put("id", r.id()).put("rerun_of", r.rerunOf()));
    ArrayNode skipped = answer.putArray("skipped");
    done.skipped().forEach(r -> skipped.addObject().put("id", r.runId()).put("code", r.code()));
    Responses.json(ctx, 200, answer);
  }

  private static final Set<String> BULK_RERUN_FIELDS =
      Set.of("workflow", "status", "created_after", "created_before", "limit");

  /** POST /v1/agents/{id}/runs: starts an agent run, as durable as a workflow run's start. */
  public void startAgent(Context ctx) {
    String agentId = PathParams.slug(ctx, "id");
    String idempotencyKey = idempotencyKey(ctx);
    AgentStartBody body = agentStartBody(bodies.requiredObject(ctx));
    respond(ctx, starts.startAgent(AuthHandler.principal(ctx), new RunStarts.AgentStartRequest(agentId, body.project(),
        body.input(), body.model(), body.stream(), idempotencyKey, body.threadId())));
  }

  private void respond(Context ctx, CompletableFuture<RunStarts.Started> started) {
    ctx.future(() -> started.thenAcceptAsync(
        s -> Responses.maybeReplayed(ctx, s.status(), s.body(), s.replayed()), requestThreads));
  }

  public void get(Context ctx) {
    Responses.json(ctx, 200, RunView.of(runs.get(AuthHandler.principal(ctx), runId(ctx))));
  }

  public void list(Context ctx) {
    QueryParams q = QueryParams.of(ctx, LIST_PARAMS);
    int limit = q.integer("limit", 20, 1, 100);
    RunFilter filter = new RunFilter(kind(q.string("kind")), q.slug("workflow"), q.slug("agent"), q.slug("project"), statuses(q.string("status")),
        q.time("created_after"), q.time("created_before"), q.id("starting_after", "run"), null,
        q.id("parent_run_id", "run"));
    Slice<Run> rows = runs.list(AuthHandler.principal(ctx), filter, limit, maxPageBytes);
    Responses.json(ctx, 200, Page.of(rows, RunView::of, RunView::id));
  }

  public void approve(Context ctx) {
    Decision d = decision(bodies.optionalObject(ctx));
    Responses.json(ctx, 200, RunView.of(runs.approve(AuthHandler.principal(ctx), runId(ctx), d.comment(),
        d.toolCallIds())));
  }

  public void reject(Context ctx) {
    Decision d = decision(bodies.optionalObject(ctx));
    Responses.json(ctx, 200, RunView.of(runs.reject(AuthHandler.principal(ctx), runId(ctx), d.comment(),
        d.toolCallIds())));
  }

  public void cancel(Context ctx) {
    checkCancelBody(bodies.optionalObject(ctx));
    Responses.json(ctx, 200, RunView.of(runs.cancel(AuthHandler.principal(ctx), runId(ctx))));
  }

  /** GET /v1/runs/{runId}/messages: an agent run's transcript, oldest first; the cursor is a message index. */
  public void messages(Context ctx) {
    QueryParams q = QueryParams.of(ctx, MESSAGE_PARAMS);
    int limit = q.integer("limit", 100, 1, 1000);
    int after = q.integer("starting_after", -1, -1, Integer.MAX_VALUE);
    Slice<RunMessage> rows = runs.messages(AuthHandler.principal(ctx), runId(ctx), after, limit, maxPageBytes);
    Responses.json(ctx, 200, Page.of(rows, MessageView::of, m -> String.valueOf(m.index())));
  }

  /** The fields of a start body. */
  public record StartBody(String project, ObjectNode inputs) {}

  /** Checks a start body: {project, inputs?}. Public, like the two below, for the fuzz tests. */
  public static StartBody startBody(ObjectNode body) {
    JsonFields fields = JsonFields.of(body, START_FIELDS);
    return new StartBody(fields.requiredSlug("project"), fields.optionalObject("inputs"));
  }

  /** The fields of an agent run's start body; {@code threadId} null to start a new thread. */
  public record AgentStartBody(String project, JsonNode input, String model, boolean stream, String threadId) {}

  /** Checks an agent run's start body: {project, input (text or an object), model?, thread_id?}. */
  public static AgentStartBody agentStartBody(ObjectNode body) {
    JsonFields fields = JsonFields.of(body, AGENT_START_FIELDS);
    String project = fields.requiredSlug("project");
    JsonNode input = body.get("input");
    if (input == null || !(input.isTextual() || input.isObject())) {
      throw DomainException.invalid("input", "input is required: the text or JSON object the agent works on");
    }
    String model = fields.optionalString("model", null, 200);
    if (model != null && model.isBlank()) {
      throw DomainException.invalid("model", "model must not be blank: leave it out to use the agent's");
    }
    JsonNode thread = body.get("thread_id");
    if (thread != null && !thread.isNull() && !(thread.isTextual() && Ids.looksLike("thr", thread.asText()))) {
      throw DomainException.invalid("thread_id", "thread_id must be a thread id (thr_ and 26 characters), as a "
          + "run's thread_id shows it; leave it out to start a new thread");
    }
    return new AgentStartBody(project, input, model, fields.optionalBoolean("stream", false), thread == null || thread.isNull() ? null : thread.asText());
  }

  /** The comment of an approve or reject body: {comment?}, at most 1000 characters; null when absent. */
  public static String decisionComment(ObjectNode body) {
    return decision(body).comment();
  }

  /** An approve or reject body: a comment, and the tool calls it decides (null: all that are asked). */
  public record Decision(String comment, List<String> toolCallIds) {}

  /** Checks an approve or reject body: {comment?, tool_call_ids?} (at most 128 ids). */
  public static Decision decision(ObjectNode body) {
    JsonFields fields = JsonFields.of(body, DECISION_FIELDS);
    String comment = fields.optionalString("comment", null, 1000);
    if (body == null || !body.has("tool_call_ids")) {
      return new Decision(comment, null);
    }
    JsonNode ids = fields.optionalArray("tool_call_ids");
    if (ids.size() > 128) {
      throw DomainException.invalid("tool_call_ids", "tool_call_ids has at most 128 ids");
    }
    List<String> list = new java.util.ArrayList<>();
    for (JsonNode id : ids) {
      if (!id.isTextual() || id.asText().isEmpty() || id.asText().length() > 256) {
        throw DomainException.invalid("tool_call_ids", "tool_call_ids must be an array of tool call ids (strings of "
            + "1-256 characters)");
      }
      if (!list.contains(id.asText())) {
        list.add(id.asText());
      }
    }
    return new Decision(comment, list);
  }

  /** A cancel body takes no fields. */
  public static void checkCancelBody(ObjectNode body) {
    JsonFields.of(body, Set.of());
  }

  /** The run id in the path; one that cannot be a run id is 404, as an unknown one is. */
  public static String runId(Context ctx) {
    String runId = ctx.pathParam("runId");
    if (!Ids.looksLike("run", runId)) {
      throw DomainException.notFound("run_not_found", "no run '" + runId + "' in workspace '"
          + AuthHandler.principal(ctx).workspaceId() + "'");
    }
    return runId;
  }

  private static String kind(String text) {
    if (text != null && !text.equals(Run.WORKFLOW) && !text.equals(Run.AGENT)) {
      throw DomainException.invalid("kind", "kind must be workflow or agent");
    }
    return text;
  }

  private static List<String> statuses(String text) {
    if (text == null) {
      return null;
    }
    List<String> statuses = new ArrayList<>();
    for (String s : text.split(",", -1)) {
      RunStatus status = RunStatus.parse(s.trim()).orElseThrow(() -> DomainException.invalid("status",
          "status must be a comma-separated list of: running, awaiting_approval, queued, succeeded, failed, canceled, rejected"));
      statuses.add(status.wireName());
    }
    return statuses;
  }

  public static String idempotencyKey(Context ctx) {
    String key = ctx.header(IDEMPOTENCY_KEY);
    if (key == null) {
      return null;
    }
    if (key.isEmpty() || key.length() > 255 || !key.chars().allMatch(c -> c >= 0x20 && c <= 0x7e)) {
      throw DomainException.invalid(IDEMPOTENCY_KEY, "Idempotency-Key must be 1-255 printable ASCII characters");
    }
    return key;
  }
}
