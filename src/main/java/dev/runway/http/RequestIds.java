package dev.runway.http;

import dev.runway.core.Ids;
import io.javalin.http.Context;

/** Gives every request a {@code req_…} id, sent back in the Request-Id header and named in logs and errors. */
public final class RequestIds {
  public static final String HEADER = "Request-Id";
  private static final String ATTRIBUTE = "runway.request_id";

  private RequestIds() {}

  public static void assign(Context ctx) {
    String id = Ids.newId("req");
    ctx.attribute(ATTRIBUTE, id);
    ctx.header(HEADER, id);
  }

  public static String of(Context ctx) {
    String id = ctx.attribute(ATTRIBUTE);
    if (id == null) {
      assign(ctx);
      id = ctx.attribute(ATTRIBUTE);
    }
    return id;
  }
}
