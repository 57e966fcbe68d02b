package dev.runway.events;

import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.Ids;
import dev.runway.http.AuthHandler;
import dev.runway.http.Page;
import dev.runway.http.PathParams;
import dev.runway.http.QueryParams;
import dev.runway.http.Responses;
import dev.runway.run.Event;
import dev.runway.run.Run;
import dev.runway.run.RunRoutes;
import dev.runway.run.RunService;
import dev.runway.run.RunStatus;
import io.javalin.http.Context;
import java.util.List;
import java.util.Set;

/** HTTP handlers for reading events, as pages or as a live stream (text/event-stream). */
public final class EventRoutes {
  private static final Set<String> EVENT_PARAMS = Set.of("limit", "starting_after");
  private static final Set<String> STREAM_PARAMS = Set.of("starting_after");

  private final RunService runs;
  private final EventReads events;
  private final EventStreams streams;

  public EventRoutes(RunService runs, EventReads events, EventStreams streams) {
    this.runs = runs;
    this.events = events;
    this.streams = streams;
  }

  /**
   * GET /v1/runs/{runId}/events: the run's timeline, oldest first; with Accept: text/event-stream,
   * a stream of it from its first event (or after Last-Event-ID / starting_after) that ends with the run.
   */
  public void events(Context ctx) {
    if (EventStreams.wanted(ctx)) {
      Principal caller = AuthHandler.principal(ctx);
      Run run = runs.get(caller, RunRoutes.runId(ctx));
      String after = streamCursor(ctx);
      streams.open(ctx, caller, run.id(), events.runStreamStart(caller, after, cursorParam(ctx)),
          RunStatus.isEnded(run.status()));
      return;
    }
    QueryParams q = QueryParams.of(ctx, EVENT_PARAMS);
    int limit = q.integer("limit", 100, 1, 1000);
    String runId = RunRoutes.runId(ctx);
    List<Event> rows = events.events(AuthHandler.principal(ctx), runId, q.id("starting_after", "evt"), limit + 1);
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
      streams.open(ctx, caller, null, events.streamStart(caller, after, cursorParam(ctx)), false);
      return;
    }
    QueryParams q = QueryParams.of(ctx, EVENT_PARAMS);
    int limit = q.integer("limit", 100, 1, 1000);
    String after = q.id("starting_after", "evt");
    List<Event> rows = events.workspaceEvents(AuthHandler.principal(ctx), after, limit + 1);
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

}
