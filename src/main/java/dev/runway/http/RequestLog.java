package dev.runway.http;

import io.javalin.http.Context;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One line per request: method, path, status, time, request id and key id (never the key). */
public final class RequestLog {
  private static final Logger LOG = LoggerFactory.getLogger("runway.request");

  private RequestLog() {}

  public static void log(Context ctx, Float millis) {
    LOG.info("{} {} {} {}ms request_id={} key_id={}", ctx.method(), ctx.path(), ctx.statusCode(),
        String.format("%.1f", millis), RequestIds.of(ctx), AuthHandler.keyIdForLog(ctx));
  }
}
