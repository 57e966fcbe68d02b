package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.DomainException;
import dev.runway.core.Slugs;
import dev.runway.http.AuthHandler;
import dev.runway.http.RequestBodies;
import dev.runway.http.Responses;
import io.javalin.http.Context;

/** HTTP handlers for signals: POST /v1/runs/{runId}/signals/{name} (API key) and POST /signals/{token} (the URL is the credential). */
public final class SignalRoutes {
  private final RunSignals signals;
  private final RequestBodies bodies;

  public SignalRoutes(RunSignals signals, RequestBodies bodies) {
    this.signals = signals;
    this.bodies = bodies;
  }

  /** POST /v1/runs/{runId}/signals/{name}: 202 {id, run_id, signal, status: delivered | kept, step}. */
  public void send(Context ctx) {
    String runId = RunRoutes.runId(ctx);
    String name = ctx.pathParam("name");
    if (!Slugs.isSlug(name)) {
      throw DomainException.invalid("name", "the signal's name in the path must be a slug: " + Slugs.RULE);
    }
    String idempotencyKey = RunRoutes.idempotencyKey(ctx);
    JsonNode body = bodies.anyValue(ctx);
    RunSignals.Sent sent = signals.send(AuthHandler.principal(ctx), runId, name, body, idempotencyKey);
    Responses.maybeReplayed(ctx, sent.status(), sent.body(), sent.replayed());
  }

  /** POST /signals/{token}: sends the signal of a run's one-use signal URL, no API key; 202 as above. */
  public void sendByUrl(Context ctx) {
    String token = ctx.pathParam("token");
    JsonNode body = bodies.anyValue(ctx);
    RunSignals.Sent sent = signals.sendByUrl(token, body);
    Responses.maybeReplayed(ctx, sent.status(), sent.body(), false);
  }
}
