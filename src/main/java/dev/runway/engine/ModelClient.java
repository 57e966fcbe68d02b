package dev.runway.engine;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.ChatStream;
import dev.runway.agent.ModelOutcome;
import dev.runway.core.Json;
import dev.runway.outbound.OutboundHttp;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.IntPredicate;

/**
 * The model agent runs talk to. {@link #complete} sends a Chat Completions request and completes
 * with what came of it, never exceptionally and without holding a thread while it waits.
 */
public interface ModelClient extends AutoCloseable {
  /**
   * {@code mayKeep} is asked before the answer grows to a size in bytes (see OutboundHttp.Call): a
   * model's answer takes memory as it arrives. With {@code onDelta} the model is asked to stream its
   * answer ({@code "stream": true}), and each piece of its text goes to {@code onDelta} as it comes
   * (on the client's threads, in order); the outcome is the same as without.
   */
  CompletableFuture<ModelOutcome> complete(ObjectNode request, Duration timeout, IntPredicate mayKeep,
      Consumer<String> onDelta);

  @Override
  void close();

  /** The client the settings name: the sandbox model, or an OpenAI-compatible endpoint. */
  static ModelClient of(ModelSettings settings, int maxCallsPerHost, int maxCallsInFlight) {
    if (settings.isSandbox()) {
      return new SandboxModel();
    }
    // The operator's endpoint is trusted configuration (often a model server on this machine, such as
    // Ollama on 127.0.0.1): unlike tool URLs, which API users give, it may be any address.
    OutboundHttp http = new OutboundHttp(address -> true, maxCallsPerHost, maxCallsInFlight, null);
    return new ChatCompletions(http, settings);
  }

  /** An OpenAI-compatible endpoint: POST {base_url}/chat/completions with the key as a bearer token. */
  final class ChatCompletions implements ModelClient {
    private final OutboundHttp http;
    private final ModelSettings settings;
    private final URI uri;

    ChatCompletions(OutboundHttp http, ModelSettings settings) {
      this.http = http;
      this.settings = settings;
      this.uri = URI.create(settings.baseUrl() + "/chat/completions");
    }

    @Override
    public CompletableFuture<ModelOutcome> complete(ObjectNode request, Duration timeout, IntPredicate mayKeep,
        Consumer<String> onDelta) {
      Map<String, String> headers = new LinkedHashMap<>();
      headers.put("Content-Type", "application/json");
      if (!settings.apiKey().isEmpty()) {
        headers.put("Authorization", "Bearer " + settings.apiKey());
      }
      ChatStream stream = null;
      if (onDelta != null) {
        // include_usage: the last chunk reports the tokens, as a whole answer does.
        request.put("stream", true).putObject("stream_options").put("include_usage", true);
        stream = new ChatStream(onDelta, settings.maxResponseBytes(), mayKeep);
      }
      ChatStream streamed = stream;
      OutboundHttp.Call call = new OutboundHttp.Call("POST", uri, headers, Json.bytes(request), timeout,
          settings.maxResponseBytes(), mayKeep, stream == null ? null : stream::take);
      return http.send(call).handle((answer, failure) -> {
        if (failure == null && streamed != null && streamed.read()) {
          return streamed.outcome();
        }
        if (failure == null) {
          ModelOutcome outcome = ModelOutcome.read(answer.status(), answer.body(), answer.cut(), answer.retryAfter());
          if (onDelta != null && outcome instanceof ModelOutcome.Answer whole && whole.content() != null
              && !whole.content().isEmpty()) {
            // A server that answered the whole answer at once, streaming asked or not: its text is one piece.
            onDelta.accept(whole.content());
          }
          return outcome;
        }
        Throwable cause = failure.getCause() != null && !(failure instanceof OutboundHttp.NoAnswer)
            ? failure.getCause() : failure;
        String message;
        if (cause instanceof OutboundHttp.NoAnswer none && none.failure() == OutboundHttp.Failure.TIMEOUT) {
          message = "the model did not answer within " + timeout.toMillis() + " ms";
        } else if (cause instanceof OutboundHttp.NoAnswer none && none.failure() == OutboundHttp.Failure.NO_ROOM) {
          message = "the model's answer could not be read: " + none.getMessage();
        } else {
          message = "the model could not be reached: " + cause.getMessage();
        }
        return new ModelOutcome.Failure(null, message, true, null);
      });
    }

    @Override
    public void close() {
      http.close();
    }
  }
}
