package dev.runway.trigger;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.db.Tx;
import dev.runway.run.RunStarts;
import dev.runway.workflow.Schedule;
import dev.runway.workflow.ScheduleDao;
import dev.runway.workflow.Trigger;
import dev.runway.workflow.Workflow;
import dev.runway.workflow.WorkflowDao;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts the runs of workflow schedules (see {@link Schedule}) when their times come. Every
 * instance runs one; they need no lease between them: a due schedule is fired in the commit that
 * stores its run, by an UPDATE of its row conditional on the time it was read at (see
 * {@link ScheduleDao#move}), so of two instances that read it, one moves it and starts the run and
 * the other's UPDATE matches nothing and starts none. A crash before that commit leaves the
 * schedule due, for the next round of any instance. The run's id derives from the workflow, the
 * trigger and the time, so a time can make one run only.
 *
 * <p>A time found more than {@link #MISSED_AFTER} late (the instances were down) was missed: a
 * schedule with {@code missed: run_once} then starts one run, for the latest time missed, and one
 * with {@code skip} none; either way it goes on from the next time to come.
 */
public final class Scheduler implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Scheduler.class);
  /** How late a scheduled time may be found and still be run as on time. */
  public static final Duration MISSED_AFTER = Duration.ofSeconds(60);
  /** Schedules read per round at most, and fired per commit at most. */
  private static final int ROUND = 1_000;
  private static final int PER_COMMIT = 50;

  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final RunStarts runs;
  private final Duration pollInterval;
  private final AtomicLong fired = new AtomicLong();
  private final Semaphore stop = new Semaphore(0);
  private final Thread thread;
  private volatile boolean running = true;

  private Scheduler(Jdbi jdbi, GroupCommitter committer, RunStarts runs, Duration pollInterval) {
    this.jdbi = jdbi;
    this.committer = committer;
    this.runs = runs;
    this.pollInterval = pollInterval;
    this.thread = new Thread(this::loop, "runway-schedules");
    thread.setDaemon(true);
  }

  /** Starts firing the schedules that are due, looking every {@code pollInterval}. */
  public static Scheduler start(Jdbi jdbi, GroupCommitter committer, RunStarts runs, Duration pollInterval) {
    Scheduler scheduler = new Scheduler(jdbi, committer, runs, pollInterval);
    scheduler.thread.start();
    return scheduler;
  }

  /** Made without its thread: a test calls {@link #round} with the time it chooses. */
  public static Scheduler idle(Jdbi jdbi, GroupCommitter committer, RunStarts runs) {
    Scheduler scheduler = new Scheduler(jdbi, committer, runs, Duration.ofDays(1));
    scheduler.running = false;
    return scheduler;
  }

  /** The runs this scheduler started. */
  public long fired() {
    return fired.get();
  }

  private void loop() {
    while (running) {
      try {
        if (round(Time.now()) < ROUND) {
          stop.tryAcquire(pollInterval.toMillis(), TimeUnit.MILLISECONDS);
        }
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        if (running) {
          LOG.warn("could not fire the schedules due: {}", e.getMessage());
          sleepQuietly();
        }
      }
    }
  }

  /**
   * Fires the schedules due at {@code now} (up to {@value #ROUND}), a commit per workspace and
   * {@value #PER_COMMIT} schedules; returns how many were due.
   */
  public int round(Instant now) {
    List<ScheduleDao.Row> due = jdbi.withExtension(ScheduleDao.class, dao -> dao.due(now, ROUND));
    Map<String, List<ScheduleDao.Row>> byWorkspace = new LinkedHashMap<>();
    due.forEach(row -> byWorkspace.computeIfAbsent(row.workspaceId(), k -> new ArrayList<>()).add(row));
    boolean callsDue = false;
    for (Map.Entry<String, List<ScheduleDao.Row>> e : byWorkspace.entrySet()) {
      List<ScheduleDao.Row> rows = e.getValue();
      for (int from = 0; from < rows.size(); from += PER_COMMIT) {
        List<ScheduleDao.Row> batch = rows.subList(from, Math.min(rows.size(), from + PER_COMMIT));
        try {
          callsDue |= committer.commit(e.getKey(), tx -> fire(tx, batch, now));
        } catch (RuntimeException ex) {
          // One workspace's failure (its commit refused, say) does not stop the others' schedules.
          LOG.warn("could not fire schedules of workspace {}: {}", e.getKey(), ex.getMessage());
        }
      }
    }
    if (callsDue) {
      runs.runsBecameDue();
    }
    return due.size();
  }

  /** Fires each schedule that is still as read; returns whether a run it started has work due now. */
  private boolean fire(Tx tx, List<ScheduleDao.Row> rows, Instant now) {
    ScheduleDao dao = tx.dao(ScheduleDao.class);
    boolean callsDue = false;
    for (ScheduleDao.Row row : rows) {
      Schedule schedule = Trigger.parseAll(Json.tree("[" + row.spec() + "]")).schedules().get(0);
      Instant time = row.nextRunAt();
      Instant next;
      if (now.isAfter(time.plus(MISSED_AFTER))) { // missed: the latest time, if it is to run, then on from now
        Instant latest = schedule.latest(now);
        time = latest != null && (schedule.runMissed() || !now.isAfter(latest.plus(MISSED_AFTER))) ? latest : null;
        next = schedule.next(now);
      } else { // on time, or a little late: each time runs (the next may be due already)
        next = schedule.next(time);
      }
      next = next == null ? Time.LATEST : next;
      Optional<Workflow> workflow = tx.dao(WorkflowDao.class).find(row.workspaceId(), row.workflowId())
          .filter(w -> !w.archived());
      if (time == null || workflow.isEmpty()) {
        dao.move(row, next, null, null);
        continue;
      }
      String runId = Ids.keyed("run", time.toEpochMilli(), row.workspaceId() + "/" + row.workflowId() + "/"
          + row.triggerIndex() + "/" + time.toEpochMilli());
      if (dao.move(row, next, time, runId) == 0) {
        continue; // another instance fired it first, or a put changed it
      }
      callsDue |= runs.startScheduled(tx, runId, workflow.get(), schedule.project(), schedule.inputs().deepCopy(),
          row.triggerIndex(), time);
      tx.afterCommit(fired::incrementAndGet);
    }
    return callsDue;
  }

  private void sleepQuietly() {
    try {
      stop.tryAcquire(pollInterval.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops after the commit under way. */
  @Override
  public void close() {
    running = false;
    stop.release();
    try {
      thread.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
