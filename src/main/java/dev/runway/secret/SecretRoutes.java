package dev.runway.secret;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.JsonFields;
import dev.runway.http.AuthHandler;
import dev.runway.http.Page;
import dev.runway.http.QueryParams;
import dev.runway.http.RequestBodies;
import dev.runway.http.Responses;
import io.javalin.http.Context;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** HTTP handlers for workspace secrets: values go in and never come out. */
public final class SecretRoutes {
  private static final Set<String> FIELDS = Set.of("value", "allowed_hosts");
  private static final Set<String> LIST_PARAMS = Set.of("limit", "starting_after");
  /** Values are sent in headers and URLs: printable characters only, and not too many. */
  static final int MAX_VALUE_LENGTH = 4096;

  private final SecretService secrets;
  private final RequestBodies bodies;

  public SecretRoutes(SecretService secrets, RequestBodies bodies) {
    this.secrets = secrets;
    this.bodies = bodies;
  }

  /** A secret as the API shows it: its name, the hosts it may be sent to ([] for any) and times, never its value. */
  public record SecretView(String name, List<String> allowedHosts, Instant createdAt, Instant updatedAt) {
    static SecretView of(Secret s) {
      return new SecretView(s.name(), s.hosts().hosts(), s.createdAt(), s.updatedAt());
    }
  }

  public void put(Context ctx) {
    String name = name(ctx);
    Principal caller = AuthHandler.principal(ctx);
    caller.requireWholeWorkspace("secrets");
    ObjectNode body = bodies.requiredObject(ctx);
    // Without allowed_hosts a replace keeps the stored list; with only allowed_hosts it keeps the value.
    String value = value(body, body.has("allowed_hosts"));
    AllowedHosts hosts = body.has("allowed_hosts") ? AllowedHosts.parse(body.get("allowed_hosts"), "allowed_hosts")
        : null;
    SecretService.Saved saved = secrets.put(caller.workspaceId(), name, value, hosts);
    Responses.json(ctx, saved.created() ? 201 : 200, SecretView.of(saved.secret()));
  }

  public void get(Context ctx) {
    Responses.json(ctx, 200, SecretView.of(secrets.get(AuthHandler.principal(ctx).workspaceId(), name(ctx))));
  }

  public void list(Context ctx) {
    QueryParams q = QueryParams.of(ctx, LIST_PARAMS);
    int limit = q.integer("limit", 20, 1, 100);
    String after = q.string("starting_after");
    if (after != null && !SecretReferences.NAME.matcher(after).matches()) {
      throw DomainException.invalid("starting_after", "starting_after must be a secret name: "
          + SecretReferences.NAME_RULE);
    }
    List<Secret> rows = secrets.page(AuthHandler.principal(ctx).workspaceId(), after, limit + 1);
    Responses.json(ctx, 200, Page.of(rows, limit, SecretView::of, SecretView::name));
  }

  public void delete(Context ctx) {
    String name = name(ctx);
    Principal caller = AuthHandler.principal(ctx);
    caller.requireWholeWorkspace("secrets");
    Secret deleted = secrets.delete(caller.workspaceId(), name);
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("name", deleted.name());
    body.put("deleted", true);
    Responses.json(ctx, 200, body);
  }

  private static String name(Context ctx) {
    String name = ctx.pathParam("name");
    if (!SecretReferences.NAME.matcher(name).matches()) {
      throw DomainException.invalid("name", "the secret name in the path must be " + SecretReferences.NAME_RULE);
    }
    return name;
  }

  /** The value of a put body: {value, allowed_hosts}, 1-4096 printable characters. Public for the fuzz tests. */
  public static String value(ObjectNode body) {
    return value(body, false);
  }

  /** The value, or null when it may be left out (a body that sets only allowed_hosts) and is. */
  private static String value(ObjectNode body, boolean optional) {
    String value = JsonFields.of(body, FIELDS).optionalString("value", null, MAX_VALUE_LENGTH);
    if (value == null && optional) {
      return null;
    }
    if (value == null || value.isEmpty()) {
      throw DomainException.invalid("value", "value is required: the secret, 1-" + MAX_VALUE_LENGTH + " characters");
    }
    if (!value.chars().allMatch(c -> c >= 0x20 && c != 0x7f)) {
      throw DomainException.invalid("value", "value must be printable characters (no line breaks or other control "
          + "characters): it is sent in headers and URLs");
    }
    return value;
  }
}
