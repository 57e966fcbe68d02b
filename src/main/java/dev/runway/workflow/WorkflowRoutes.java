package dev.runway.workflow;

import dev.runway.auth.Principal;
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
}
