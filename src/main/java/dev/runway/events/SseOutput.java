package dev.runway.events;

import dev.runway.run.Event;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;

/**
 * One response's Server-Sent Events, written without blocking: a thread that writes to a client
 * that does not read never waits. What the client has not taken yet waits here, up to a bound;
 * past it the stream is closed (the client reconnects with Last-Event-ID and misses nothing).
 * {@link #ended} completes when the stream is over, by {@link #finish} once all is written, by the
 * bound, or by a failed write (the client went away); the request ends with it.
 */
final class SseOutput implements WriteListener {
  private final ServletOutputStream out;
  private final int maxBuffered;
  /** What every stream of the server has queued together, and its bound. */
  private final java.util.concurrent.atomic.AtomicLong allBuffered;
  private final long maxAllBuffered;
  private final CompletableFuture<Void> ended = new CompletableFuture<>();
  private final ArrayDeque<byte[]> pending = new ArrayDeque<>();
  private int buffered;
  private boolean flushNeeded;
  private boolean finishing;
  private boolean draining;
  private boolean drainAgain;

  /** Call once the request is asynchronous; the container calls back when the client can take more. */
  SseOutput(ServletOutputStream out, int maxBuffered) {
    this(out, maxBuffered, new java.util.concurrent.atomic.AtomicLong(), Long.MAX_VALUE);
  }

  /**
   * As {@link #SseOutput(ServletOutputStream, int)}, also closing the stream when what all streams
   * queue together ({@code allBuffered}, shared) would pass {@code maxAllBuffered}: a thousand
   * slow clients at 256 KiB each would be 256 MB.
   */
  SseOutput(ServletOutputStream out, int maxBuffered, java.util.concurrent.atomic.AtomicLong allBuffered,
      long maxAllBuffered) {
    this.out = out;
    this.maxBuffered = maxBuffered;
    this.allBuffered = allBuffered;
    this.maxAllBuffered = maxAllBuffered;
  }

  void start() {
    out.setWriteListener(this);
  }

  CompletableFuture<Void> ended() {
    return ended;
  }

  boolean isOpen() {
    return !ended.isDone();
  }

  /** Queues bytes and writes what the client can take now; false if the stream is over (or now closed as too slow). */
  synchronized boolean write(byte[] bytes) {
    if (ended.isDone()) {
      return false;
    }
    if (buffered + bytes.length > maxBuffered || allBuffered.addAndGet(bytes.length) > maxAllBuffered) {
      if (buffered + bytes.length <= maxBuffered) {
        allBuffered.addAndGet(-bytes.length);
      }
      close();
      return false;
    }
    pending.add(bytes);
    buffered += bytes.length;
    drain();
    return isOpen();
  }

  /** Ends the stream once everything queued is written. */
  synchronized void finish() {
    finishing = true;
    drain();
  }

  /** Ends the stream now, dropping what is queued. */
  synchronized void close() {
    pending.clear();
    allBuffered.addAndGet(-buffered);
    buffered = 0;
    ended.complete(null);
  }

  @Override
  public synchronized void onWritePossible() {
    drain();
  }

  @Override
  public synchronized void onError(Throwable failure) {
    close();
  }

  /**
   * Writes while the output is ready. Should the container call back into this object from inside
   * a write (the lock is re-entrant), the inner call only asks the outer loop to go round again.
   */
  private void drain() {
    if (draining) {
      drainAgain = true;
      return;
    }
    draining = true;
    try {
      do {
        drainAgain = false;
        while (!ended.isDone() && out.isReady()) {
          byte[] next = pending.poll();
          if (next != null) {
            buffered -= next.length;
            allBuffered.addAndGet(-next.length);
            out.write(next);
            flushNeeded = true;
          } else if (flushNeeded) {
            flushNeeded = false;
            out.flush();
          } else {
            if (finishing) {
              close();
            }
            break;
          }
        }
      } while (drainAgain);
    } catch (IOException | IllegalStateException e) {
      close(); // the client went away
    } finally {
      draining = false;
    }
  }
}
