package dev.runway.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.runway.core.Json;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A scripted fake of the OpenAI Chat Completions API for tests of the agent loop: the JDK's HTTP
 * server on 127.0.0.1, a free port. It serves {@code POST /v1/chat/completions}, records every
 * request to it, and answers from a script in the wire format api.openai.com uses. Any other path
 * is a 404 with an OpenAI-style error body.
 *
 * <p>Replies come from a queue in order; when it runs dry the last scripted reply repeats; when
 * nothing was ever scripted the answer is {@code Reply.text("ok")}. A responder function, when set,
 * is used instead of the queue.
 *
 * <pre>
 * try (FakeModel model = FakeModel.start()) {
 *   model.script(
 *       Reply.toolCalls(ToolCall.of("call_1", "lookup", Map.of("q", "x"))),
 *       Reply.status(429, "Rate limit reached").retryAfter("1"),
 *       Reply.text("done").usage(100, 20).after(Duration.ofMillis(200)));
 *   // point the agent at model.baseUrl() ...
 *   model.requests().get(0).body().path("messages");
 * }
 * </pre>
 */
public final class FakeModel implements AutoCloseable {

  /** The path the fake answers, below {@link #baseUrl()}. */
  public static final String COMPLETIONS_PATH = "/v1/chat/completions";

  /**
   * One request to {@code POST /v1/chat/completions}. {@code body} is NullNode when it was empty or
   * not JSON; {@code headers} holds the first value of each header and is looked up ignoring case.
   */
  public record Request(JsonNode body, Map<String, String> headers, Instant at) {
    /** The header's first value, or null (name compared ignoring case). */
    public String header(String name) {
      return headers.get(name);
    }
  }

  /** One tool call of an assistant message. {@code arguments} is the raw JSON string as the model sends it. */
  public record ToolCall(String id, String name, String arguments) {
    /** A tool call whose arguments are {@code args} (a Map, a JsonNode, …) written as a JSON string. */
    public static ToolCall of(String id, String name, Object args) {
      return new ToolCall(id, name, Json.string(args));
    }
  }

  /**
   * One scripted answer. Immutable: {@link #usage}, {@link #after}, {@link #retryAfter},
   * {@link #header} and {@link #finishReason} return changed copies.
   */
  public static final class Reply {
    private enum Kind { COMPLETION, RAW }

    private final Kind kind;
    private final int status;
    private final String content;
    private final List<ToolCall> toolCalls;
    private final String finishReason;
    private final int promptTokens;
    private final int completionTokens;
    private final String rawBody;
    private final Map<String, String> headers;
    private final Duration delay;
    /** Streamed: the time between two chunks. */
    private Duration chunkGap = Duration.ZERO;
    /** Streamed: the chunks sent before the stream breaks off (no finish_reason, no [DONE]); -1: all. */
    private int breakAfter = -1;

    private Reply(Kind kind, int status, String content, List<ToolCall> toolCalls, String finishReason,
        int promptTokens, int completionTokens, String rawBody, Map<String, String> headers, Duration delay) {
      this.kind = kind;
      this.status = status;
      this.content = content;
      this.toolCalls = toolCalls;
      this.finishReason = finishReason;
      this.promptTokens = promptTokens;
      this.completionTokens = completionTokens;
      this.rawBody = rawBody;
      this.headers = headers;
      this.delay = delay;
    }

    /** 200: an assistant message with this content, finish_reason "stop", usage 10/5/15. */
    public static Reply text(String content) {
      return new Reply(Kind.COMPLETION, 200, content, List.of(), "stop", 10, 5, null, Map.of(), Duration.ZERO);
    }

    /** 200: an assistant message with these tool calls and null content, finish_reason "tool_calls". */
    public static Reply toolCalls(ToolCall... calls) {
      if (calls.length == 0) {
        throw new IllegalArgumentException("a tool-call reply needs at least one call");
      }
      return new Reply(Kind.COMPLETION, 200, null, List.of(calls), "tool_calls", 10, 5, null, Map.of(),
          Duration.ZERO);
    }

    /**
     * An OpenAI-style error: {@code {"error":{"message":…,"type":…,"param":null,"code":…}}}. The type
     * is "requests" with code "rate_limit_exceeded" for 429, "invalid_request_error" for other 4xx and
     * "server_error" otherwise.
     */
    public static Reply status(int status, String message) {
      String type;
      String code = null;
      if (status == 429) {
        type = "requests";
        code = "rate_limit_exceeded";
      } else if (status >= 400 && status < 500) {
        type = "invalid_request_error";
      } else {
        type = "server_error";
      }
      return raw(status, error(message, type, code));
    }

    /**
     * Any status and body, sent as is (e.g. not JSON, or an HTML page of a proxy). Content-Type is
     * application/json when the body parses as JSON, text/plain otherwise; {@link #header} overrides it.
     */
    public static Reply raw(int status, String body) {
      return new Reply(Kind.RAW, status, null, List.of(), null, 0, 0, Objects.requireNonNull(body), Map.of(),
          Duration.ZERO);
    }

    /** The same reply reporting this usage (total = prompt + completion). Only for completions. */
    public Reply usage(int prompt, int completion) {
      return new Reply(kind, status, content, toolCalls, finishReason, prompt, completion, rawBody, headers, delay)
          .streamedAs(this);
    }

    /** The same completion with another finish_reason (e.g. "length", "content_filter"). */
    public Reply finishReason(String reason) {
      return new Reply(kind, status, content, toolCalls, reason, promptTokens, completionTokens, rawBody, headers,
          delay).streamedAs(this);
    }

    /** A copy of this reply with the stream settings of {@code from}. */
    private Reply streamedAs(Reply from) {
      chunkGap = from.chunkGap;
      breakAfter = from.breakAfter;
      return this;
    }

    /** Streamed (the request asks "stream": true), its chunks sent {@code gap} apart. */
    public Reply chunkGap(Duration gap) {
      Reply r = new Reply(kind, status, content, toolCalls, finishReason, promptTokens, completionTokens, rawBody,
          headers, delay).streamedAs(this);
      r.chunkGap = gap;
      return r;
    }

    /** Streamed, the stream ends after {@code chunks} of its content chunks: no finish_reason, no usage, no [DONE]. */
    public Reply breakAfter(int chunks) {
      Reply r = new Reply(kind, status, content, toolCalls, finishReason, promptTokens, completionTokens, rawBody,
          headers, delay).streamedAs(this);
      r.breakAfter = chunks;
      return r;
    }

    /** The same reply, sent only after sleeping {@code wait}. */
    public Reply after(Duration wait) {
      return new Reply(kind, status, content, toolCalls, finishReason, promptTokens, completionTokens, rawBody,
          headers, wait).streamedAs(this);
    }

    /** The same reply with a response header added (or replaced). */
    public Reply header(String name, String value) {
      Map<String, String> more = new LinkedHashMap<>(headers);
      more.put(name, value);
      return new Reply(kind, status, content, toolCalls, finishReason, promptTokens, completionTokens, rawBody,
          Collections.unmodifiableMap(more), delay).streamedAs(this);
    }

    /** The same reply with a {@code Retry-After} header. */
    public Reply retryAfter(String value) {
      return header("Retry-After", value);
    }

    public int status() {
      return status;
    }

    public Duration delay() {
      return delay;
    }

    /** The body for one request: a completion echoes the request's model. */
    String body(JsonNode request, int number) {
      if (kind == Kind.RAW) {
        return rawBody;
      }
      ObjectNode root = Json.MAPPER.createObjectNode();
      root.put("id", "chatcmpl-" + number);
      root.put("object", "chat.completion");
      root.put("created", Instant.now().getEpochSecond());
      JsonNode model = request.path("model");
      root.put("model", model.isTextual() ? model.textValue() : "gpt-4o-mini");
      ArrayNode choices = root.putArray("choices");
      ObjectNode choice = choices.addObject();
      choice.put("index", 0);
      ObjectNode message = choice.putObject("message");
      message.put("role", "assistant");
      message.put("content", content); // null stays as JSON null
      if (!toolCalls.isEmpty()) {
        ArrayNode calls = message.putArray("tool_calls");
        for (ToolCall call : toolCalls) {
          ObjectNode c = calls.addObject();
          c.put("id", call.id());
          c.put("type", "function");
          ObjectNode function = c.putObject("function");
          function.put("name", call.name());
          function.put("arguments", call.arguments());
        }
      }
      message.putNull("refusal");
      message.putArray("annotations");
      choice.putNull("logprobs");
      choice.put("finish_reason", finishReason);
      ObjectNode usage = root.putObject("usage");
      usage.put("prompt_tokens", promptTokens);
      usage.put("completion_tokens", completionTokens);
      usage.put("total_tokens", promptTokens + completionTokens);
      ObjectNode promptDetails = usage.putObject("prompt_tokens_details");
      promptDetails.put("cached_tokens", 0);
      promptDetails.put("audio_tokens", 0);
      ObjectNode completionDetails = usage.putObject("completion_tokens_details");
      completionDetails.put("reasoning_tokens", 0);
      completionDetails.put("audio_tokens", 0);
      completionDetails.put("accepted_prediction_tokens", 0);
      completionDetails.put("rejected_prediction_tokens", 0);
      root.put("service_tier", "default");
      root.putNull("system_fingerprint");
      return Json.string(root);
    }

    /**
     * The answer as the chunks a streamed answer sends (each a data line's JSON), as api.openai.com
     * sends them: the role first, the text a word a chunk, each tool call's name and then its
     * arguments in two pieces, finish_reason in a chunk of its own, and with stream_options.include_usage
     * a last chunk with no choices and the usage (every other chunk has "usage": null).
     */
    List<String> chunks(JsonNode request, int number) {
      boolean usage = request.path("stream_options").path("include_usage").asBoolean(false);
      List<ObjectNode> deltas = new ArrayList<>();
      ObjectNode first = Json.MAPPER.createObjectNode().put("role", "assistant");
      first.put("content", content == null ? null : "");
      first.putNull("refusal");
      deltas.add(first);
      if (content != null) {
        for (String word : content.split("(?<= )")) {
          deltas.add(Json.MAPPER.createObjectNode().put("content", word));
        }
      }
      for (int i = 0; i < toolCalls.size(); i++) {
        ToolCall call = toolCalls.get(i);
        ObjectNode named = Json.MAPPER.createObjectNode();
        ObjectNode c = named.putArray("tool_calls").addObject().put("index", i).put("id", call.id()).put("type", "function");
        c.putObject("function").put("name", call.name()).put("arguments", "");
        deltas.add(named);
        int half = call.arguments().length() / 2;
        for (String piece : List.of(call.arguments().substring(0, half), call.arguments().substring(half))) {
          ObjectNode more = Json.MAPPER.createObjectNode();
          more.putArray("tool_calls").addObject().put("index", i).putObject("function").put("arguments", piece);
          deltas.add(more);
        }
      }
      List<String> chunks = new ArrayList<>();
      for (ObjectNode delta : deltas) {
        chunks.add(chunk(request, number, delta, null, usage));
      }
      if (breakAfter >= 0) {
        return chunks.subList(0, Math.min(chunks.size(), breakAfter));
      }
      chunks.add(chunk(request, number, Json.MAPPER.createObjectNode(), finishReason, usage));
      if (usage) {
        ObjectNode last = (ObjectNode) Json.tree(chunk(request, number, null, null, false));
        last.putArray("choices");
        last.putObject("usage").put("prompt_tokens", promptTokens).put("completion_tokens", completionTokens)
            .put("total_tokens", promptTokens + completionTokens);
        chunks.add(Json.string(last));
      }
      chunks.add("[DONE]");
      return chunks;
    }

    private static String chunk(JsonNode request, int number, ObjectNode delta, String finishReason, boolean usage) {
      ObjectNode root = Json.MAPPER.createObjectNode();
      root.put("id", "chatcmpl-" + number);
      root.put("object", "chat.completion.chunk");
      root.put("created", Instant.now().getEpochSecond());
      JsonNode model = request.path("model");
      root.put("model", model.isTextual() ? model.textValue() : "gpt-4o-mini");
      root.put("service_tier", "default");
      root.putNull("system_fingerprint");
      if (delta != null) {
        ObjectNode choice = root.putArray("choices").addObject().put("index", 0);
        choice.set("delta", delta);
        choice.putNull("logprobs");
        choice.put("finish_reason", finishReason);
      }
      if (usage) {
        root.putNull("usage");
      }
      return Json.string(root);
    }

    static String error(String message, String type, String code) {
      ObjectNode root = Json.MAPPER.createObjectNode();
      ObjectNode error = root.putObject("error");
      error.put("message", message);
      error.put("type", type);
      error.putNull("param");
      error.put("code", code);
      return Json.string(root);
    }
  }

  private final LoopbackHttp http;
  private final List<Request> requests = new ArrayList<>();
  private final Deque<Reply> queue = new ArrayDeque<>();
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicInteger peak = new AtomicInteger();
  private final List<SentChunk> chunksSent = new ArrayList<>();
  private Reply last;
  private Function<JsonNode, Reply> responder;

  private FakeModel() {
    this.http = LoopbackHttp.serve("fake-model", this::handle); // last: the handler reads the fields above
  }

  public static FakeModel start() {
    return new FakeModel();
  }

  /** http://127.0.0.1:port/v1: what an OpenAI client takes as its base URL. */
  public String baseUrl() {
    return "http://127.0.0.1:" + http.port() + "/v1";
  }

  public int port() {
    return http.port();
  }

  /** Appends replies to the queue; the last one taken repeats once the queue is empty. */
  public synchronized FakeModel script(Reply... replies) {
    queue.addAll(List.of(replies));
    return this;
  }

  /** Answers every request with {@code f(request body)} instead of the queue; null goes back to the queue. */
  public synchronized FakeModel respondWith(Function<JsonNode, Reply> f) {
    this.responder = f;
    return this;
  }

  /** Every request to the completions endpoint so far, oldest first. */
  public synchronized List<Request> requests() {
    return List.copyOf(requests);
  }

  public synchronized int requestCount() {
    return requests.size();
  }

  /** The newest request, or null when there was none. */
  public synchronized Request lastRequest() {
    return requests.isEmpty() ? null : requests.get(requests.size() - 1);
  }

  /** The most completion requests this fake was answering at once. */
  public int peakConcurrency() {
    return peak.get();
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      byte[] in;
      try (InputStream body = exchange.getRequestBody()) {
        in = body.readAllBytes();
      }
      String method = exchange.getRequestMethod();
      String path = exchange.getRequestURI().getPath();
      if (!path.equals(COMPLETIONS_PATH)) {
        send(exchange, Reply.raw(404, Reply.error("Invalid URL (" + method + " " + path + ")",
            "invalid_request_error", null)), null);
        return;
      }
      if (!method.equals("POST")) {
        send(exchange, Reply.raw(405, Reply.error("Invalid method for URL (" + method + " " + path + ")",
            "invalid_request_error", null)), null);
        return;
      }
      peak.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
      try {
        JsonNode body = parse(in);
        Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        exchange.getRequestHeaders().forEach((name, values) -> headers.put(name, values.get(0)));
        int number;
        Function<JsonNode, Reply> f;
        Reply reply = null;
        synchronized (this) {
          requests.add(new Request(body, Collections.unmodifiableMap(headers), Instant.now()));
          number = requests.size();
          f = responder;
          if (f == null) {
            if (!queue.isEmpty()) {
              last = queue.poll();
            }
            reply = last != null ? last : Reply.text("ok");
          }
        }
        if (f != null) {
          try {
            reply = f.apply(body);
            if (reply == null) {
              reply = Reply.status(500, "FakeModel: the responder returned null");
            }
          } catch (RuntimeException e) {
            reply = Reply.status(500, "FakeModel: the responder failed: " + e);
          }
        }
        if (!reply.delay().isZero()) {
          try {
            Thread.sleep(reply.delay().toMillis());
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return; // the fake is closing
          }
        }
        if (body.path("stream").asBoolean(false) && reply.kind == Reply.Kind.COMPLETION && reply.status() == 200) {
          stream(exchange, reply.header("x-request-id", "req_" + number), reply.chunks(body, number));
        } else {
          send(exchange, reply.header("x-request-id", "req_" + number), reply.body(body, number));
        }
      } finally {
        inFlight.decrementAndGet();
      }
    } catch (IOException e) {
      // the caller hung up (e.g. its time-out passed): nothing to answer
    }
  }

  private static void send(HttpExchange exchange, Reply reply, String rendered) throws IOException {
    String text = rendered != null ? rendered : reply.body(NullNode.getInstance(), 0);
    byte[] out = text.getBytes(StandardCharsets.UTF_8);
    boolean json = reply.kind == Reply.Kind.COMPLETION || !(parse(out) instanceof NullNode);
    exchange.getResponseHeaders().set("Content-Type", json ? "application/json" : "text/plain; charset=utf-8");
    reply.headers.forEach((name, value) -> exchange.getResponseHeaders().set(name, value));
    exchange.sendResponseHeaders(reply.status(), out.length == 0 ? -1 : out.length);
    if (out.length > 0) {
      try (OutputStream os = exchange.getResponseBody()) {
        os.write(out);
      }
    }
  }

  /** A streamed answer: Server-Sent Events, one data line a chunk, each written and flushed as it goes. */
  private void stream(HttpExchange exchange, Reply reply, List<String> chunks) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
    reply.headers.forEach((name, value) -> exchange.getResponseHeaders().set(name, value));
    exchange.sendResponseHeaders(200, 0);
    try (OutputStream os = exchange.getResponseBody()) {
      for (int i = 0; i < chunks.size(); i++) {
        if (i > 0 && !reply.chunkGap.isZero()) {
          try {
            Thread.sleep(reply.chunkGap.toMillis());
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
        os.write(("data: " + chunks.get(i) + "\n\n").getBytes(StandardCharsets.UTF_8));
        os.flush();
        synchronized (this) {
          chunksSent.add(new SentChunk(chunks.get(i), Instant.now()));
        }
      }
    }
  }

  /** One chunk of a streamed answer, and when it was written. */
  public record SentChunk(String data, Instant at) {}

  /** Every chunk of a streamed answer sent so far, in order. */
  public synchronized List<SentChunk> chunksSent() {
    return List.copyOf(chunksSent);
  }

  private static JsonNode parse(byte[] bytes) {
    if (bytes.length == 0) {
      return NullNode.getInstance();
    }
    try {
      JsonNode node = Json.MAPPER.readTree(bytes);
      return node == null || node.isMissingNode() ? NullNode.getInstance() : node;
    } catch (IOException e) {
      return NullNode.getInstance();
    }
  }

  @Override
  public void close() {
    http.close();
  }
}
