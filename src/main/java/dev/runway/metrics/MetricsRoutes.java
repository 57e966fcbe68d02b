package dev.runway.metrics;

import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import io.javalin.http.Context;
import io.javalin.router.Endpoint;
import java.util.Set;

/** GET /metrics, and the timing of every request by its route's template. */
public final class MetricsRoutes {
  /** A client may send any method name: others are counted together, so none makes a series of its own. */
  private static final Set<String> METHODS = Set.of("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS");
  private final Metrics metrics;
  private final MetricsAccess access;

  public MetricsRoutes(Metrics metrics, MetricsSettings settings) {
    this.metrics = metrics;
    this.access = new MetricsAccess(settings.token());
  }

  /** 200 with every meter; 403 to a client that is neither local nor has the token. */
  public void scrape(Context ctx) {
    boolean forwarded = ctx.header("Forwarded") != null || ctx.header("X-Forwarded-For") != null;
    if (!access.allows(ctx.req().getRemoteAddr(), forwarded, ctx.header("Authorization"))) {
      throw new DomainException(Kind.FORBIDDEN, "metrics_forbidden",
          "metrics are served to this machine only, or with Authorization: Bearer <metrics.token>");
    }
    String type = Metrics.contentType(ctx.header("Accept"));
    ctx.status(200).contentType(type).result(metrics.scrape(type));
  }

  /**
   * As each request ends (a request logger: it sees the status and time of asynchronous answers
   * too). The route is the matched endpoint's template, never the raw path, so ids make no series.
   */
  public void record(Context ctx, Float millis) {
    Endpoint endpoint = ctx.endpoints().matchedHttpEndpoint();
    String method = ctx.method().name();
    metrics.request(endpoint == null ? Metrics.UNMATCHED : endpoint.path, METHODS.contains(method) ? method : "other",
        ctx.statusCode(), (long) (millis * 1_000_000L));
  }
}
