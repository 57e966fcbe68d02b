package dev.runway.engine;

import dev.runway.core.Ids;
import dev.runway.db.GroupCommitter;
import dev.runway.core.Time;
import dev.runway.run.Run;
import dev.runway.run.RunDao;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
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
  /** Due runs read and moved per round. */
  private static final int BATCH = 256;

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
    this.runner = new StepRunner(committer, settings,
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
        if (!claimAndSubmit(settings.workers() - busy.get())) {
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

  /**
   * Takes the due runs that no live lease holds and, in one group commit, saves each one's moves
   * that need no waiting; a run that stands at an http call is saved with this instance's lease
   * and handed to a worker. Every save is conditional on the run's version, so of two instances
   * (or an engine and a caller) only one move stands. Returns true when more may be due at once.
   */
  private boolean claimAndSubmit(int free) {
    Instant now = Time.now();
    // Enough rows for the free workers and a batch of moves without calls; not more, since every
    // row read is parsed, and most wake-ups come from a worker that just finished one call.
    int limit = Math.min(BATCH, Math.max(32, free * 4));
    List<Run> due = jdbi.withExtension(RunDao.class, dao -> dao.dueRuns(now, limit));
    if (due.isEmpty()) {
      return false;
    }
    List<RunStateMachine> moves = new ArrayList<>();
    List<Run> saves = new ArrayList<>();
    List<Boolean> calls = new ArrayList<>();
    int callsLeft = free;
    for (Run run : due) {
      RunStateMachine m = new RunStateMachine(run, now);
      boolean call = runner.planInstantMoves(m);
      if (call && callsLeft == 0) {
        continue; // every worker is busy: the run stays due for the next round
      }
      callsLeft -= call ? 1 : 0;
      moves.add(m);
      saves.add(call ? runner.leaseForCall(m) : m.toRun(null, null));
      calls.add(call);
    }
    if (saves.isEmpty()) {
      return false;
    }
    Set<String> workspaces = new java.util.HashSet<>();
    saves.forEach(r -> workspaces.add(r.workspaceId()));
    List<Run> toCall = committer.commit(workspaces, tx -> {
      RunDao dao = tx.dao(RunDao.class);
      List<Run> won = new ArrayList<>();
      for (int i = 0; i < saves.size(); i++) {
        if (dao.saveProgress(saves.get(i)) == 1) {
          EventDao.insert(tx, moves.get(i).events());
          if (calls.get(i)) {
            won.add(saves.get(i));
          }
        }
      }
      return won;
    });
    for (Run run : toCall) {
      busy.incrementAndGet();
      workers.submit(() -> work(run));
    }
    // As many saved as read: more may be due at once. Otherwise wait for a wake-up or the next poll.
    return saves.size() == limit;
  }

  private void work(Run run) {
    try {
      runner.call(run);
    } catch (RuntimeException e) {
      // The lease runs out and the run is tried again then.
      LOG.warn("engine failed on run {}: {}", run.id(), e.toString());
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
