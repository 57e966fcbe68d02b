package dev.runway.crm;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.Sha256;
import dev.runway.db.Slice;
import dev.runway.http.AuthHandler;
import dev.runway.http.Page;
import dev.runway.http.PathParams;
import dev.runway.http.QueryParams;
import dev.runway.http.RequestBodies;
import dev.runway.http.Responses;
import dev.runway.run.RunRoutes;
import io.javalin.http.Context;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executor;

/** HTTP handlers for CRM records, their object types and their change feed. */
public final class CrmRoutes {
  private static final Set<String> LIST_PARAMS = Set.of("limit", "starting_after", "updated_after", "include_deleted");
  private static final Set<String> CHANGE_PARAMS = Set.of("after", "limit");

  private final CrmService crm;
  private final CrmSettings limits;
  private final RequestBodies syncBodies;
  private final Executor requestThreads;
  private final long maxPageBytes;

  /**
   * {@code limits} bound each record; {@code syncBodies} reads sync bodies within their own limit;
   * {@code requestThreads} as for RunRoutes; a page holds at most {@code maxPageBytes} of stored
   * properties (at least one record).
   */
  public CrmRoutes(CrmService crm, CrmSettings limits, RequestBodies syncBodies, Executor requestThreads,
      long maxPageBytes) {
    this.maxPageBytes = maxPageBytes;
    this.crm = crm;
    this.limits = limits;
    this.syncBodies = syncBodies;
    this.requestThreads = requestThreads;
  }

  /** POST /v1/crm/{object_type}/records/sync: up to 1,000 records, each with its own outcome. */
  public void sync(Context ctx) {
    String type = objectType(ctx);
    String idempotencyKey = RunRoutes.idempotencyKey(ctx);
    ObjectNode body = syncBodies.requiredObject(ctx, "records", CrmSettings.MAX_BATCH, SyncRequest.TOO_MANY);
    SyncRequest request = SyncRequest.parse(body, limits);
    String hash = idempotencyKey == null ? null
        : Sha256.hex("POST /v1/crm/" + type + "/records/sync\n" + Json.canonical(body));
    ctx.future(() -> crm.sync(AuthHandler.principal(ctx), type, request, limits, idempotencyKey, hash)
        .thenAcceptAsync(s -> Responses.maybeReplayed(ctx, 200, s.body(), s.replayed()), requestThreads));
  }

  public void get(Context ctx) {
    Responses.json(ctx, 200, RecordView.of(crm.get(AuthHandler.principal(ctx), objectType(ctx), externalId(ctx))));
  }

  public void delete(Context ctx) {
    String type = objectType(ctx);
    String externalId = externalId(ctx);
    Responses.json(ctx, 200, RecordView.of(crm.delete(AuthHandler.principal(ctx), type, externalId, limits)));
  }

  /** GET /v1/crm/{object_type}/records: by external id, live records unless include_deleted. */
  public void list(Context ctx) {
    String type = objectType(ctx);
    QueryParams q = QueryParams.of(ctx, LIST_PARAMS);
    int limit = q.integer("limit", 100, 1, 1000);
    String after = q.string("starting_after");
    if (after != null && SyncRequest.externalIdFault(after) != null) {
      throw DomainException.invalid("starting_after", "starting_after must be an external_id: "
          + SyncRequest.externalIdFault(after));
    }
    Slice<CrmRecord> rows = crm.list(AuthHandler.principal(ctx), type, after, q.time("updated_after"),
        q.bool("include_deleted", false), limit, maxPageBytes);
    Responses.json(ctx, 200, Page.of(rows, RecordView::of, RecordView::externalId));
  }

  /**
   * GET /v1/crm/{object_type}/changes: the feed, oldest first. As for GET /v1/events, next_cursor
   * is always set (the last change's cursor, or the one given) so a reader keeps asking from there.
   */
  public void changes(Context ctx) {
    String type = objectType(ctx);
    QueryParams q = QueryParams.of(ctx, CHANGE_PARAMS);
    int limit = q.integer("limit", 100, 1, 1000);
    long after = cursor(q.string("after"));
    Slice<CrmChange> rows = crm.changes(AuthHandler.principal(ctx), type, after, limit, maxPageBytes);
    Page<ChangeView> page = Page.of(rows, ChangeView::of, ChangeView::cursor);
    String next = page.data().isEmpty() ? Long.toString(after) : page.data().get(page.data().size() - 1).cursor();
    Responses.json(ctx, 200, new Page<>(page.data(), page.hasMore(), next));
  }

  /** GET /v1/crm/objects: the workspace's object types with their counts. */
  public void objects(Context ctx) {
    QueryParams.of(ctx, Set.of());
    Principal caller = AuthHandler.principal(ctx);
    List<ObjectTypeView> types = crm.objectTypes(caller).stream().map(ObjectTypeView::of).toList();
    Responses.json(ctx, 200, new Page<>(types, false, null));
  }

  private static String objectType(Context ctx) {
    return PathParams.slug(ctx, "object_type");
  }

  private static String externalId(Context ctx) {
    String id = ctx.pathParam("external_id");
    String fault = SyncRequest.externalIdFault(id);
    if (fault != null) {
      throw DomainException.invalid("external_id", "the external_id in the path " + fault
          + " (percent-encode it: / as %2F, a space as %20)");
    }
    return id;
  }

  private static long cursor(String text) {
    if (text == null) {
      return 0;
    }
    try {
      long seq = Long.parseLong(text);
      if (seq >= 0) {
        return seq;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw DomainException.invalid("after", "after must be a cursor from a change or next_cursor");
  }
}
