package dev.runway.http;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import dev.runway.auth.Principal;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.Scheduler;

/**
 * Receives each request's body in full before the request is handed on to Javalin, without a
 * thread: while a client is still sending, the request holds neither a request thread nor a place
 * among the requests in flight, which a few hundred slow senders could otherwise take, every one.
 *
 * <p>On {@code /v1} a body is received only for a request with a valid API key (any other is
 * handed on at once, unread, and refused with 401 from its headers alone). Elsewhere (the console's
 * forms, and any other path without a key) a body is received for anyone, counted by the client's
 * address ({@link ClientAddress}): anonymous console posts sent a byte at a time once held every
 * place in flight too. A body must arrive within {@code timeoutMillis} of the headers (else 408)
 * and be at most the limit of its path (else 413: at once when its Content-Length says so; of a
 * chunked one nothing past the limit is kept or parsed: the rest is dropped as it comes, up to
 * 1 MiB, then the connection is closed). One key may have at most {@code maxPendingPerKey} bodies
 * still arriving, one client address without a key at most {@code maxPendingPerAddress} (else
 * 429), and all bodies still arriving together hold at most {@code maxPendingBytes} of memory
 * (else 503). Bodies with a key are not counted by client address: behind a load balancer every
 * client has the same one, and one slow client would lock out the others. After a 413, 429 or 503
 * answered with the body still to come, the connection closes once what the client still sends of
 * it is dropped (see {@link #refuseUnread}).
 *
 * <p>A body that came with its headers is handed on at once, counted nowhere, without a timer.
 */
public final class BufferedBodies extends Handler.Wrapper {
  private final ToIntFunction<String> maxBytesOf;
  private final long timeoutMillis;
  private final int maxPendingPerKey;
  private final int maxPendingPerAddress;
  private final long maxPendingBytes;
  private final Function<String, Principal> callerOf;
  /** Bodies still arriving, by key id ("key_…") or by client address ("ip …"); a holder without any has no entry. */
  private final ConcurrentHashMap<String, AtomicInteger> pendingByHolder = new ConcurrentHashMap<>();
  private final AtomicLong pendingBytes = new AtomicLong();

  /** {@code callerOf} gives the caller whose valid API key an Authorization header carries, or null. */
  public BufferedBodies(ToIntFunction<String> maxBytesOf, long timeoutMillis, int maxPendingPerKey,
      int maxPendingPerAddress, long maxPendingBytes, Function<String, Principal> callerOf) {
    this.maxBytesOf = maxBytesOf;
    this.timeoutMillis = timeoutMillis;
    this.maxPendingPerKey = maxPendingPerKey;
    this.maxPendingPerAddress = maxPendingPerAddress;
    this.maxPendingBytes = maxPendingBytes;
    this.callerOf = callerOf;
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) throws Exception {
    long declared = request.getLength();
    boolean chunked = declared < 0 && request.getHeaders().contains(HttpHeader.TRANSFER_ENCODING);
    if (declared <= 0 && !chunked) {
      return super.handle(request, response, callback);
    }
    String path = request.getHttpURI().getPath();
    int maxBytes = maxBytesOf.applyAsInt(path);
    if (declared > maxBytes) {
      refuseUnread(request, response, callback, HttpStatus.PAYLOAD_TOO_LARGE_413, tooLarge(maxBytes));
      return true;
    }
    Principal caller = callerOf.apply(request.getHeaders().get(HttpHeader.AUTHORIZATION));
    if (caller != null) {
      request.setAttribute(AuthHandler.FOUND_BEFORE_BODY, caller); // not looked up twice
      new Receiver(request, response, callback, caller.keyId(), maxPendingPerKey, maxBytes).receive();
    } else if (isApi(path)) {
      return super.handle(request, response, callback);
    } else {
      new Receiver(request, response, callback, "ip " + ClientAddress.of(request), maxPendingPerAddress, maxBytes)
          .receive();
    }
    return true;
  }

  /** Paths of the API (and the MCP endpoint), where every body needs a valid key. */
  private static boolean isApi(String path) {
    return path.equals("/v1") || path.startsWith("/v1/") || path.equals("/mcp");
  }

  /** How much of a too-large body is read and dropped before its 413; past it the connection is closed at once. */
  private static final long MAX_DISCARDED_BYTES = 1 << 20;

  private static String tooLarge(int maxBytes) {
    return "the request body is larger than " + maxBytes + " bytes";
  }

  /**
   * Answers {@code status} before the rest of the body is read, then closes the connection without
   * resetting it under the answer: the answer says Connection: close, and once it is written the
   * connection's output is closed (the client reads the answer to its end) and what the client
   * still sends of its body is read and dropped, up to MAX_DISCARDED_BYTES and for at most the body
   * timeout, before the request ends and Jetty closes the connection. Closed with the body still
   * arriving, the connection would be reset, and a client still sending (as one that sent its body
   * with its headers is) could lose the answer to it. Holds no thread meanwhile.
   *
   * <p>The answer is written without Jetty's consuming of what has arrived (see {@link Unconsumed}):
   * when the body is not all there yet, that consuming ends it with a failure for every later read,
   * and the dropping stopped at once, before the rest of the body came.
   */
  private void refuseUnread(Request request, Response response, Callback callback, int status, String detail) {
    response.getHeaders().put(HttpHeader.CONNECTION, "close"); // no client may send another request on it
    LingeringClose linger = new LingeringClose(request, callback);
    Response.writeError(new Unconsumed(request), response, Callback.from(linger::start, callback::failed), status,
        detail);
  }

  /**
   * The request as {@link Response#writeError} sees it: its consumeAvailable leaves the body alone.
   * Jetty's reads what has arrived and, if that is not the whole body, puts a failure in place of the
   * rest, so LingeringClose would read that failure first and stop before the body ends.
   */
  private static final class Unconsumed extends Request.Wrapper {
    Unconsumed(Request request) {
      super(request);
    }

    @Override
    public boolean consumeAvailable() {
      return false;
    }
  }

  /** What follows an answer given before the body was read: see {@link #refuseUnread}. */
  private final class LingeringClose implements Runnable {
    private final Request request;
    private final Callback callback;
    private final AtomicBoolean ended = new AtomicBoolean();
    private long discarded;
    private Scheduler.Task deadline;

    LingeringClose(Request request, Callback callback) {
      this.request = request;
      this.callback = callback;
    }

    void start() {
      request.getConnectionMetaData().getConnection().getEndPoint().shutdownOutput();
      deadline = request.getComponents().getScheduler().schedule(this::end, timeoutMillis, TimeUnit.MILLISECONDS);
      run();
    }

    @Override
    public void run() {
      while (!ended.get()) {
        Content.Chunk chunk = request.read();
        if (chunk == null) {
          request.demand(this);
          return;
        }
        boolean last = chunk.isLast() || Content.Chunk.isFailure(chunk);
        discarded += chunk.remaining();
        chunk.release();
        if (last || discarded > MAX_DISCARDED_BYTES) {
          end();
          return;
        }
      }
    }

    private void end() {
      if (ended.compareAndSet(false, true)) {
        if (deadline != null) {
          deadline.cancel();
        }
        callback.succeeded();
      }
    }
  }

  /** One request's body on its way in. */
  private final class Receiver {
    private final Request request;
    private final Response response;
    private final Callback callback;
    /** Whom the body counts against: a key id, or "ip " and a client address. */
    private final String holder;
    private final int maxPending;
    private final int maxBytes;
    private final ByteArrayOutputStream body;
    /** Set once the request is handed on or answered: whatever comes later is ignored. */
    private final AtomicBoolean settled = new AtomicBoolean();
    private boolean waiting;
    /** Bytes read and dropped once the body was known to be too large. */
    private long discarded;
    private long reserved;
    private Scheduler.Task deadline;

    Receiver(Request request, Response response, Callback callback, String holder, int maxPending, int maxBytes) {
      this.request = request;
      this.maxBytes = maxBytes;
      this.response = response;
      this.callback = callback;
      this.holder = holder;
      this.maxPending = maxPending;
      long declared = request.getLength();
      this.body = new ByteArrayOutputStream(declared > 0 ? (int) declared : 1024);
    }

    /** Reads what has arrived; asks to be called again when more arrives (demand callbacks may block). */
    void receive() {
      while (!settled.get()) {
        Content.Chunk chunk = request.read();
        if (chunk == null) {
          if (!waiting && !startWaiting()) {
            return;
          }
          request.demand(this::receive);
          return;
        }
        if (Content.Chunk.isFailure(chunk)) {
          refuse(chunk.getFailure());
          return;
        }
        boolean last = chunk.isLast();
        int size = chunk.remaining();
        if (discarded > 0 || body.size() + size > maxBytes) {
          // Too large: the rest is read and dropped before the 413 (up to a bound), since a server
          // that closes with a body still arriving resets the connection, and the client may lose
          // the answer with it.
          chunk.release();
          discarded += size;
          if (last || discarded > MAX_DISCARDED_BYTES) {
            refuse(HttpStatus.PAYLOAD_TOO_LARGE_413, tooLarge(maxBytes));
            return;
          }
          continue;
        }
        if (waiting && !reserve(size)) {
          chunk.release();
          response.getHeaders().put(HttpHeader.RETRY_AFTER, "1");
          refuseUnread(HttpStatus.SERVICE_UNAVAILABLE_503, "the server holds as many request bodies still arriving as "
              + "it may; retry shortly");
          return;
        }
        byte[] copy = new byte[size];
        chunk.getByteBuffer().get(copy);
        body.write(copy, 0, size);
        chunk.release();
        if (last) {
          if (settle()) {
            handOn();
          }
          return;
        }
      }
    }

    /** The body did not all come with the headers: counts it against its key or address and starts the clock. */
    private boolean startWaiting() {
      waiting = true;
      if (pendingByHolder.computeIfAbsent(holder, k -> new AtomicInteger()).incrementAndGet() > maxPending) {
        response.getHeaders().put(HttpHeader.RETRY_AFTER, "1");
        refuseUnread(HttpStatus.TOO_MANY_REQUESTS_429,
            (holder.startsWith("ip ") ? "this client address" : "this API key") + " has " + maxPending
                + " request bodies still arriving; send the next one when one of them is complete");
        return false;
      }
      if (!reserve(body.size())) {
        response.getHeaders().put(HttpHeader.RETRY_AFTER, "1");
        refuseUnread(HttpStatus.SERVICE_UNAVAILABLE_503, "the server holds as many request bodies still arriving as it "
            + "may; retry shortly");
        return false;
      }
      deadline = request.getComponents().getScheduler().schedule(() -> refuse(HttpStatus.REQUEST_TIMEOUT_408,
          "the request body did not arrive within " + timeoutMillis + " ms of its headers"),
          timeoutMillis, TimeUnit.MILLISECONDS);
      return true;
    }

    private boolean reserve(long bytes) {
      if (pendingBytes.addAndGet(bytes) > maxPendingBytes) {
        pendingBytes.addAndGet(-bytes);
        return false;
      }
      reserved += bytes;
      return true;
    }

    /** Answers once the body is read (or past saving: too large, late); Jetty closes the connection as it sees fit. */
    private void refuse(int status, String detail) {
      if (settle()) {
        Response.writeError(request, response, callback, status, detail);
      }
    }

    /** Answers with the rest of the body still to come, then reads and drops it (no read may be pending). */
    private void refuseUnread(int status, String detail) {
      if (settle()) {
        BufferedBodies.this.refuseUnread(request, response, callback, status, detail);
      }
    }

    private void refuse(Throwable failure) {
      if (settle()) {
        Response.writeError(request, response, callback, failure);
      }
    }

    /** True for the one caller that may answer or hand on the request; gives back what it held. */
    private boolean settle() {
      if (!settled.compareAndSet(false, true)) {
        return false;
      }
      if (deadline != null) {
        deadline.cancel();
      }
      if (waiting) {
        pendingByHolder.computeIfPresent(holder, (k, n) -> n.decrementAndGet() <= 0 ? null : n);
        pendingBytes.addAndGet(-reserved);
      }
      return true;
    }

    private void handOn() {
      Request whole = new WholeBody(request, body.toByteArray());
      try {
        if (!BufferedBodies.super.handle(whole, response, callback)) {
          Response.writeError(whole, response, callback, HttpStatus.NOT_FOUND_404);
        }
      } catch (Throwable e) {
        callback.failed(e);
      }
    }
  }

  /** The request with its body, all of it already here, read as one last chunk. */
  private static final class WholeBody extends Request.Wrapper {
    private Content.Chunk content;

    WholeBody(Request request, byte[] body) {
      super(request);
      this.content = Content.Chunk.from(ByteBuffer.wrap(body), true);
    }

    @Override
    public Content.Chunk read() {
      Content.Chunk next = content;
      content = Content.Chunk.next(next);
      return next;
    }

    @Override
    public void demand(Runnable demandCallback) {
      demandCallback.run();
    }

    @Override
    public boolean consumeAvailable() {
      content = Content.Chunk.EOF;
      return true;
    }
  }
}
