package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.Ids;
import dev.runway.db.Slice;
import dev.runway.engine.Event;
import dev.runway.engine.EventView;
import dev.runway.events.EventStreams;
import dev.runway.http.AuthHandler;
import dev.runway.http.JsonFields;
import dev.runway.http.Page;
import dev.runway.http.PathParams;
import dev.runway.http.QueryParams;
import dev.runway.http.RequestBodies;
import dev.runway.http.Responses;
import io.javalin.http.Context;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/** HTTP handlers for starting, reading and listing runs. */
public final class RunRoutes {
  private static final Set<String> START_FIELDS = Set.of("project", "inputs");
  private static final Set<String> AGENT_START_FIELDS = Set.of("project", "input", "model");
  private static final Set<String> MESSAGE_PARAMS = Set.of("limit", "starting_after");
  private static final Set<String> DECISION_FIELDS = Set.of("comment");
  private static final Set<String> EVENT_PARAMS = Set.of("limit", "starting_after");
  private static final Set<String> STREAM_PARAMS = Set.of("starting_after");
  private static final Set<String> ENDED = Set.of(RunStatus.SUCCEEDED.wireName(), RunStatus.FAILED.wireName(),
      RunStatus.CANCELED.wireName(), RunStatus.REJECTED.wireName());
  private static final Set<String> LIST_PARAMS =
      Set.of("kind", "workflow", "agent", "project", "status", "created_after", "created_before", "limit", "starting_after");
  public static final String IDEMPOTENCY_KEY = "Idempotency-Key";

  private final RunService runs;
  private final RequestBodies bodies;
  private final Executor requestThreads;
  private final EventStreams streams;
  private final long maxPageBytes;

  /**
   * {@code requestThreads} finish a start once its run is committed: the server's request threads,
   * so that the thread that wakes committers never writes a response (a slow client would hold it).
   * A page of runs or messages holds at most {@code maxPageBytes} of their stored JSON (at least one).
   */
  public RunRoutes(RunService runs, RequestBodies bodies, Executor requestThreads, EventStreams streams,
      long maxPageBytes) {
    this.maxPageBytes = maxPageBytes;
    this.runs = runs;
    this.bodies = bodies;
    this.requestThreads = requestThreads;
    this.streams = streams;
  }

  public void start(Context ctx) {
    String workflowId = PathParams.slug(ctx, "id");
    String idempotencyKey = idempotencyKey(ctx);
    StartBody body = startBody(bodies.requiredObject(ctx));
    RunService.StartRequest request =
        new RunService.StartRequest(workflowId, body.project(), body.inputs(), idempotencyKey);
    // The request thread does not wait for the commit: it serves other requests meanwhile. Under
    // load this is about a quarter more starts per second than a thread that waits (docs/performance.md).
    respond(ctx, runs.start(AuthHandler.principal(ctx), request));
  }

  /** POST /v1/agents/{id}/runs: starts an agent run, as durable as a workflow run's start. */
  public void startAgent(Context ctx) {
    String agentId = PathParams.slug(ctx, "id");
    String idempotencyKey = idempotencyKey(ctx);
    AgentStartBody body = agentStartBody(bodies.requiredObject(ctx));
    respond(ctx, runs.startAgent(AuthHandler.principal(ctx), new RunService.AgentStartRequest(agentId, body.project(),
        body.input(), body.model(), idempotencyKey)));
  }

  private void respond(Context ctx, CompletableFuture<RunService.Started> started) {
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
        q.time("created_after"), q.time("created_before"), q.id("starting_after", "run"), null);
    Slice<Run> rows = runs.list(AuthHandler.principal(ctx), filter, limit, maxPageBytes);
    Responses.json(ctx, 200, Page.of(rows, RunView::of, RunView::id));
  }

  public void approve(Context ctx) {
    String comment = comment(ctx);
    Responses.json(ctx, 200, RunView.of(runs.approve(AuthHandler.principal(ctx), runId(ctx), comment)));
  }

  public void reject(Context ctx) {
    String comment = comment(ctx);
    Responses.json(ctx, 200, RunView.of(runs.reject(AuthHandler.principal(ctx), runId(ctx), comment)));
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

  /**
   * GET /v1/runs/{runId}/events: the run's timeline, oldest first; with Accept: text/event-stream,
   * a stream of it from its first event (or after Last-Event-ID / starting_after) that ends with the run.
   */
  public void events(Context ctx) {
    if (EventStreams.wanted(ctx)) {
      Principal caller = AuthHandler.principal(ctx);
      Run run = runs.get(caller, runId(ctx));
      String after = streamCursor(ctx);
      streams.open(ctx, caller, run.id(), runs.runStreamStart(caller, after, cursorParam(ctx)),
          ENDED.contains(run.status()));
      return;
    }
    QueryParams q = QueryParams.of(ctx, EVENT_PARAMS);
    int limit = q.integer("limit", 100, 1, 1000);
    List<Event> rows = runs.events(AuthHandler.principal(ctx), runId(ctx), q.id("starting_after", "evt"), limit + 1);
    Responses.json(ctx, 200, Page.of(rows, limit, EventView::of, EventView::id));
  }

  /**
   * GET /v1/events: the workspace's events, oldest first, for pollers. Unlike other lists,
   * next_cursor is always set (the last event seen, or the cursor given) so a poller can keep
   * asking from there.
   */
  public void workspaceEvents(Context ctx) {
    if (EventStreams.wanted(ctx)) {
      Principal caller = AuthHandler.principal(ctx);
      String after = streamCursor(ctx);
      streams.open(ctx, caller, null, runs.streamStart(caller, after, cursorParam(ctx)), false);
      return;
    }
    QueryParams q = QueryParams.of(ctx, EVENT_PARAMS);
    int limit = q.integer("limit", 100, 1, 1000);
    String after = q.id("starting_after", "evt");
    List<Event> rows = runs.workspaceEvents(AuthHandler.principal(ctx), after, limit + 1);
    Page<EventView> page = Page.of(rows, limit, EventView::of, EventView::id);
    String cursor = page.data().isEmpty() ? after : page.data().get(page.data().size() - 1).id();
    Responses.json(ctx, 200, new Page<>(page.data(), page.hasMore(), cursor));
  }

  /**
   * Where a stream resumes: after Last-Event-ID (what an EventSource sends when it reconnects),
   * else after starting_after, else null.
   */
  private static String streamCursor(Context ctx) {
    String after = QueryParams.of(ctx, STREAM_PARAMS).id("starting_after", "evt");
    String lastEventId = ctx.header("Last-Event-ID");
    if (lastEventId == null || lastEventId.isBlank()) {
      return after;
    }
    if (!Ids.looksLike("evt", lastEventId.strip())) {
      throw DomainException.invalid("Last-Event-ID", "the Last-Event-ID header must be an evt_ id");
    }
    return lastEventId.strip();
  }

  private static String cursorParam(Context ctx) {
    String lastEventId = ctx.header("Last-Event-ID");
    return lastEventId == null || lastEventId.isBlank() ? "starting_after" : "Last-Event-ID";
  }

  private String comment(Context ctx) {
    return decisionComment(bodies.optionalObject(ctx));
  }

  /** The fields of a start body. */
  public record StartBody(String project, ObjectNode inputs) {}

  /** Checks a start body: {project, inputs?}. Public, like the two below, for the fuzz tests. */
  public static StartBody startBody(ObjectNode body) {
    JsonFields fields = JsonFields.of(body, START_FIELDS);
    return new StartBody(fields.requiredSlug("project"), fields.optionalObject("inputs"));
  }

  /** The fields of an agent run's start body. */
  public record AgentStartBody(String project, JsonNode input, String model) {}

  /** Checks an agent run's start body: {project, input (text or an object), model?}. */
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
    return new AgentStartBody(project, input, model);
  }

  /** The comment of an approve or reject body: {comment?}, at most 1000 characters; null when absent. */
  public static String decisionComment(ObjectNode body) {
    return JsonFields.of(body, DECISION_FIELDS).optionalString("comment", null, 1000);
  }

  /** A cancel body takes no fields. */
  public static void checkCancelBody(ObjectNode body) {
    JsonFields.of(body, Set.of());
  }

  private static String runId(Context ctx) {
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
          "status must be a comma-separated list of: running, awaiting_approval, succeeded, failed, canceled, rejected"));
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
