package dev.runway.events;

import dev.runway.auth.ApiKeyService;
import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.FairShares;
import dev.runway.core.Json;
import dev.runway.db.GroupCommitter;
import dev.runway.http.InFlightLimit;
import dev.runway.quota.Quota;
import dev.runway.quota.Quotas;
import dev.runway.run.Event;
import dev.runway.run.EventDao;
import dev.runway.run.RunStatus;
import io.javalin.http.Context;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The open Server-Sent Events streams of this instance, and the one thread that feeds them. A
 * stream is a cursor (the seq of the last event sent) over the event table: the thread reads what
 * comes after it and writes it, so the backlog and the live events are one read, with no gap and no
 * duplicate (a workspace's events get their seq in commit order, see EventDao.insert). It reads
 * when a commit of this instance touched the stream's workspace, and every sse.poll_interval_ms for
 * commits of other instances. Streams hold no request thread and no place among the requests in
 * flight; they are bounded per key and per instance instead.
 */
public final class EventStreams implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EventStreams.class);
  private static final int PAGE = 500;
  /** Pages one stream may read in a round before the others get their turn. */
  private static final int PAGES_PER_ROUND = 4;
  private static final byte[] OPENED = ": stream open\n\n".getBytes(StandardCharsets.UTF_8);
  /** The events that end a run, after which its stream ends. */
  private static final Set<String> RUN_ENDS = Arrays.stream(RunStatus.values()).filter(RunStatus::isEnded)
      .map(RunStatus::endEventType).collect(Collectors.toUnmodifiableSet());
  private static final byte[] HEARTBEAT = ": heartbeat\n\n".getBytes(StandardCharsets.UTF_8);

  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final ApiKeyService keys;
  private final StreamSettings settings;
  private final InFlightLimit inFlight;
  private final Quotas quotas;
  private final long keyCheckNanos;
  private final Object lock = new Object();
  /** What all streams have queued for their clients together (see SseOutput), at most sse.max_buffered_bytes_total. */
  private final java.util.concurrent.atomic.AtomicLong bufferedTotal = new java.util.concurrent.atomic.AtomicLong();
  // Guarded by lock:
  private final List<EventStream> streams = new ArrayList<>();
  private final Map<String, Integer> streamsByKey = new HashMap<>();
  private final Map<String, Integer> streamsByWorkspace = new HashMap<>();
  private final Set<String> dirty = new HashSet<>();
  private Thread thread;
  private Runnable stopListening;
  private boolean closed;

  /**
   * {@code keyCheck}: how often the keys of open streams are read again, so that a revoked or
   * expired key's streams end about as soon as its requests are refused (auth.key_cache_seconds).
   */
  public EventStreams(Jdbi jdbi, GroupCommitter committer, ApiKeyService keys, StreamSettings settings,
      InFlightLimit inFlight, Duration keyCheck, Quotas quotas) {
    this.jdbi = jdbi;
    this.quotas = quotas;
    this.committer = committer;
    this.keys = keys;
    this.settings = settings;
    this.inFlight = inFlight;
    this.keyCheckNanos = Math.max(keyCheck.toNanos(), settings.pollInterval().toNanos());
  }

  /** Whether the request asks for a stream ({@code Accept: text/event-stream}) rather than a page of JSON. */
  public static boolean wanted(Context ctx) {
    String accept = ctx.header("Accept");
    return accept != null && accept.toLowerCase(java.util.Locale.ROOT).contains("text/event-stream");
  }

  /**
   * Answers the request with a stream of the caller's events after {@code afterSeq}: the run's if
   * {@code runId} is set (ending once it has sent the run's last event; {@code runEnded}: the run had
   * ended already), else the workspace's (only the key's projects). 429 past sse.max_streams_per_key
   * for the key and past the workspace's fair share of sse.max_streams (see FairShares), 503 past
   * sse.max_streams for this instance.
   */
  public void open(Context ctx, Principal caller, String runId, long afterSeq, boolean runEnded) {
    EventStream stream;
    synchronized (lock) {
      if (closed) {
        throw new DomainException(Kind.UNAVAILABLE, "unavailable",
            "the server is stopping; retry on another instance or shortly",
            null, 1, Map.of());
      }
      if (streams.size() >= settings.maxStreams()) {
        throw new DomainException(Kind.UNAVAILABLE, "unavailable", "this instance has its limit of "
            + settings.maxStreams()
            + " open event streams; retry shortly or on another instance", null, 5, Map.of());
      }
      int ofKey = streamsByKey.getOrDefault(caller.keyId(), 0);
      if (ofKey >= settings.maxStreamsPerKey()) {
        throw new DomainException(Kind.TOO_MANY, "rate_limited", "this API key has " + ofKey
            + " event streams open already (sse.max_streams_per_key); close one first", null, 5, Map.of());
      }
      quotas.checkOpen(Quota.EVENT_STREAMS, caller.workspaceId(),
          streamsByWorkspace.getOrDefault(caller.workspaceId(), 0));
      int ofWorkspace = streamsByWorkspace.getOrDefault(caller.workspaceId(), 0);
      if (!FairShares.mayTakeAnother(settings.maxStreams(), streamsByWorkspace.size(), ofWorkspace, Long.MAX_VALUE)) {
        throw new DomainException(Kind.TOO_MANY, "rate_limited", "this workspace has " + ofWorkspace
            + " event streams open, its"
            + " fair share of this instance's " + settings.maxStreams() + " (sse.max_streams) beside other"
            + " workspaces' streams; close one first", null, 5, Map.of());
      }
      if (thread == null) {
        stopListening = committer.addCommitListener(this::changed);
        thread = new Thread(this::feed, "runway-sse");
        thread.setDaemon(true);
        thread.start();
      }
      stream = new EventStream(caller, runId, afterSeq, runEnded);
      streams.add(stream);
      streamsByKey.merge(caller.keyId(), 1, Integer::sum);
      streamsByWorkspace.merge(caller.workspaceId(), 1, Integer::sum);
    }
    ctx.status(200);
    ctx.header("Content-Type", "text/event-stream; charset=utf-8");
    ctx.header("Cache-Control", "no-store");
    ctx.header("X-Accel-Buffering", "no"); // nginx: pass each event on at once
    // A stream is not a request in flight: it would hold a place for as long as it is open.
    inFlight.leave(ctx);
    ctx.future(() -> {
      try {
        stream.output = new SseOutput(ctx.res().getOutputStream(), settings.maxBufferedBytes(), bufferedTotal,
            settings.maxBufferedBytesTotal());
      } catch (IOException e) {
        removed(stream);
        throw new UncheckedIOException(e);
      }
      stream.output.ended().whenComplete((done, failure) -> removed(stream));
      stream.output.start();
      stream.write(OPENED);
      stream.ready = true;
      synchronized (lock) {
        if (closed) {
          stream.output.close(); // the server began to stop meanwhile
        }
      }
      changed(Set.of(caller.workspaceId()));
      return stream.output.ended();
    });
  }

  private void removed(EventStream stream) {
    synchronized (lock) {
      if (streams.remove(stream)) {
        streamsByKey.computeIfPresent(stream.caller.keyId(), (key, n) -> n == 1 ? null : n - 1);
        streamsByWorkspace.computeIfPresent(stream.caller.workspaceId(), (ws, n) -> n == 1 ? null : n - 1);
      }
    }
  }

  private void changed(Set<String> workspaces) {
    synchronized (lock) {
      if (dirty.addAll(workspaces)) {
        lock.notifyAll();
      }
    }
  }

  /** The thread's loop: a round reads and writes what is new for streams of changed workspaces, then heartbeats. */
  private void feed() {
    long nextPoll = System.nanoTime() + settings.pollInterval().toNanos();
    long nextKeyCheck = System.nanoTime() + keyCheckNanos;
    long nextHeartbeat = System.nanoTime() + settings.heartbeat().toNanos();
    while (true) {
      Set<String> due;
      List<EventStream> open;
      synchronized (lock) {
        while (!closed && dirty.isEmpty()) {
          long wait = Math.min(nextPoll, nextHeartbeat) - System.nanoTime();
          if (wait <= 0) {
            break;
          }
          try {
            TimeUnit.NANOSECONDS.timedWait(lock, wait);
          } catch (InterruptedException e) {
            return;
          }
        }
        if (closed) {
          return;
        }
        due = new HashSet<>(dirty);
        dirty.clear();
        open = streams.stream().filter(s -> s.ready).toList();
      }
      long now = System.nanoTime();
      if (now - nextPoll >= 0) {
        open.forEach(s -> due.add(s.caller.workspaceId()));
        nextPoll = now + settings.pollInterval().toNanos();
      }
      try {
        Round round = new Round(new HashMap<>(), new HashMap<>());
        for (EventStream stream : open) {
          if (due.contains(stream.caller.workspaceId()) && stream.output.isOpen()) {
            catchUp(stream, round);
          }
        }
        if (now - nextKeyCheck >= 0) {
          endStreamsOfInvalidKeys(open);
          nextKeyCheck = now + keyCheckNanos;
        }
      } catch (RuntimeException e) {
        // The database did not answer, say: the streams stay, and the next round reads again.
        LOG.warn("reading events for open streams failed: {}", e.toString());
        open.forEach(s -> due.add(s.caller.workspaceId()));
        synchronized (lock) {
          dirty.addAll(due);
        }
        sleep(settings.pollInterval());
      }
      nextHeartbeat = heartbeats(open);
    }
  }

  /** Sends what comes after the stream's cursor, at most a few pages this round (the rest next round). */
  private void catchUp(EventStream stream, Round round) {
    for (int page = 0; page < PAGES_PER_ROUND; page++) {
      // Streams at the same place read once (most streams of a workspace are, once caught up).
      List<Event> events = round.reads().computeIfAbsent(stream.nextRead(), this::read);
      for (Event event : events) {
        if (!stream.send(event, round.encoded().computeIfAbsent(event.id(), id -> encode(event)))) {
          return;
        }
      }
      if (events.size() < PAGE) {
        if (stream.runEnded) {
          stream.output.finish(); // once what is queued is written
        }
        return;
      }
    }
    changed(Set.of(stream.caller.workspaceId()));
  }

  private static byte[] encode(Event event) {
    return ("id: " + event.id() + "\nevent: " + event.type() + "\ndata: " + Json.string(EventView.of(event)) + "\n\n")
        .getBytes(StandardCharsets.UTF_8);
  }

  private List<Event> read(Read read) {
    return jdbi.withExtension(EventDao.class, dao -> read.runId() != null
        ? dao.ofRun(read.runId(), read.afterSeq(), PAGE)
        : dao.ofWorkspace(read.workspaceId(), read.afterSeq(), read.projects(), PAGE));
  }

  /** Writes a heartbeat comment on streams quiet for sse.heartbeat_ms; returns when the next one is due. */
  private long heartbeats(List<EventStream> open) {
    long now = System.nanoTime();
    long interval = settings.heartbeat().toNanos();
    long next = now + interval;
    for (EventStream stream : open) {
      if (now - stream.lastWrite >= interval) {
        stream.write(HEARTBEAT);
      }
      next = Math.min(next, stream.lastWrite + interval);
    }
    return next;
  }

  /** Ends the streams of keys revoked or expired since they opened (or deleted). */
  private void endStreamsOfInvalidKeys(List<EventStream> open) {
    Map<String, Boolean> valid = new HashMap<>();
    Instant now = Instant.now();
    for (EventStream stream : open) {
      boolean ok = valid.computeIfAbsent(stream.caller.keyId(), id -> keys.find(id)
          .filter(key -> key.revokedAt() == null && (key.expiresAt() == null || now.isBefore(key.expiresAt())))
          .isPresent());
      if (!ok) {
        stream.output.close();
      }
    }
  }

  private static void sleep(Duration time) {
    try {
      Thread.sleep(time.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Ends every stream (their clients see the response end, and reconnect elsewhere) and the thread. */
  @Override
  public void close() {
    Thread running;
    List<EventStream> open;
    synchronized (lock) {
      closed = true;
      running = thread;
      open = new ArrayList<>(streams);
      lock.notifyAll();
    }
    if (stopListening != null) {
      stopListening.run();
    }
    if (running != null) {
      try {
        running.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    open.stream().filter(s -> s.ready).forEach(s -> s.output.close());
  }

  /** What a round has read, and the events it has encoded, for every stream that needs the same. */
  private record Round(Map<Read, List<Event>> reads, Map<String, byte[]> encoded) {}

  /** What one stream reads next: equal for streams at the same place in the same events. */
  private record Read(String workspaceId, String runId, List<String> projects, long afterSeq) {}

  /** One open stream: whose, of what, and how far it has been sent. */
  private static final class EventStream {
    private final Principal caller;
    private final String runId;
    private boolean runEnded;
    private volatile boolean ready;
    private SseOutput output;
    private long afterSeq;
    private volatile long lastWrite = System.nanoTime();

    EventStream(Principal caller, String runId, long afterSeq, boolean runEnded) {
      this.caller = caller;
      this.runId = runId;
      this.afterSeq = afterSeq;
      this.runEnded = runEnded;
    }

    Read nextRead() {
      return new Read(caller.workspaceId(), runId, runId == null ? caller.projects() : null, afterSeq);
    }

    /**
     * Sends the event; false once the stream is over. A run's stream ends after its run's last
     * event, and what was read with it (events stored in the same commit).
     */
    boolean send(Event event, byte[] encoded) {
      afterSeq = event.seq();
      if (runId != null && RUN_ENDS.contains(event.type())) {
        runEnded = true;
      }
      return write(encoded);
    }

    boolean write(byte[] bytes) {
      lastWrite = System.nanoTime();
      return output.write(bytes);
    }
  }
}
