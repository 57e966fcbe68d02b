package dev.runway.trigger;

import dev.runway.http.Responses;
import io.javalin.http.Context;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Executor;

/** The HTTP handler of inbound webhooks: POST /hooks/{hookId}, with no API key (the id and the signature are the credential). */
public final class HookRoutes {
  private final HookReceiver receiver;
  private final Executor requestThreads;

  /** {@code requestThreads} answer once the run is committed (never the thread that wakes committers). */
  public HookRoutes(HookReceiver receiver, Executor requestThreads) {
    this.receiver = receiver;
    this.requestThreads = requestThreads;
  }

  /** 202 {"run_id", "duplicate"} once the run is committed; a retry of a delivery gets its first run's id. */
  public void receive(Context ctx) {
    HookReceiver.Delivery delivery = new HookReceiver.Delivery(ctx.contentType(), ctx::header, ctx.bodyAsBytes());
    ctx.future(() -> receiver.receive(ctx.pathParam("hookId"), delivery).thenAcceptAsync(received -> {
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("run_id", received.runId());
      body.put("duplicate", received.duplicate());
      Responses.json(ctx, 202, body);
    }, requestThreads));
  }
}
