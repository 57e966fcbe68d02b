package dev.runway.http;

import dev.runway.core.Json;
import io.javalin.http.Context;
import java.util.Arrays;
import java.util.Map;

/**
 * Writes JSON and problem+json bodies with the charset the API promises, each ending with a newline
 * so that a terminal (curl) prints the prompt on a line of its own after it.
 */
public final class Responses {
  // Jetty sends known types in its canonical spelling, without the space: application/json;charset=utf-8.
  public static final String JSON = "application/json; charset=utf-8";
  public static final String PROBLEM_JSON = "application/problem+json; charset=utf-8";

  public static final String CACHE_CONTROL = "no-store";
  public static final String CONTENT_TYPE_OPTIONS = "nosniff";

  private Responses() {}

  /**
   * Before every request: answers are per caller (and may hold secrets of its workspace), so no
   * cache, shared or private, may keep them; and no browser may read a JSON body as another type.
   */
  public static void commonHeaders(Context ctx) {
    ctx.header("Cache-Control", CACHE_CONTROL);
    ctx.header("X-Content-Type-Options", CONTENT_TYPE_OPTIONS);
  }

  public static void json(Context ctx, int status, Object body) {
    ctx.status(status).contentType(JSON).result(withNewline(Json.bytes(body)));
  }

  /** A body already serialized (a stored idempotent response). */
  public static void rawJson(Context ctx, int status, String body) {
    ctx.status(status).contentType(JSON).result(body.endsWith("\n") ? body : body + "\n");
  }

  /** A JSON answer that may be the stored answer of an earlier request with the same Idempotency-Key. */
  public static void maybeReplayed(Context ctx, int status, String body, boolean replayed) {
    if (replayed) {
      ctx.header("Idempotent-Replayed", "true");
    }
    rawJson(ctx, status, body);
  }

  public static void problem(Context ctx, int status, String code, String detail, String param) {
    problem(ctx, status, code, detail, param, Map.of());
  }

  public static void problem(Context ctx, int status, String code, String detail, String param,
      Map<String, Object> extensions) {
    Map<String, Object> body = Problem.body(status, code, detail, param, RequestIds.of(ctx), extensions);
    ctx.status(status).contentType(PROBLEM_JSON).result(withNewline(Json.bytes(body)));
  }

  /** A serialized body and the newline that ends it. */
  public static byte[] withNewline(byte[] json) {
    byte[] out = Arrays.copyOf(json, json.length + 1);
    out[json.length] = '\n';
    return out;
  }
}
