package dev.runway.agent;

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

/** HTTP handlers for agent definitions. */
public final class AgentRoutes {
  private static final Set<String> LIST_PARAMS = Set.of("limit", "starting_after", "include_archived");
  private final AgentService agents;
  private final RequestBodies bodies;
  /** The most stored JSON one page of agents holds (http.max_page_bytes). */
  private final long maxPageBytes;

  public AgentRoutes(AgentService agents, RequestBodies bodies, long maxPageBytes) {
    this.agents = agents;
    this.bodies = bodies;
    this.maxPageBytes = maxPageBytes;
  }

  public void put(Context ctx) {
    String id = PathParams.slug(ctx, "id");
    Principal caller = AuthHandler.principal(ctx);
    caller.requireWholeWorkspace("agents");
    AgentDefinition definition = AgentDefinition.parse(id, bodies.requiredObject(ctx));
    AgentService.Saved saved = agents.put(caller, id, definition);
    Responses.json(ctx, saved.created() ? 201 : 200, AgentView.of(saved.agent()));
  }

  public void get(Context ctx) {
    String id = PathParams.slug(ctx, "id");
    Responses.json(ctx, 200, AgentView.of(agents.get(AuthHandler.principal(ctx).workspaceId(), id)));
  }

  public void list(Context ctx) {
    QueryParams q = QueryParams.of(ctx, LIST_PARAMS);
    int limit = q.integer("limit", 20, 1, 100);
    Slice<Agent> rows = agents.page(AuthHandler.principal(ctx).workspaceId(), q.slug("starting_after"),
        q.bool("include_archived", false), limit, maxPageBytes);
    Responses.json(ctx, 200, Page.of(rows, AgentView::of, AgentView::id));
  }

  public void archive(Context ctx) {
    String id = PathParams.slug(ctx, "id");
    Principal caller = AuthHandler.principal(ctx);
    caller.requireWholeWorkspace("agents");
    Responses.json(ctx, 200, AgentView.of(agents.archive(caller.workspaceId(), id)));
  }
}
