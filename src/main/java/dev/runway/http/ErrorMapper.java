package dev.runway.http;

import dev.runway.core.DomainException;
import dev.runway.db.OverloadedException;
import dev.runway.db.SqlErrors;
import io.javalin.config.RoutesConfig;
import io.javalin.http.Context;
import io.javalin.http.HttpResponseException;
import io.javalin.http.MethodNotAllowedResponse;
import io.javalin.router.EndpointNotFound;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The one place that turns exceptions into problem+json responses. */
public final class ErrorMapper {
  private static final Logger LOG = LoggerFactory.getLogger(ErrorMapper.class);
  private static final Pattern METHOD = Pattern.compile("\\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\\b");

  private ErrorMapper() {}

  public static void register(RoutesConfig routes) {
    routes.exception(DomainException.class, ErrorMapper::refused);
    routes.exception(EndpointNotFound.class, (e, ctx) ->
        Responses.problem(ctx, 404, "not_found", "no such route: " + ctx.method() + " " + ctx.path(), null));
    routes.exception(MethodNotAllowedResponse.class, ErrorMapper::methodNotAllowed);
    routes.exception(HttpResponseException.class, ErrorMapper::javalin);
    routes.exception(OverloadedException.class, (e, ctx) -> {
      ctx.header("Retry-After", "1");
      Responses.problem(ctx, 503, "unavailable", "the server is busy (" + e.getMessage() + "); retry shortly", null);
    });
    routes.exception(Exception.class, ErrorMapper::unexpected);
  }

  private static void refused(DomainException e, Context ctx) {
    if (e.retryAfterSeconds() > 0) {
      ctx.header("Retry-After", Long.toString(e.retryAfterSeconds()));
    }
    if (e instanceof ApiException a) {
      a.headers().forEach(ctx::header);
    }
    Responses.problem(ctx, status(e.kind()), e.code(), e.getMessage(), e.param(), e.extensions());
  }

  /** The status each kind of refusal answers with. */
  public static int status(DomainException.Kind kind) {
    return switch (kind) {
      case INVALID -> 400;
      case UNAUTHENTICATED -> 401;
      case FORBIDDEN -> 403;
      case NOT_FOUND -> 404;
      case CONFLICT -> 409;
      case GONE -> 410;
      case TOO_LARGE -> 413;
      case UNSUPPORTED_FORMAT -> 415;
      case MISMATCH -> 422;
      case TOO_MANY -> 429;
      case UNAVAILABLE -> 503;
    };
  }

  private static void methodNotAllowed(MethodNotAllowedResponse e, Context ctx) {
    StringBuilder allow = new StringBuilder();
    for (String value : e.getDetails().values()) {
      Matcher m = METHOD.matcher(value);
      while (m.find()) {
        allow.append(allow.length() == 0 ? "" : ", ").append(m.group(1));
      }
    }
    ctx.header("Allow", allow.toString());
    Responses.problem(ctx, 405, "method_not_allowed",
        ctx.method() + " is not allowed on " + ctx.path() + "; allowed: " + allow, null);
  }

  private static void javalin(HttpResponseException e, Context ctx) {
    Responses.problem(ctx, e.getStatus(), codeFor(e.getStatus()), e.getMessage(), null);
  }

  private static void unexpected(Exception e, Context ctx) {
    if (SqlErrors.isUnavailable(e)) {
      LOG.warn("request {} failed: database unavailable: {}", RequestIds.of(ctx), e.getMessage());
      ctx.header("Retry-After", "5");
      Responses.problem(ctx, 503, "unavailable", "the database is unavailable; retry shortly", null);
      return;
    }
    LOG.error("request {} failed", RequestIds.of(ctx), e);
    Responses.problem(ctx, 500, "internal_error",
        "an internal error occurred; quote request id " + RequestIds.of(ctx) + " when reporting it", null);
  }

  /** Problem bodies for the few errors Jetty answers itself (malformed HTTP, oversized headers). */
  static Map<String, Object> bareProblem(int status, String detail, String requestId) {
    return Problem.body(status, codeFor(status), detail == null ? Problem.title(status) : detail, null, requestId,
        Map.of());
  }

  /** The code of an error raised by Javalin or Jetty rather than by Runway, which names its own. */
  private static String codeFor(int status) {
    return switch (status) {
      case 404 -> "not_found";
      case 405 -> "method_not_allowed";
      case 408 -> "request_timeout";
      case 413 -> "body_too_large";
      case 415 -> "unsupported_media_type";
      case 429 -> "rate_limited";
      case 503 -> "unavailable";
      default -> status >= 500 ? "internal_error" : "invalid_request";
    };
  }
}
