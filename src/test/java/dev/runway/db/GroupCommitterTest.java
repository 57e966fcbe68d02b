package dev.runway.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.core.Ids;
import dev.runway.engine.Event;
import dev.runway.engine.EventDao;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Group commit: writes that share a transaction, and rows sent in one batch just before its commit. */
class GroupCommitterTest {

  /**
   * Rows added through Tx.batch reach the database only at the commit, so a bad row fails the
   * whole batch there. The committer must then commit the others one by one, and fail only the
   * write that added the bad row, with the database's own error. What the writes asked to run after
   * the commit (Tx.afterCommit) runs once for each write committed, before its writer is answered,
   * and never for the failed one nor for the batch that rolled back.
   */
  @BothDatabases
  void a_row_that_fails_at_commit_fails_only_its_own_write(Api api) throws Exception {
    GroupCommitter committer = api.services().database().committer();
    String runId = Ids.newId("run");
    Event taken = event(api, runId, Ids.newId("evt"));
    committer.commit(api.workspace, tx -> insert(tx, taken));

    List<String> goodIds = new ArrayList<>();
    List<String> afterCommit = new java.util.concurrent.CopyOnWriteArrayList<>();
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
          tx.afterCommit(() -> afterCommit.add(e.id()));
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
