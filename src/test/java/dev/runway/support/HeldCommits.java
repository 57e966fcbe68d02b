package dev.runway.support;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The group-commit thread held by a write that waits: every write behind it (a run start, say) waits
 * too, holding what a write in progress holds, until {@link #release}. For tests of what waiting
 * requests hold and what they leave free.
 */
public final class HeldCommits implements AutoCloseable {
  private final CountDownLatch release = new CountDownLatch(1);
  private final CountDownLatch held = new CountDownLatch(1);
  private final ExecutorService thread = Executors.newSingleThreadExecutor();
  private final Future<Object> holder;

  private HeldCommits(Api api) {
    holder = thread.submit(() -> api.services().database().committer().commit(api.workspace, tx -> {
      held.countDown();
      try {
        release.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return null;
    }));
  }

  /** Returns once the group-commit thread is inside the held write (a busy machine may take a while). */
  public static HeldCommits on(Api api) {
    HeldCommits commits = new HeldCommits(api);
    try {
      if (!commits.held.await(30, TimeUnit.SECONDS)) {
        commits.close();
        throw new IllegalStateException("the group-commit thread did not take the held write within 30 s");
      }
    } catch (InterruptedException e) {
      commits.close();
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    return commits;
  }

  /** Lets the held write, and every write behind it, commit; returns once the held one has. */
  public void release() throws Exception {
    release.countDown();
    holder.get(10, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    release.countDown();
    thread.shutdownNow();
  }
}
