package dev.runway.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.core.Ids;
import dev.runway.metrics.Metrics;
import dev.runway.run.Event;
import dev.runway.run.EventDao;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.function.Supplier;

/** Group commit: writes that share a transaction, and rows sent in one batch just before its commit. */
class GroupCommitterTest {

  /**
   * Rows added through Tx.batch reach the database only at the commit, so a bad row fails the
   * whole batch there. The committer must then commit the others one by one, and fail only the
   * write that added the bad row, with the database's own error. What the writes asked to run after
   * the commit (Tx.afterCommit) runs once for each write committed, before its writer is answered,
   * and never for the failed one nor for the batch that rolled back; so does what they asked to run
   * on the commit (Tx.onCommit), before that. What they asked to run on a rollback (Tx.onRollback)
   * runs for each write of a batch that rolled back (the failed write's and those batched with it),
   * and for the failed write alone.
   */
  @BothDatabases
  void a_row_that_fails_at_commit_fails_only_its_own_write(Api api) throws Exception {
    GroupCommitter committer = api.services().database().committer();
    String runId = Ids.newId("run");
    Event taken = event(api, runId, Ids.newId("evt"));
    committer.commit(api.workspace, tx -> insert(tx, taken));

    List<String> goodIds = new ArrayList<>();
    List<String> afterCommit = new CopyOnWriteArrayList<>();
    List<String> onCommit = new CopyOnWriteArrayList<>();
    List<String> onRollback = new CopyOnWriteArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(17);
    try {
      CountDownLatch queued = new CountDownLatch(1);
      // Holds a commit thread until every write below waits, so they tend to share one batch.
      Future<Object> blocker = pool.submit(() -> committer.commit(api.workspace, tx -> {
        await(queued);
        return null;
      }));
      List<Future<Object>> writes = new ArrayList<>();
      for (int i = 0; i < 16; i++) {
        Event e = i == 7 ? taken : event(api, runId, Ids.newId("evt"));
        if (i != 7) {
          goodIds.add(e.id());
        }
        writes.add(pool.submit(() -> committer.commit(api.workspace, tx -> {
          tx.afterCommit(() -> afterCommit.add(onCommit.contains(e.id()) ? e.id() : "before its onCommit: " + e.id()));
          tx.onCommit(() -> onCommit.add(e.id()));
          tx.onRollback(() -> onRollback.add(e.id()));
          return insert(tx, e);
        })));
      }
      Thread.sleep(200);
      queued.countDown();
      blocker.get(10, TimeUnit.SECONDS);

      for (int i = 0; i < writes.size(); i++) {
        Future<Object> write = writes.get(i);
        if (i == 7) {
          ExecutionException failed = assertThrows(ExecutionException.class, () -> write.get(10, TimeUnit.SECONDS));
          assertTrue(SqlErrors.isUniqueViolation(failed.getCause()), failed.getCause()::toString);
        } else {
          assertEquals("ok", write.get(10, TimeUnit.SECONDS));
          assertTrue(afterCommit.contains(goodIds.get(i < 7 ? i : i - 1)), "run before the writer is answered");
        }
      }
    } finally {
      pool.shutdownNow();
    }
    List<String> stored = api.jdbi().withHandle(h -> h.createQuery("SELECT id FROM event WHERE run_id = :run")
        .bind("run", runId).mapTo(String.class).list());
    assertEquals(16, stored.size(), "the first event and the 15 good ones: " + stored);
    assertTrue(stored.containsAll(goodIds), "every good write is stored: " + stored);
    assertEquals(1, stored.stream().filter(taken.id()::equals).count());
    assertEquals(goodIds.size(), afterCommit.size(), "once per committed write: " + afterCommit);
    assertTrue(afterCommit.containsAll(goodIds));
    assertEquals(goodIds.size(), onCommit.size(), "once per committed write: " + onCommit);
    assertTrue(onCommit.containsAll(goodIds));
    long failedRollbacks = onRollback.stream().filter(taken.id()::equals).count();
    assertTrue(failedRollbacks == 1 || failedRollbacks == 2, "alone, and with its batch if it had one: " + onRollback);
    long batchedRollbacks = onRollback.size() - failedRollbacks;
    assertEquals(failedRollbacks == 2, batchedRollbacks > 0, "its batch-mates rolled back with it: " + onRollback);
    for (String id : goodIds) {
      assertTrue(onRollback.stream().filter(id::equals).count() <= 1, "only with the failed batch: " + onRollback);
    }
  }

  /**
   * Writes of a workspace whose events go to webhook endpoints (Outbox.delivers) are held back
   * while other writes keep the writer busy, then committed together in one transaction, and never
   * overtaken by a later write of their own workspace. Held writes are not starved: under a steady
   * stream of other writes they commit once held long enough, and with nothing else waiting they
   * commit at once. Shown with a committer of its own (the server's gathers on H2 only).
   */
  @BothDatabases
  void writes_that_store_deliveries_are_gathered_and_never_starved(Api api) throws Exception {
    // How many more times the outbox says that workspace "hooked" is delivered.
    AtomicInteger yeses = new AtomicInteger(1);
    GroupCommitter committer = new GroupCommitter(api.jdbi(), false, true, 1_000, Metrics.off());
    committer.useOutbox(new Outbox() {
      @Override
      public void publish(Tx tx, String ws, String eventId, String type, Instant at, Supplier<String> data) {}

      @Override
      public boolean delivers(String workspaceId) {
        return workspaceId.equals("hooked") && yeses.getAndDecrement() > 0;
      }
    });
    // Each write notes the order it ran in and the transaction it shared.
    List<String> ran = new CopyOnWriteArrayList<>();
    Map<String, Tx> txOf = new ConcurrentHashMap<>();
    Function<String, Function<Tx, String>> note = name -> tx -> {
      ran.add(name);
      txOf.put(name, tx);
      return name;
    };
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      CountDownLatch release = new CountDownLatch(1);
      Future<String> blocker = pool.submit(() -> committer.commit("other", tx -> {
        await(release);
        return "blocker";
      }));
      Thread.sleep(100); // the writer now runs the blocker; what follows waits behind it
      List<CompletableFuture<String>> waiting = new ArrayList<>();
      waiting.add(committer.submit("hooked", note.apply("held-1")));
      waiting.add(committer.submit("other", note.apply("other-1")));
      // Asked once only: "held-2" is held because "held-1" of its workspace is.
      waiting.add(committer.submit("hooked", note.apply("held-2")));
      waiting.add(committer.submit("other", note.apply("other-2")));
      release.countDown();
      assertEquals("blocker", blocker.get(10, TimeUnit.SECONDS));
      for (CompletableFuture<String> w : waiting) {
        w.get(10, TimeUnit.SECONDS);
      }
      assertEquals(List.of("other-1", "other-2", "held-1", "held-2"), ran, "the others first, the held in their order");
      assertTrue(txOf.get("held-1") == txOf.get("held-2"), "the held writes share one transaction");
      assertTrue(txOf.get("held-1") != txOf.get("other-1"), "and not the others'");

      // Nothing else waiting: a held write is committed, not left waiting for others.
      yeses.set(Integer.MAX_VALUE);
      assertEquals("alone", committer.submit("hooked", note.apply("alone")).get(10, TimeUnit.SECONDS));

      // Other writes that come faster than they are committed (the queue is never empty): a held
      // write still commits, once it has been held long enough.
      AtomicBoolean streaming = new AtomicBoolean(true);
      Future<?> stream = pool.submit(() -> {
        while (streaming.get()) {
          try {
            committer.submit("other", tx -> {
              LockSupport.parkNanos(100_000); // slower than the stream
              return "stream";
            });
          } catch (OverloadedException full) {
            Thread.onSpinWait();
          }
        }
        return null;
      });
      Thread.sleep(100);
      CompletableFuture<String> heldInStream = null;
      while (heldInStream == null) { // the stream keeps the queue full: wait for a place in it
        try {
          heldInStream = committer.submit("hooked", note.apply("held-in-stream"));
        } catch (OverloadedException full) {
          Thread.onSpinWait();
        }
      }
      assertEquals("held-in-stream", heldInStream.get(10, TimeUnit.SECONDS));
      streaming.set(false);
      stream.get(10, TimeUnit.SECONDS);
    } finally {
      pool.shutdownNow();
      committer.close();
    }
  }

  private static Object insert(Tx tx, Event e) {
    EventDao.insert(tx, List.of(e));
    return "ok";
  }

  private static Event event(Api api, String runId, String id) {
    return new Event(null, id, api.workspace, runId, "hello", null, "demo", "test.event", "test", null, null, "{}",
        Instant.now());
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
