package dev.runway.webhook;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.Ids;
import dev.runway.core.JsonFields;
import dev.runway.http.AuthHandler;
import dev.runway.http.Page;
import dev.runway.http.QueryParams;
import dev.runway.http.RequestBodies;
import dev.runway.http.Responses;
import dev.runway.webhook.WebhookViews.DeliveryView;
import dev.runway.webhook.WebhookViews.EndpointView;
import io.javalin.http.Context;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** HTTP handlers for webhook endpoints and their deliveries (scope admin, whole-workspace keys). */
public final class WebhookRoutes {
  private static final Set<String> CREATE_FIELDS = Set.of("url", "event_types", "description");
  private static final Set<String> UPDATE_FIELDS = Set.of("url", "event_types", "description", "enabled");
  private static final Set<String> STATUSES = Set.of(WebhookDelivery.PENDING, WebhookDelivery.SUCCEEDED,
      WebhookDelivery.FAILED);
  private static final int MAX_DESCRIPTION = 1000;

  private final WebhookService webhooks;
  private final RequestBodies bodies;

  public WebhookRoutes(WebhookService webhooks, RequestBodies bodies) {
    this.webhooks = webhooks;
    this.bodies = bodies;
  }

  public void create(Context ctx) {
    Principal caller = caller(ctx);
    ObjectNode body = bodies.requiredObject(ctx);
    JsonFields fields = JsonFields.of(body, CREATE_FIELDS);
    String url = requiredUrl(body);
    List<String> types = EventTypes.parse(body.get("event_types"), "event_types");
    String description = fields.optionalString("description", null, MAX_DESCRIPTION);
    Responses.json(ctx, 201, webhooks.create(caller, url, types, description));
  }

  public void get(Context ctx) {
    Responses.json(ctx, 200, EndpointView.of(webhooks.get(caller(ctx), endpointId(ctx))));
  }

  public void list(Context ctx) {
    QueryParams q = QueryParams.of(ctx, Set.of("limit", "starting_after"));
    int limit = q.integer("limit", 20, 1, 100);
    String after = q.id("starting_after", "we");
    List<WebhookEndpoint> rows = webhooks.list(caller(ctx), after, limit + 1);
    Responses.json(ctx, 200, Page.of(rows, limit, EndpointView::of, EndpointView::id));
  }

  public void update(Context ctx) {
    Principal caller = caller(ctx);
    String id = endpointId(ctx);
    ObjectNode body = bodies.requiredObject(ctx);
    JsonFields fields = JsonFields.of(body, UPDATE_FIELDS);
    String url = present(body, "url") ? requiredUrl(body) : null;
    List<String> types = present(body, "event_types") ? EventTypes.parse(body.get("event_types"), "event_types") : null;
    String description = fields.optionalString("description", null, MAX_DESCRIPTION);
    Boolean enabled = present(body, "enabled") ? fields.optionalBoolean("enabled", true) : null;
    WebhookEndpoint updated = webhooks.update(caller, id, new WebhookService.Changes(url, types, description, enabled));
    Responses.json(ctx, 200, EndpointView.of(updated));
  }

  public void delete(Context ctx) {
    String id = endpointId(ctx);
    webhooks.delete(caller(ctx), id);
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("id", id);
    body.put("deleted", true);
    Responses.json(ctx, 200, body);
  }

  public void rotateSecret(Context ctx) {
    bodies.optionalObject(ctx);
    Responses.json(ctx, 200, webhooks.rotateSecret(caller(ctx), endpointId(ctx)));
  }

  public void test(Context ctx) {
    bodies.optionalObject(ctx);
    Responses.json(ctx, 202, DeliveryView.of(webhooks.test(caller(ctx), endpointId(ctx))));
  }

  public void deliveries(Context ctx) {
    QueryParams q = QueryParams.of(ctx, Set.of("limit", "starting_after", "status", "event_type"));
    int limit = q.integer("limit", 20, 1, 100);
    String after = q.id("starting_after", "del");
    String status = q.string("status");
    if (status != null && !STATUSES.contains(status)) {
      throw DomainException.invalid("status", "status must be one of pending, succeeded, failed");
    }
    String eventType = q.string("event_type");
    if (eventType != null && eventType.length() > 64) {
      throw DomainException.invalid("event_type", "event_type must be at most 64 characters");
    }
    List<WebhookDelivery> rows = webhooks.deliveries(caller(ctx), endpointId(ctx), after, status, eventType, limit + 1);
    Responses.json(ctx, 200, Page.of(rows, limit, DeliveryView::of, DeliveryView::id));
  }

  public void delivery(Context ctx) {
    Responses.json(ctx, 200, webhooks.delivery(caller(ctx), deliveryId(ctx)));
  }

  public void redeliver(Context ctx) {
    bodies.optionalObject(ctx);
    Responses.json(ctx, 202, webhooks.redeliver(caller(ctx), deliveryId(ctx)));
  }

  /** POST …/recover {"since": time}: every failed delivery made since then is sent again. */
  public void recover(Context ctx) {
    Principal caller = caller(ctx);
    String id = endpointId(ctx);
    ObjectNode body = bodies.requiredObject(ctx);
    JsonFields.of(body, Set.of("since"));
    if (!body.hasNonNull("since") || !body.get("since").isTextual()) {
      throw DomainException.invalid("since", "since is required: an ISO 8601 time, e.g. 2026-11-22T02:46:35.285Z");
    }
    Instant since = QueryParams.parseTime(body.get("since").textValue(), "since");
    Map<String, Object> answer = new LinkedHashMap<>();
    answer.put("endpoint_id", id);
    answer.put("recovered", webhooks.recover(caller, id, since));
    Responses.json(ctx, 202, answer);
  }

  private static Principal caller(Context ctx) {
    Principal caller = AuthHandler.principal(ctx);
    caller.requireWholeWorkspace("webhook endpoints");
    return caller;
  }

  private static boolean present(ObjectNode body, String name) {
    return body.has(name) && !body.get(name).isNull();
  }

  private static String requiredUrl(ObjectNode body) {
    if (!body.hasNonNull("url") || !body.get("url").isTextual()) {
      throw DomainException.invalid("url", "url is required: an absolute http or https URL");
    }
    return body.get("url").textValue();
  }

  /** A path id that is no endpoint id names no endpoint: 404, as an unknown one. */
  private static String endpointId(Context ctx) {
    String id = ctx.pathParam("id");
    if (!Ids.looksLike("we", id)) {
      throw WebhookService.endpointNotFound(AuthHandler.principal(ctx).workspaceId(), id);
    }
    return id;
  }

  private static String deliveryId(Context ctx) {
    String id = ctx.pathParam("id");
    if (!Ids.looksLike("del", id)) {
      throw WebhookService.deliveryNotFound(AuthHandler.principal(ctx).workspaceId(), id);
    }
    return id;
  }
}
