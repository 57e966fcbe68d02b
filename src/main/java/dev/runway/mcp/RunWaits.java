package dev.runway.mcp;

import dev.runway.auth.Principal;
import dev.runway.db.GroupCommitter;
import dev.runway.run.Run;
import dev.runway.run.RunService;
import dev.runway.run.RunStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls waiting for their runs to end, and the one thread that finds the ends: it looks when a
 * commit of this instance touched a waiting run's workspace, and every mcp.poll_interval_ms for
 * commits of other instances. A waiting call holds no thread; its future completes with the run,
 * ended, or as it stands when the call's wait is over (or this instance stops).
 */
public final class RunWaits implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RunWaits.class);
  private static final List<String> ENDED = Arrays.stream(RunStatus.values()).filter(RunStatus::isEnded)
      .map(RunStatus::wireName).toList();
  /** Ids in one look-up. */
  private static final int CHUNK = 100;

  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final RunService runs;
  private final McpSettings settings;
  private final Object lock = new Object();
  // Guarded by lock:
  private final Map<String, List<Waiter>> byWorkspace = new HashMap<>();
  private final Map<String, Integer> byKey = new HashMap<>();
  private final Set<String> dirty = new HashSet<>();
  private int waiting;
  private Thread thread;
  private Runnable stopListening;
  private boolean closed;

  public RunWaits(Jdbi jdbi, GroupCommitter committer, RunService runs, McpSettings settings) {
    this.jdbi = jdbi;
    this.committer = committer;
    this.runs = runs;
    this.settings = settings;
  }

  private static final class Waiter {
    final Principal caller;
    final Run started;
    final long deadline;
    final CompletableFuture<Run> done = new CompletableFuture<>();

    Waiter(Principal caller, Run started, long deadline) {
      this.caller = caller;
      this.started = started;
      this.deadline = deadline;
    }
  }

  /**
   * The run, once it has ended or {@code wait} is over: read at once, and if it has not ended yet,
   * looked at again whenever it may have. {@code beforeWaiting} runs (on this thread) only when
   * the call is going to wait. Past mcp.max_waiting_calls (for the instance, or a tenth for one key)
   * the run is answered as it stands.
   */
  public CompletableFuture<Run> until(Principal caller, String runId, Duration wait, Runnable beforeWaiting) {
    Run now = runs.get(caller, runId);
    if (now.isEnded() || wait.isZero()) {
      return CompletableFuture.completedFuture(now);
    }
    Waiter waiter = new Waiter(caller, now, System.nanoTime() + wait.toNanos());
    synchronized (lock) {
      int ofKey = byKey.getOrDefault(caller.keyId(), 0);
      if (closed || waiting >= settings.maxWaitingCalls() || ofKey >= settings.maxWaitingCallsPerKey()) {
        return CompletableFuture.completedFuture(now);
      }
      if (thread == null) {
        stopListening = committer.addCommitListener(this::changed);
        thread = new Thread(this::watch, "runway-mcp-waits");
        thread.setDaemon(true);
        thread.start();
      }
      byWorkspace.computeIfAbsent(caller.workspaceId(), ws -> new ArrayList<>()).add(waiter);
      byKey.merge(caller.keyId(), 1, Integer::sum);
      waiting++;
      // The run may have ended between the read above and now, with no commit left to tell of it.
      dirty.add(caller.workspaceId());
      lock.notifyAll();
    }
    beforeWaiting.run();
    return waiter.done;
  }

  /** Calls waiting now (for tests and metrics). */
  public int waiting() {
    synchronized (lock) {
      return waiting;
    }
  }

  private void changed(Set<String> workspaces) {
    synchronized (lock) {
      boolean any = false;
      for (String ws : workspaces) {
        if (byWorkspace.containsKey(ws)) {
          any |= dirty.add(ws);
        }
      }
      if (any) {
        lock.notifyAll();
      }
    }
  }

  private void watch() {
    long nextPoll = System.nanoTime() + settings.pollInterval().toNanos();
    while (true) {
      Map<String, List<Waiter>> look = new HashMap<>();
      List<Waiter> over = new ArrayList<>();
      synchronized (lock) {
        while (!closed && dirty.isEmpty()) {
          long wake = Math.min(nextPoll, earliestDeadline());
          long wait = wake - System.nanoTime();
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
        long now = System.nanoTime();
        if (now >= nextPoll) {
          dirty.addAll(byWorkspace.keySet());
          nextPoll = now + settings.pollInterval().toNanos();
        }
        for (Map.Entry<String, List<Waiter>> e : byWorkspace.entrySet()) {
          for (Waiter w : e.getValue()) {
            if (w.deadline - now <= 0) {
              over.add(w);
            } else if (dirty.contains(e.getKey())) {
              look.computeIfAbsent(e.getKey(), ws -> new ArrayList<>()).add(w);
            }
          }
        }
        dirty.clear();
        over.forEach(this::remove);
      }
      for (Waiter w : over) {
        finish(w);
      }
      look.forEach(this::lookAt);
    }
  }

  /** Finishes the waiters of {@code workspaceId} whose runs have ended. */
  private void lookAt(String workspaceId, List<Waiter> waiters) {
    for (int from = 0; from < waiters.size(); from += CHUNK) {
      List<Waiter> chunk = waiters.subList(from, Math.min(waiters.size(), from + CHUNK));
      Set<String> ended;
      try {
        ended = new HashSet<>(jdbi.withExtension(WaitedRunDao.class,
            dao -> dao.ended(workspaceId, chunk.stream().map(w -> w.started.id()).toList(), ENDED)));
      } catch (RuntimeException e) {
        LOG.warn("could not look at the runs MCP calls wait for in workspace {}; looking again at the next poll",
            workspaceId, e);
        return;
      }
      for (Waiter w : chunk) {
        if (ended.contains(w.started.id())) {
          synchronized (lock) {
            remove(w);
          }
          finish(w);
        }
      }
    }
  }

  /** Completes the waiter with its run as it is now. */
  private void finish(Waiter w) {
    try {
      w.done.complete(runs.get(w.caller, w.started.id()));
    } catch (RuntimeException e) {
      w.done.completeExceptionally(e);
    }
  }

  private void remove(Waiter w) {
    List<Waiter> of = byWorkspace.get(w.caller.workspaceId());
    if (of != null && of.remove(w)) {
      if (of.isEmpty()) {
        byWorkspace.remove(w.caller.workspaceId());
      }
      byKey.computeIfPresent(w.caller.keyId(), (k, n) -> n == 1 ? null : n - 1);
      waiting--;
    }
  }

  private long earliestDeadline() {
    long earliest = Long.MAX_VALUE;
    for (List<Waiter> of : byWorkspace.values()) {
      for (Waiter w : of) {
        earliest = earliest == Long.MAX_VALUE || w.deadline - earliest < 0 ? w.deadline : earliest;
      }
    }
    return earliest;
  }

  /** Answers every waiting call with its run as it was last read: the instance stops (the clients poll). */
  @Override
  public void close() {
    List<Waiter> all = new ArrayList<>();
    synchronized (lock) {
      closed = true;
      byWorkspace.values().forEach(all::addAll);
      byWorkspace.clear();
      byKey.clear();
      waiting = 0;
      if (stopListening != null) {
        stopListening.run();
      }
      lock.notifyAll();
    }
    all.forEach(w -> w.done.complete(w.started));
  }
}
