package dev.runway.engine;

import dev.runway.core.Ids;
import dev.runway.db.GroupCommitter;
import dev.runway.run.RunDao;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs workflow steps. Its state lives in the database: a dispatcher claims due runs with a lease
 * (a conditional UPDATE, so several instances on one database never take the same run), and
 * workers advance them. A crashed instance's leases run out and other instances take over.
 */
public final class Engine implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Engine.class);

  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final EngineSettings settings;
  private final String owner = Ids.newId("eng");
  private final StepRunner runner;
  private final ExecutorService workers;
  private final Thread dispatcher;
  private final Semaphore wakeUp = new Semaphore(0);
  private final AtomicInteger busy = new AtomicInteger();
  private volatile boolean running = true;

  private Engine(Jdbi jdbi, GroupCommitter committer, EngineSettings settings) {
    this.jdbi = jdbi;
    this.committer = committer;
    this.settings = settings;
    this.runner = new StepRunner(jdbi, committer, settings,
        new HttpStepCaller(settings.allowPrivateNetworks(), settings.maxResponseBytes()), owner);
    AtomicInteger n = new AtomicInteger();
    this.workers = Executors.newFixedThreadPool(settings.workers(), r -> {
      Thread t = new Thread(r, "runway-engine-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    this.dispatcher = new Thread(this::dispatch, "runway-engine-dispatcher");
    this.dispatcher.setDaemon(true);
  }

  /**
   * Starts the engine. {@code singleProcess} (H2) means no other instance shares the database, so
   * leases left by a crash of this one are dropped at once instead of waiting for them to run out.
   */
  public static Engine start(Jdbi jdbi, GroupCommitter committer, EngineSettings settings, boolean singleProcess) {
    Engine engine = new Engine(jdbi, committer, settings);
    if (singleProcess) {
      int released = jdbi.withExtension(RunDao.class, RunDao::releaseAllLeases);
      if (released > 0) {
        LOG.info("took back {} runs claimed before the last stop", released);
      }
    }
    engine.dispatcher.start();
    LOG.info("engine {} started with {} workers", engine.owner, settings.workers());
    return engine;
  }

  /** Tells the engine a run is due now, so it looks before the next poll. */
  public void wake() {
    wakeUp.release();
  }

  private void dispatch() {
    while (running) {
      try {
        int free = settings.workers() - busy.get();
        int claimed = free > 0 ? claimAndSubmit(free) : 0;
        if (claimed == 0 || claimed < free) {
          wakeUp.tryAcquire(settings.pollInterval().toMillis(), TimeUnit.MILLISECONDS);
          wakeUp.drainPermits();
        }
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        LOG.warn("engine could not claim runs: {}", e.getMessage());
        sleepQuietly();
      }
    }
  }

  private int claimAndSubmit(int free) {
    Instant now = Instant.now();
    List<String> due = jdbi.withExtension(RunDao.class, dao -> dao.dueRuns(now, free * 4));
    if (due.isEmpty()) {
      return 0;
    }
    Instant until = now.plus(settings.lease());
    // One commit for all the claims; each is a conditional UPDATE that only one instance can win.
    List<String> mine = committer.commit(h -> {
      RunDao dao = h.attach(RunDao.class);
      List<String> won = new java.util.ArrayList<>();
      for (String runId : due) {
        if (won.size() < free && dao.claim(runId, owner, until, now) == 1) {
          won.add(runId);
        }
      }
      return won;
    });
    for (String runId : mine) {
      busy.incrementAndGet();
      workers.submit(() -> work(runId));
    }
    return mine.size();
  }

  private void work(String runId) {
    try {
      runner.advance(runId);
    } catch (RuntimeException e) {
      // The lease runs out and the run is tried again then.
      LOG.warn("engine failed on run {}: {}", runId, e.toString());
    } finally {
      busy.decrementAndGet();
      wakeUp.release();
    }
  }

  private void sleepQuietly() {
    try {
      Thread.sleep(settings.pollInterval().toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops claiming, lets running steps finish for a while, then stops. Unfinished claims run out. */
  @Override
  public void close() {
    running = false;
    wakeUp.release();
    try {
      // The dispatcher first: once it has stopped, no claim can arrive at a closed worker pool.
      dispatcher.join(5_000);
      workers.shutdown();
      if (!workers.awaitTermination(10, TimeUnit.SECONDS)) {
        workers.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      workers.shutdownNow();
    }
  }
}
