package dev.runway.http;

import dev.runway.core.DomainException;
import dev.runway.core.Slugs;
import io.javalin.http.Context;

/** Checked access to path parameters. */
public final class PathParams {
  private PathParams() {}

  /** A slug path parameter (a workflow or agent id), or 400 naming it. */
  public static String slug(Context ctx, String name) {
    String value = ctx.pathParam(name);
    if (!Slugs.isSlug(value)) {
      throw DomainException.invalid(name, "the id in the path must be a slug: " + Slugs.RULE);
    }
    return value;
  }
}
