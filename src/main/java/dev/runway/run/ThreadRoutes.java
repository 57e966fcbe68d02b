package dev.runway.run;

import dev.runway.core.DomainException;
import dev.runway.core.Ids;
import dev.runway.db.Slice;
import dev.runway.http.AuthHandler;
import dev.runway.http.Page;
import dev.runway.http.QueryParams;
import dev.runway.http.Responses;
import io.javalin.http.Context;
import java.util.Set;

/** HTTP handlers for threads of agent runs. */
public final class ThreadRoutes {
  private static final Set<String> MESSAGE_PARAMS = Set.of("limit", "starting_after");
  private static final Set<String> LIST_PARAMS = Set.of("limit", "starting_after", "project");
  private final ThreadService threads;
  /** The most stored JSON one page of messages holds (http.max_page_bytes). */
  private final long maxPageBytes;

  public ThreadRoutes(ThreadService threads, long maxPageBytes) {
    this.threads = threads;
    this.maxPageBytes = maxPageBytes;
  }

  /** GET /v1/threads: the threads the key may see, newest first; the cursor is a thread id. */
  public void list(Context ctx) {
    QueryParams q = QueryParams.of(ctx, LIST_PARAMS);
    int limit = q.integer("limit", 20, 1, 100);
    java.util.List<ThreadView> rows = threads.list(AuthHandler.principal(ctx), q.slug("project"),
        q.id("starting_after", "thr"), limit);
    Responses.json(ctx, 200, Page.of(rows, limit, t -> t, ThreadView::id));
  }

  /** GET /v1/threads/{threadId}. */
  public void get(Context ctx) {
    Responses.json(ctx, 200, ThreadView.of(threads.get(AuthHandler.principal(ctx), threadId(ctx))));
  }

  /**
   * GET /v1/threads/{threadId}/messages: the messages of the thread's runs, oldest first, each naming
   * its run; the cursor is {@code <run_id>:<index>} (a page's next_cursor).
   */
  public void messages(Context ctx) {
    QueryParams q = QueryParams.of(ctx, MESSAGE_PARAMS);
    int limit = q.integer("limit", 100, 1, 1000);
    String cursor = q.string("starting_after");
    String afterRun = "";
    int afterIdx = -1;
    if (cursor != null) {
      int colon = cursor.indexOf(':');
      String run = colon < 0 ? "" : cursor.substring(0, colon);
      String index = colon < 0 ? "" : cursor.substring(colon + 1);
      if (!Ids.looksLike("run", run) || !index.matches("[0-9]{1,9}")) {
        throw DomainException.invalid("starting_after", "starting_after must be a next_cursor of this list: "
            + "<run_id>:<index>");
      }
      afterRun = run;
      afterIdx = Integer.parseInt(index);
    }
    Slice<ThreadMessage> rows = threads.messages(AuthHandler.principal(ctx), threadId(ctx), afterRun, afterIdx, limit,
        maxPageBytes);
    Responses.json(ctx, 200, Page.of(rows, ThreadView.Message::of, ThreadView.Message::cursor));
  }

  /** The thread id in the path; one that cannot be a thread id is 404, as an unknown one is. */
  private static String threadId(Context ctx) {
    String id = ctx.pathParam("threadId");
    if (!Ids.looksLike("thr", id)) {
      throw DomainException.notFound("thread_not_found", "no thread '" + id + "' in workspace '"
          + AuthHandler.principal(ctx).workspaceId() + "'");
    }
    return id;
  }
}
