package dev.runway.run;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.core.Ids;
import dev.runway.http.ApiException;
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

/** HTTP handlers for starting, reading and listing runs. */
public final class RunRoutes {
  private static final Set<String> START_FIELDS = Set.of("project", "inputs");
  private static final Set<String> LIST_PARAMS =
      Set.of("workflow", "project", "status", "created_after", "created_before", "limit", "starting_after");
  public static final String IDEMPOTENCY_KEY = "Idempotency-Key";

  private final RunService runs;
  private final RequestBodies bodies;

  public RunRoutes(RunService runs, RequestBodies bodies) {
    this.runs = runs;
    this.bodies = bodies;
  }

  public void start(Context ctx) {
    String workflowId = PathParams.slug(ctx, "id");
    String idempotencyKey = idempotencyKey(ctx);
    ObjectNode body = bodies.requiredObject(ctx);
    JsonFields fields = JsonFields.of(body, START_FIELDS);
    RunService.StartRequest request = new RunService.StartRequest(
        workflowId, fields.requiredSlug("project"), fields.optionalObject("inputs"), idempotencyKey);
    RunService.Started started = runs.start(AuthHandler.principal(ctx), request);
    if (started.replayed()) {
      ctx.header("Idempotent-Replayed", "true");
    }
    Responses.rawJson(ctx, started.status(), started.body());
  }

  public void get(Context ctx) {
    String runId = ctx.pathParam("runId");
    Principal caller = AuthHandler.principal(ctx);
    if (!Ids.looksLike("run", runId)) {
      throw ApiException.notFound("run_not_found", "no run '" + runId + "' in this workspace");
    }
    Responses.json(ctx, 200, RunView.of(runs.get(caller, runId)));
  }

  public void list(Context ctx) {
    QueryParams q = QueryParams.of(ctx, LIST_PARAMS);
    int limit = q.integer("limit", 20, 1, 100);
    RunFilter filter = new RunFilter(q.slug("workflow"), q.slug("project"), statuses(q.string("status")),
        q.time("created_after"), q.time("created_before"), q.id("starting_after", "run"), null);
    List<Run> rows = runs.list(AuthHandler.principal(ctx), filter, limit + 1);
    Responses.json(ctx, 200, Page.of(rows, limit, RunView::of, RunView::id));
  }

  private static List<String> statuses(String text) {
    if (text == null) {
      return null;
    }
    List<String> statuses = new ArrayList<>();
    for (String s : text.split(",", -1)) {
      RunStatus status = RunStatus.parse(s.trim()).orElseThrow(() -> ApiException.validation("status",
          "status must be a comma-separated list of: running, awaiting_approval, succeeded, failed, canceled, rejected"));
      statuses.add(status.wireName());
    }
    return statuses;
  }

  static String idempotencyKey(Context ctx) {
    String key = ctx.header(IDEMPOTENCY_KEY);
    if (key == null) {
      return null;
    }
    if (key.isEmpty() || key.length() > 255 || !key.chars().allMatch(c -> c >= 0x20 && c <= 0x7e)) {
      throw ApiException.validation(IDEMPOTENCY_KEY, "Idempotency-Key must be 1-255 printable ASCII characters");
    }
    return key;
  }
}
