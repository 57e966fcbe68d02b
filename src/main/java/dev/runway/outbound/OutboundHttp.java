package dev.runway.outbound;

import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntPredicate;
import java.util.function.Predicate;
import org.eclipse.jetty.client.BytesRequestContent;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.Response;
import org.eclipse.jetty.client.Result;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.util.Promise;
import org.eclipse.jetty.util.SocketAddressResolver;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.ScheduledExecutorScheduler;

/**
 * Runway's calls to URLs that API users give it (workflow http steps; agent tools and webhooks to
 * come). Asynchronous: a call waiting for its answer holds no thread. The host's addresses are
 * checked by the resolver the client connects with, so the address connected to is always one that
 * was checked: a name that resolves to a public address for the check and to 127.0.0.1 a moment
 * later (DNS rebinding) cannot reach the server's own network. Redirects are not followed (one
 * could lead anywhere); answers are read up to a size and no further.
 */
public final class OutboundHttp implements AutoCloseable {
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);

  /**
   * One call: what to send where, how long to wait for the whole answer, and how much of it to keep.
   * {@code mayKeep}, when set, is asked before the answer grows to a size (in bytes): false stops
   * reading it, and the call fails (NO_ROOM), so that memory is taken as answers arrive, not
   * reserved for the largest one. {@code stream}, when set, takes a successful answer of type
   * text/event-stream as it arrives, instead of its body gathering (the answer's body is then empty).
   */
  public record Call(String method, URI uri, Map<String, String> headers, byte[] body, Duration timeout,
      int maxAnswerBytes, IntPredicate mayKeep, Stream stream) {
    public Call(String method, URI uri, Map<String, String> headers, byte[] body, Duration timeout, int maxAnswerBytes) {
      this(method, uri, headers, body, timeout, maxAnswerBytes, null, null);
    }

    public Call(String method, URI uri, Map<String, String> headers, byte[] body, Duration timeout, int maxAnswerBytes,
        IntPredicate mayKeep) {
      this(method, uri, headers, body, timeout, maxAnswerBytes, mayKeep, null);
    }
  }

  /** Takes a streamed answer's bytes as they arrive; false stops reading it (the answer is then {@code cut}). */
  public interface Stream {
    boolean take(ByteBuffer bytes);
  }

  /**
   * An answer: its status, its body (at most maxAnswerBytes; {@code cut} when there was more),
   * Retry-After, and the Content-Type and Mcp-Session-Id headers (null when absent).
   */
  public record Answer(int status, byte[] body, boolean cut, String retryAfter, String contentType, String sessionId) {
    public Answer(int status, byte[] body, boolean cut, String retryAfter) {
      this(status, body, cut, retryAfter, null, null);
    }
  }

  /** Why a call got no answer; the message names no address and no secret (query strings, headers). */
  public enum Failure { REFUSED, UNRESOLVED, TIMEOUT, CONNECTION, NO_ROOM }

  public static final class NoAnswer extends Exception {
    private final Failure failure;

    NoAnswer(Failure failure, String message) {
      super(message, null, false, false);
      this.failure = failure;
    }

    public Failure failure() {
      return failure;
    }
  }

  /** Which addresses may be called. */
  public interface AddressPolicy extends Predicate<InetAddress> {
    /** Public unicast addresses only, or every address when private networks are allowed. */
    static AddressPolicy publicOnly(boolean allowPrivateNetworks) {
      return address -> allowPrivateNetworks || !SpecialAddresses.isSpecial(address);
    }
  }

  private final HttpClient client;

  /**
   * {@code dns} resolves names (null: the system's resolver, on the client's threads);
   * {@code maxConnectionsPerHost} bounds the calls in flight to one host and port.
   */
  public OutboundHttp(AddressPolicy policy, int maxConnectionsPerHost, int maxQueuedPerHost, SocketAddressResolver dns) {
    QueuedThreadPool threads = new QueuedThreadPool(16, 2);
    threads.setName("runway-outbound");
    threads.setDaemon(true);
    ScheduledExecutorScheduler scheduler = new ScheduledExecutorScheduler("runway-outbound-timer", true);
    SocketAddressResolver system = dns != null ? dns
        : new SocketAddressResolver.Async(threads, scheduler, CONNECT_TIMEOUT.toMillis());
    client = new HttpClient();
    client.setExecutor(threads);
    client.setScheduler(scheduler);
    client.setSocketAddressResolver(new CheckingResolver(system, policy));
    client.setConnectTimeout(CONNECT_TIMEOUT.toMillis());
    client.setFollowRedirects(false);
    client.setMaxConnectionsPerDestination(maxConnectionsPerHost);
    client.setMaxRequestsQueuedPerDestination(maxQueuedPerHost);
    client.setUserAgentField(new HttpField(HttpHeader.USER_AGENT, "Runway"));
  }

  /**
   * Sends the call. The future completes with the answer, or exceptionally with {@link NoAnswer}:
   * never with anything else, and never on the caller's thread's time (the client's threads complete it).
   */
  public CompletableFuture<Answer> send(Call call) {
    CompletableFuture<Answer> done = new CompletableFuture<>();
    try {
      start();
      Request request = client.newRequest(call.uri()).method(call.method())
          .timeout(call.timeout().toMillis(), TimeUnit.MILLISECONDS)
          .headers(h -> call.headers().forEach(h::put));
      if (call.body() != null) {
        request.body(new BytesRequestContent(call.headers().getOrDefault("Content-Type", "application/json"),
            call.body()));
      }
      request.send(new Collector(call, done));
    } catch (RuntimeException e) {
      done.completeExceptionally(new NoAnswer(Failure.CONNECTION, "the call could not be made: "
          + e.getClass().getSimpleName()));
    }
    return done;
  }

  /** The client starts at the first call: a server with nothing to call pays nothing for it. */
  private synchronized void start() {
    if (!client.isStarted()) {
      try {
        client.start();
      } catch (Exception e) {
        throw new IllegalStateException("cannot start the outbound HTTP client", e);
      }
    }
  }

  @Override
  public synchronized void close() {
    try {
      client.stop();
    } catch (Exception e) {
      // stopping: the calls still open fail, and are made again after the restart
    }
  }

  /** Gathers one answer, up to its size limit; past it the rest is not read. */
  private static final class Collector implements Response.Listener {
    private final Call call;
    private final CompletableFuture<Answer> done;
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    private boolean cut;
    /** Whether the answer goes to the call's stream (decided at its first bytes); null: not decided yet. */
    private Boolean streamed;

    Collector(Call call, CompletableFuture<Answer> done) {
      this.call = call;
      this.done = done;
    }

    @Override
    public void onContent(Response response, ByteBuffer content) {
      if (cut) {
        return;
      }
      if (streamed == null) {
        String type = response.getHeaders().get(HttpHeader.CONTENT_TYPE);
        streamed = call.stream() != null && response.getStatus() / 100 == 2 && type != null
            && type.toLowerCase(java.util.Locale.ROOT).startsWith("text/event-stream");
      }
      if (streamed) {
        // Bounded in time by the call's timeout; the stream bounds what it keeps of the answer.
        if (!call.stream().take(content)) {
          cut = true;
          response.abort(new AnswerCut());
        }
        return;
      }
      int room = call.maxAnswerBytes() - body.size();
      int take = Math.min(room, content.remaining());
      if (call.mayKeep() != null && take > 0 && !call.mayKeep().test(body.size() + take)) {
        response.abort(new NoRoom());
        return;
      }
      byte[] bytes = new byte[take];
      content.get(bytes);
      body.write(bytes, 0, take);
      if (content.hasRemaining()) {
        cut = true;
        response.abort(new AnswerCut());
      }
    }

    @Override
    public void onComplete(Result result) {
      Response response = result.getResponse();
      Throwable failure = result.getFailure();
      if (failure == null || failure instanceof AnswerCut) {
        done.complete(new Answer(response.getStatus(), body.toByteArray(), cut,
            response.getHeaders().get(HttpHeader.RETRY_AFTER), response.getHeaders().get(HttpHeader.CONTENT_TYPE),
            response.getHeaders().get("Mcp-Session-Id")));
        return;
      }
      done.completeExceptionally(noAnswer(failure, call));
    }
  }

  /** Stops reading an answer for which there is no memory now. */
  private static final class NoRoom extends Exception {
    NoRoom() {
      super("no memory for the answer now", null, false, false);
    }
  }

  /** Stops reading an answer past its size limit: not a failure of the call. */
  private static final class AnswerCut extends Exception {
    AnswerCut() {
      super("answer cut at its size limit", null, false, false);
    }
  }

  private static NoAnswer noAnswer(Throwable failure, Call call) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof NoRoom) {
        return new NoAnswer(Failure.NO_ROOM, "no memory for the answer now (engine.max_call_bytes_in_flight); "
            + "it was not read");
      }
      if (t instanceof Refused refused) {
        return new NoAnswer(Failure.REFUSED, refused.getMessage());
      }
      if (t instanceof UnknownHostException) {
        return new NoAnswer(Failure.UNRESOLVED, "cannot resolve host " + call.uri().getHost());
      }
      if (t instanceof TimeoutException) {
        return new NoAnswer(Failure.TIMEOUT, "no answer within " + call.timeout().toMillis() + " ms");
      }
    }
    // The class name only: messages of the HTTP client may quote the request (and its query string).
    Throwable root = failure;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String detail = root instanceof java.net.ConnectException ? "connection refused" : root.getClass().getSimpleName();
    return new NoAnswer(Failure.CONNECTION, "connection failed: " + detail);
  }

  /** The address check, done on the very addresses the client will connect to. */
  private static final class CheckingResolver implements SocketAddressResolver {
    private final SocketAddressResolver dns;
    private final AddressPolicy policy;

    CheckingResolver(SocketAddressResolver dns, AddressPolicy policy) {
      this.dns = dns;
      this.policy = policy;
    }

    @Override
    public void resolve(String host, int port, Map<String, Object> context, Promise<List<InetSocketAddress>> promise) {
      dns.resolve(host, port, context, new Promise<>() {
        @Override
        public void succeeded(List<InetSocketAddress> addresses) {
          List<InetSocketAddress> allowed = addresses.stream()
              .filter(a -> a.getAddress() != null && policy.test(a.getAddress())).toList();
          if (allowed.isEmpty()) {
            promise.failed(new Refused(host));
          } else {
            promise.succeeded(allowed);
          }
        }

        @Override
        public void failed(Throwable failure) {
          promise.failed(failure);
        }
      });
    }
  }

  /** A host that resolves to no address Runway may call. Its message names the host, never an address. */
  private static final class Refused extends Exception {
    Refused(String host) {
      super("refused to call " + host + ": it resolves to no public address (loopback, private and "
          + "special-purpose addresses are refused; engine.http.allow_private_networks=true allows them)",
          null, false, false);
    }
  }
}
