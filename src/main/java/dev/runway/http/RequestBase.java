package dev.runway.http;

import io.javalin.http.Context;

/** The server's address as the caller of a request reaches it, for URLs the answer shows (a hook's). */
public final class RequestBase {
  private RequestBase() {}

  /** {@code scheme://host[:port]} from the request (its Host header), without a trailing slash. */
  public static String of(Context ctx) {
    String host = ctx.host();
    return ctx.scheme() + "://" + (host == null || host.isBlank() ? "127.0.0.1" : host);
  }
}
