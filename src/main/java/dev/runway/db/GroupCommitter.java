package dev.runway.db;

import dev.runway.metrics.Metrics;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Group commit: the writes that arrive together run in one transaction and one commit (one disk
 * flush), and each caller is answered only after that commit. A write that fails makes its batch
 * roll back; the others are then committed one by one, so one bad write never fails its neighbours.
 *
 * <p>One writer thread commits one transaction after another, so within this process event
 * sequence numbers follow commit order, which pollers of GET /v1/events rely on. When other
 * processes may write to the same database (PostgreSQL), each transaction also takes a lock per
 * workspace it changes (WorkspaceLocks), in a fixed order, before anything else: the writes of one
 * workspace then commit one after another across instances too, and two instances can never
 * deadlock over a workspace lock and a run row. The lock is an advisory one, which writes nothing.
 *
 * <p>The callers of a committed batch are woken by a thread of their own, so that the writer goes
 * on to the next batch instead of making a system call per caller. A caller need not wait at all:
 * {@link #submit} returns a future instead, which lets a request thread serve other requests until
 * the commit is done.
 *
 * <p>On H2, the writes of workspaces whose events are delivered to webhook endpoints (see
 * {@link Outbox#delivers}) are held back while other writes keep the writer busy, for at most
 * {@link #HOLD_NANOS}, and then committed together: H2 writes every page a commit changed, in
 * full, so each commit that stores deliveries rewrites the outbox's last pages however little it
 * stores (docs/performance.md, "Why H2 gathers the deliveries' writes"). When no other write
 * waits, held writes are committed at once, so a server that is not busy answers them at once.
 */
public final class GroupCommitter implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(GroupCommitter.class);
  private static final int MAX_BATCH = 256;
  /** Longest that a write storing webhook deliveries is held back for others (H2 only; see above). */
  private static final long HOLD_NANOS = 10_000_000;

  private final Jdbi jdbi;
  private final BlockingQueue<Write<?>> queue;
  private final Thread writer;
  private final boolean lockWorkspaces;
  /**
   * The lock keys of the workspaces written to lately (an MD5 each, see WorkspaceLocks.key), used by
   * the writer thread alone: most commits are of the same few workspaces.
   */
  private final Map<String, Long> lockKeys = new LinkedHashMap<>(64, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
      return size() > 4096;
    }
  };
  private final boolean holdDeliveries;
  private final Metrics metrics;
  private final ExecutorService notifier = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "runway-commit-notify");
    t.setDaemon(true);
    return t;
  });
  private final List<Consumer<Set<String>>> commitListeners = new CopyOnWriteArrayList<>();
  private volatile Outbox outbox = Outbox.NONE;
  private volatile boolean closing;

  /** One caller's write; its result is held until the transaction it ran in has committed. */
  private static final class Write<T> {
    private final Collection<String> workspaces;
    private final Function<Tx, T> work;
    private final CompletableFuture<T> done = new CompletableFuture<>();
    private T result;

    Write(Collection<String> workspaces, Function<Tx, T> work) {
      this.workspaces = workspaces;
      this.work = work;
    }

    void run(Tx tx) {
      result = work.apply(tx);
    }

    void committed() {
      done.complete(result);
    }

    void failed(RuntimeException e) {
      done.completeExceptionally(e);
    }
  }

  /**
   * {@code lockWorkspaces}: whether other processes may write to the database (see above);
   * {@code holdDeliveries}: whether writes that store webhook deliveries are gathered (H2, see
   * above); each transaction's time and number of writes are counted in {@code metrics}, and so is
   * what its writes count there (see {@link Tx#afterCommit}).
   */
  public GroupCommitter(Jdbi jdbi, boolean lockWorkspaces, boolean holdDeliveries, int queueCapacity,
      Metrics metrics) {
    this.jdbi = jdbi;
    this.queue = new ArrayBlockingQueue<>(queueCapacity);
    this.lockWorkspaces = lockWorkspaces;
    this.holdDeliveries = holdDeliveries;
    this.metrics = metrics;
    metrics.watchCommitQueue(queue::size);
    this.writer = new Thread(this::writeLoop, "runway-commit");
    writer.setDaemon(true);
    writer.start();
  }

  /**
   * Runs {@code work} in a transaction shared with other callers' writes and returns its result
   * once committed. Throws what the work threw, {@link OverloadedException} when too many writes
   * wait already, or the database's error.
   */
  public <T> T commit(String workspaceId, Function<Tx, T> work) {
    return commit(List.of(workspaceId), work);
  }

  /** Like {@link #commit(String, Function)}, for a write that changes several workspaces. */
  public <T> T commit(Collection<String> workspaceIds, Function<Tx, T> work) {
    try {
      return enqueue(workspaceIds, work).get();
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException runtime) {
        throw runtime;
      }
      throw new IllegalStateException(e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new OverloadedException("interrupted while waiting for the commit");
    }
  }

  /**
   * Like {@link #commit(String, Function)}, without waiting: the future completes once the write
   * is committed, or fails with what the work threw or the database's error. It completes on the
   * thread that wakes all callers, so what follows it must not block there: hand it to an executor
   * of its own ({@code thenAcceptAsync}). Throws {@link OverloadedException} at once when too many
   * writes wait already.
   */
  public <T> CompletableFuture<T> submit(String workspaceId, Function<Tx, T> work) {
    return enqueue(List.of(workspaceId), work).copy();
  }

  private <T> CompletableFuture<T> enqueue(Collection<String> workspaceIds, Function<Tx, T> work) {
    Write<T> write = new Write<>(workspaceIds, work);
    if (closing || !queue.offer(write)) {
      throw new OverloadedException(closing ? "the server is stopping" : "too many writes are waiting");
    }
    return write.done;
  }

  private void writeLoop() {
    List<Write<?>> arrived = new ArrayList<>(MAX_BATCH);
    List<Write<?>> batch = new ArrayList<>(MAX_BATCH);
    Held held = new Held();
    while (true) {
      Write<?> first;
      try {
        // With writes held, nothing else waiting means they go now.
        first = held.isEmpty() ? queue.poll(50, TimeUnit.MILLISECONDS) : queue.poll();
      } catch (InterruptedException e) {
        return;
      }
      if (first == null) {
        if (!held.isEmpty()) {
          commitBatch(held.release());
          continue;
        }
        if (closing) {
          return;
        }
        continue;
      }
      arrived.add(first);
      queue.drainTo(arrived, MAX_BATCH - 1);
      for (Write<?> w : arrived) {
        if (held.holds(w) || holdDeliveries && delivers(w)) {
          held.add(w);
        } else {
          batch.add(w);
        }
      }
      arrived.clear();
      if (batch.isEmpty() || held.due() || closing) {
        batch.addAll(held.release());
      }
      if (!batch.isEmpty()) {
        commitBatch(batch);
        batch.clear();
      }
    }
  }

  private boolean delivers(Write<?> w) {
    for (String workspaceId : w.workspaces) {
      if (outbox.delivers(workspaceId)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Writes held back to be committed together (see the class comment), in the order they came. A
   * later write of a workspace that has one held is held too, so that it never commits first.
   */
  private static final class Held {
    private final List<Write<?>> writes = new ArrayList<>();
    private final Set<String> workspaces = new HashSet<>();
    private long since;

    boolean isEmpty() {
      return writes.isEmpty();
    }

    boolean holds(Write<?> w) {
      if (writes.isEmpty()) {
        return false;
      }
      for (String workspaceId : w.workspaces) {
        if (workspaces.contains(workspaceId)) {
          return true;
        }
      }
      return false;
    }

    void add(Write<?> w) {
      if (writes.isEmpty()) {
        since = System.nanoTime();
      }
      writes.add(w);
      workspaces.addAll(w.workspaces);
    }

    /** Whether the first has waited long enough, or enough wait to make a batch. */
    boolean due() {
      return !writes.isEmpty() && (System.nanoTime() - since >= HOLD_NANOS || writes.size() >= MAX_BATCH / 2);
    }

    List<Write<?>> release() {
      List<Write<?>> released = new ArrayList<>(writes);
      writes.clear();
      workspaces.clear();
      return released;
    }
  }

  private void commitBatch(List<Write<?>> batch) {
    try {
      List<Runnable> afterCommit = inTransaction(batch.size(), tx -> {
        lockWorkspaces(tx, batch);
        for (Write<?> w : batch) {
          w.run(tx);
        }
      });
      List<Write<?>> committed = List.copyOf(batch);
      notifier.execute(() -> {
        runAll(afterCommit);
        committed.forEach(Write::committed);
        tellListeners(committed);
      });
      return;
    } catch (RuntimeException e) {
      if (batch.size() == 1 || SqlErrors.isUnavailable(e)) {
        batch.forEach(w -> w.failed(e));
        return;
      }
    }
    // Some write failed and took the batch with it: commit each on its own.
    for (Write<?> w : batch) {
      try {
        List<Runnable> afterCommit = inTransaction(1, tx -> {
          lockWorkspaces(tx, List.of(w));
          w.run(tx);
        });
        runAll(afterCommit);
        w.committed();
        notifier.execute(() -> tellListeners(List.of(w)));
      } catch (RuntimeException e) {
        w.failed(e);
      }
    }
  }

  /** Where the transactions' events are published from now on (see {@link Outbox}). */
  public void useOutbox(Outbox outbox) {
    this.outbox = outbox;
  }

  /**
   * Calls {@code listener} on the thread that wakes committers, after each commit, with the
   * workspaces its writes changed: for what follows new events (live streams, webhook deliveries)
   * instead of polling. It must return quickly and never block. Returns what stops the calls.
   */
  public Runnable addCommitListener(Consumer<Set<String>> listener) {
    commitListeners.add(listener);
    return () -> commitListeners.remove(listener);
  }

  private static void runAll(List<Runnable> afterCommit) {
    for (Runnable task : afterCommit) {
      try {
        task.run();
      } catch (RuntimeException e) {
        LOG.error("a task after a commit failed", e);
      }
    }
  }

  private void tellListeners(List<Write<?>> committed) {
    if (commitListeners.isEmpty()) {
      return;
    }
    Set<String> workspaces = new HashSet<>();
    committed.forEach(w -> workspaces.addAll(w.workspaces));
    for (Consumer<Set<String>> listener : commitListeners) {
      try {
        listener.accept(workspaces);
      } catch (RuntimeException e) {
        LOG.error("a commit listener failed", e);
      }
    }
  }

  private void lockWorkspaces(Tx tx, List<Write<?>> writes) {
    if (!lockWorkspaces) {
      return;
    }
    SortedSet<Long> keys = new TreeSet<>();
    writes.forEach(w -> w.workspaces.forEach(id -> keys.add(lockKeys.computeIfAbsent(id, WorkspaceLocks::key))));
    keys.forEach(key -> WorkspaceLocks.lock(tx.connection(), key));
  }

  /**
   * Runs the transaction, again (up to 3 times, after a short random pause) when the database
   * broke it off to resolve a deadlock or a serialization conflict with another writer: another
   * Runway instance on the same PostgreSQL. Runs what the committed transaction's writes asked to
   * run on its commit ({@link Tx#onCommit}) and returns what they asked to run after it (an attempt
   * broken off asked for nothing). The committed attempt's time
   * is counted in the metrics with its number of {@code writes}.
   */
  private List<Runnable> inTransaction(int writes, Consumer<Tx> body) {
    for (int attempt = 1; ; attempt++) {
      try {
        long started = System.nanoTime();
        Tx[] made = new Tx[1];
        Tx committed;
        try {
          committed = jdbi.inTransaction(h -> {
            try (Tx tx = new Tx(h, outbox, metrics)) {
              made[0] = tx;
              body.accept(tx);
              tx.runBeforeCommit();
              tx.flush();
              return tx;
            }
          });
        } catch (RuntimeException e) {
          if (made[0] != null) {
            runAll(made[0].onRollbackTasks());
          }
          throw e;
        }
        metrics.committed(writes, System.nanoTime() - started);
        runAll(committed.onCommitTasks());
        return committed.afterCommitTasks();
      } catch (RuntimeException e) {
        if (attempt == 3 || !SqlErrors.isDeadlock(e)) {
          throw e;
        }
        try {
          Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextLong(1, 5 * attempt));
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          throw e;
        }
      }
    }
  }

  /** Stops taking writes, commits those already waiting, then returns. */
  @Override
  public void close() {
    closing = true;
    try {
      writer.join(30_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    notifier.shutdown();
    try {
      notifier.awaitTermination(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    // A write offered just as the writer left would wait forever: refuse it instead.
    for (Write<?> late = queue.poll(); late != null; late = queue.poll()) {
      late.failed(new OverloadedException("the server stopped before this write"));
    }
    LOG.info("group commit stopped; nothing is left waiting");
  }
}
