package dev.runway.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.outbound.OutboundHttp;
import dev.runway.secret.SecretSource;
import dev.runway.workflow.Step;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;

/** Makes one attempt of an http step: the call to the caller's tool, and what came of it. */
public final class HttpStepCaller {
  private final OutboundHttp http;
  private final SecretSource secrets;
  private final int maxResponseBytes;

  public HttpStepCaller(OutboundHttp http, SecretSource secrets, int maxResponseBytes) {
    this.http = http;
    this.secrets = secrets;
    this.maxResponseBytes = maxResponseBytes;
  }

  /**
   * How an attempt ended. {@code retryable} failures are tried again; others fail the step at once,
   * for the reason {@code code} (step_failed; expression_failed when the call could not even be made
   * from the step's templates).
   */
  public record Outcome(boolean succeeded, boolean retryable, Integer httpStatus, String message, JsonNode output,
      String code) {
    static Outcome success(int status, JsonNode output, String message) {
      return new Outcome(true, false, status, message, output, null);
    }

    static Outcome retry(Integer status, String message) {
      return new Outcome(false, true, status, message, null, "step_failed");
    }

    static Outcome fail(Integer status, String message) {
      return new Outcome(false, false, status, message, null, "step_failed");
    }

    static Outcome expressionFailed(String message) {
      return new Outcome(false, false, null, message, null, "expression_failed");
    }
  }

  /**
   * Calls the tool. The future always completes normally: whatever the tool answers, or however the
   * call fails, the attempt ends with an outcome the run can record.
   */
  public CompletableFuture<Outcome> call(String workspaceId, Step.Http step, ObjectNode body, String idempotencyKey) {
    return call(workspaceId, step, step.url(), step.headers(), body, idempotencyKey);
  }

  /**
   * Calls the tool at {@code url} with {@code headers}: the step's, its templates evaluated (their
   * secret references, the step's own, are resolved here).
   */
  public CompletableFuture<Outcome> call(String workspaceId, Step.Http step, String url, Map<String, String> headers,
      JsonNode body, String idempotencyKey) {
    ResolvedCall target;
    try {
      target = ResolvedCall.of(secrets, workspaceId, url, headers, step.secretNames());
    } catch (ResolvedCall.Unresolvable e) {
      return CompletableFuture.completedFuture(Outcome.fail(null, e.getMessage()));
    }
    Map<String, String> sent = target.headers();
    sent.put("Content-Type", "application/json");
    sent.put("Idempotency-Key", idempotencyKey);
    OutboundHttp.Call call = new OutboundHttp.Call(step.method(), target.uri(), sent,
        step.method().equals("GET") ? null : Json.bytes(body), Duration.ofMillis(step.timeoutMs()), maxResponseBytes);
    return http.send(call).handle((answer, failure) -> {
      try {
        return failure == null ? outcome(answer) : noAnswer(failure);
      } catch (RuntimeException e) {
        return Outcome.fail(answer == null ? null : answer.status(), "the answer could not be read: "
            + e.getClass().getSimpleName());
      }
    });
  }

  private Outcome outcome(OutboundHttp.Answer answer) {
    int status = answer.status();
    if (status >= 200 && status < 300) {
      return success(status, answer);
    }
    String message = "HTTP " + status + snippet(answer.body());
    if (status >= 500 || status == 408 || status == 429) {
      return Outcome.retry(status, message);
    }
    return Outcome.fail(status, message);
  }

  private static Outcome noAnswer(Throwable failure) {
    Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    if (cause instanceof OutboundHttp.NoAnswer none) {
      return none.failure() == OutboundHttp.Failure.REFUSED ? Outcome.fail(null, none.getMessage())
          : Outcome.retry(null, none.getMessage());
    }
    return Outcome.retry(null, "the call failed: " + cause.getClass().getSimpleName());
  }

  /**
   * A 2xx answer. Its JSON body becomes the step's output; a body that is not JSON, or over
   * max_response_bytes, is not kept (the step still succeeds). JSON that Runway could not keep (nested
   * too deep, numbers no type holds, broken characters) fails the step: the tool answered something
   * it should not have, and a retry would most likely get the same.
   */
  private Outcome success(int status, OutboundHttp.Answer answer) {
    if (answer.cut()) {
      return Outcome.success(status, null, "HTTP " + status + "; response over " + maxResponseBytes + " bytes not kept");
    }
    if (answer.body().length == 0) {
      return Outcome.success(status, null, "HTTP " + status);
    }
    try {
      JsonNode output = Json.parseUntrusted(answer.body());
      return Outcome.success(status, output, "HTTP " + status);
    } catch (Json.InvalidJson e) {
      if (e.malformed()) {
        return Outcome.success(status, null, "HTTP " + status + "; response is not JSON, not kept");
      }
      return Outcome.fail(status, "HTTP " + status + " but the answer cannot be kept: it " + e.getMessage());
    }
  }

  /** How many characters of an error answer's text the step's error keeps. */
  static final int SNIPPET_CHARS = 200;
  /** How much of an error answer is read for its text: an HTML page's head and markup come before it. */
  private static final int SNIPPET_SOURCE_BYTES = 16 * 1024;
  private static final Pattern HIDDEN_ELEMENTS = Pattern.compile(
      "(?is)<(head|script|style|title)\\b[^>]*>.*?</\\1\\s*>|<!--.*?-->");
  private static final Pattern TAG = Pattern.compile("(?s)<[^>]*>?");

  /**
   * The text of an error answer, for the step's error: an HTML page (what most servers answer when
   * something fails, Python's http.server among them) is reduced to its visible words, so the
   * sentence that says what went wrong is kept rather than the markup before it.
   */
  static String snippet(byte[] bytes) {
    if (bytes.length == 0) {
      return "";
    }
    String text = new String(bytes, 0, Math.min(bytes.length, SNIPPET_SOURCE_BYTES), StandardCharsets.UTF_8);
    if (looksLikeHtml(text)) {
      text = TAG.matcher(HIDDEN_ELEMENTS.matcher(text).replaceAll(" ")).replaceAll(" ")
          .replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#x27;", "'")
          .replace("&#39;", "'").replace("&nbsp;", " ").replace("&amp;", "&");
    }
    text = text.replaceAll("\\s+", " ").trim();
    if (text.isEmpty()) {
      return "";
    }
    return ": " + (text.length() > SNIPPET_CHARS ? text.substring(0, SNIPPET_CHARS) + "…" : text);
  }

  /** Markup rather than text that merely starts with a bracket: a tag opened and one closed. */
  private static boolean looksLikeHtml(String text) {
    return text.stripLeading().startsWith("<") && text.contains("</");
  }

}
