package dev.runway.workflow;

import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.JsonFields;
import dev.runway.db.Slice;
import dev.runway.http.AuthHandler;
import dev.runway.http.Page;
import dev.runway.http.PathParams;
import dev.runway.http.QueryParams;
import dev.runway.http.RequestBodies;
import dev.runway.http.Responses;
import io.javalin.http.Context;
import java.util.Set;

/** HTTP handlers for workflow definitions. */
public final class WorkflowRoutes {
  private static final Set<String> ROTATE_FIELDS = Set.of("expire_previous_in_s");
  private static final Set<String> LIST_PARAMS = Set.of("limit", "starting_after", "include_archived");
  private final WorkflowService workflows;
  private final RequestBodies bodies;
  /** The most stored JSON one page of workflows holds (http.max_page_bytes). */
  private final long maxPageBytes;

  public WorkflowRoutes(WorkflowService workflows, RequestBodies bodies, long maxPageBytes) {
    this.workflows = workflows;
    this.bodies = bodies;
    this.maxPageBytes = maxPageBytes;
  }

  public void put(Context ctx) {
    String id = PathParams.slug(ctx, "id");
    Principal caller = AuthHandler.principal(ctx);
    caller.requireWholeWorkspace("workflows");
    WorkflowDefinition definition = WorkflowDefinition.parse(id, bodies.requiredObject(ctx));
    WorkflowService.Saved saved = workflows.put(caller, id, definition);
    Responses.json(ctx, saved.created() ? 201 : 200, workflows.view(saved.workflow()));
  }

  public void get(Context ctx) {
    String id = PathParams.slug(ctx, "id");
    Responses.json(ctx, 200, workflows.view(workflows.get(AuthHandler.principal(ctx).workspaceId(), id)));
  }

  public void list(Context ctx) {
    QueryParams q = QueryParams.of(ctx, LIST_PARAMS);
    int limit = q.integer("limit", 20, 1, 100);
    Principal caller = AuthHandler.principal(ctx);
    Slice<Workflow> rows = workflows.page(caller.workspaceId(), q.slug("starting_after"),
        q.bool("include_archived", false), limit, maxPageBytes);
    Responses.json(ctx, 200, Page.of(rows, WorkflowView::of, WorkflowView::id));
  }

  public void archive(Context ctx) {
    String id = PathParams.slug(ctx, "id");
    Principal caller = AuthHandler.principal(ctx);
    caller.requireWholeWorkspace("workflows");
    Responses.json(ctx, 200, workflows.view(workflows.archive(caller.workspaceId(), id)));
  }

  /**
   * POST /v1/workflows/{id}/triggers/{index}/rotate_hook {"expire_previous_in_s"?}: a new URL for a
   * webhook trigger; the old one works that many seconds more (default 0).
   */
  public void rotateHook(Context ctx) {
    String id = PathParams.slug(ctx, "id");
    int index = triggerIndex(ctx);
    Principal caller = AuthHandler.principal(ctx);
    caller.requireWholeWorkspace("workflows");
    long grace = JsonFields.of(bodies.optionalObject(ctx), ROTATE_FIELDS)
        .optionalLong("expire_previous_in_s", 0, 0, WorkflowService.MAX_ROTATION_GRACE_SECONDS);
    Responses.json(ctx, 200, workflows.view(workflows.rotateHook(caller.workspaceId(), id, index, grace)));
  }

  private static int triggerIndex(Context ctx) {
    String index = ctx.pathParam("index");
    if (!index.matches("[0-9]{1,2}") || Integer.parseInt(index) >= Trigger.MAX_TRIGGERS) {
      throw DomainException.invalid("index", "the trigger index must be a whole number from 0 to "
          + (Trigger.MAX_TRIGGERS - 1) + " (the trigger's place in the workflow's triggers)");
    }
    return Integer.parseInt(index);
  }
}
