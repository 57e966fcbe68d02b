package dev.runway.http;

import dev.runway.auth.ApiKeyService;
import dev.runway.auth.Principal;
import dev.runway.auth.Scope;
import io.javalin.http.Context;
import io.javalin.security.RouteRole;
import java.util.Map;

/** The before-handler of every matched /v1 route: finds the caller from the bearer key and checks the route's scope. */
public final class AuthHandler {
  private static final String ATTRIBUTE = "runway.principal";
  /** The caller, as found from the headers before the body was received (see BufferedBodies). */
  static final String FOUND_BEFORE_BODY = "runway.principal_before_body";
  private final ApiKeyService keys;
  private final RateLimits limits;
  private final InFlightLimit inFlight;

  public AuthHandler(ApiKeyService keys, RateLimits limits, InFlightLimit inFlight) {
    this.keys = keys;
    this.limits = limits;
    this.inFlight = inFlight;
  }

  public void handle(Context ctx) {
    if (ctx.routeRoles().isEmpty()) {
      return; // an open route: /healthz, /readyz
    }
    Principal principal = ctx.attribute(FOUND_BEFORE_BODY);
    try {
      if (principal == null) {
        principal = authenticate(ctx.header("Authorization"));
      }
    } catch (ApiException e) {
      if ("invalid_api_key".equals(e.code())) {
        limits.authenticationFailed(ctx, e);
      }
      throw e;
    }
    ctx.attribute(ATTRIBUTE, principal);
    limits.takeForKey(ctx, principal.keyId());
    inFlight.enterForKey(ctx, principal.keyId());
    for (RouteRole role : ctx.routeRoles()) {
      Scope needed = (Scope) role;
      if (!principal.scopes().contains(needed)) {
        throw new ApiException(403, "insufficient_scope",
            "this API key lacks the scope " + needed.wireName() + " that this request needs");
      }
    }
  }

  private Principal authenticate(String header) {
    ApiKeyService.Verdict verdict = keys.authenticate(bearerToken(header));
    if (verdict.principal() != null) {
      return verdict.principal();
    }
    throw invalid(switch (verdict.refusal()) {
      case MALFORMED -> "the API key is malformed";
      case UNKNOWN -> "the API key is not valid";
      case REVOKED -> "the API key has been revoked";
      case EXPIRED -> "the API key has expired";
    });
  }

  /**
   * The key in an Authorization header: "Bearer" (any case), spaces, the key. A missing header is
   * 401 missing_api_key; any other shape 401 invalid_api_key. Never fails otherwise.
   */
  public static String bearerToken(String header) {
    if (header == null || header.isBlank()) {
      throw new ApiException(401, "missing_api_key",
          "send your API key in the header Authorization: Bearer <key>", null,
          Map.of("WWW-Authenticate", "Bearer"));
    }
    String trimmed = header.trim();
    int space = trimmed.indexOf(' ');
    String key = space < 0 ? "" : trimmed.substring(space).trim();
    if (key.isEmpty() || !trimmed.substring(0, space).equalsIgnoreCase("Bearer")) {
      throw invalid("the Authorization header must be 'Bearer <key>'");
    }
    return key;
  }

  private static ApiException invalid(String detail) {
    return new ApiException(401, "invalid_api_key", detail, null,
        Map.of("WWW-Authenticate", "Bearer error=\"invalid_token\""));
  }

  /**
   * The caller a request's Authorization header names, or null (no header, malformed, unknown,
   * revoked, expired key): for deciding, from the headers alone, whether its body is worth receiving.
   */
  public static java.util.function.Function<String, Principal> callerOf(ApiKeyService keys) {
    return header -> {
      if (header == null) {
        return null; // no key: the common case off /v1 (console forms, inbound webhooks), with no exception made
      }
      try {
        return keys.authenticate(bearerToken(header)).principal();
      } catch (ApiException refused) {
        return null;
      } catch (RuntimeException databaseDown) {
        return null; // the request goes on, unread, and gets its 503 from the authentication proper
      }
    };
  }

  /** The caller of a route that required a key. */
  public static Principal principal(Context ctx) {
    Principal principal = ctx.attribute(ATTRIBUTE);
    if (principal == null) {
      throw new IllegalStateException("no principal: route declared without a scope");
    }
    return principal;
  }

  /** The key id for log lines, or "-" when the request had none. */
  static String keyIdForLog(Context ctx) {
    Principal principal = ctx.attribute(ATTRIBUTE);
    return principal == null ? "-" : principal.keyId();
  }
}
