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
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts the runs of workflow schedules (see {@link Schedule}) when their times come. Every
 * instance runs one; they need no lease between them: a due schedule is fired in the commit that
 * stores its run, by an UPDATE of its row conditional on the time it was read at (see
 * {@link ScheduleDao#move}), so of two instances that read it, one moves it and starts the run and
 * the other's UPDATE matches nothing and starts none. A crash before that commit leaves the
 * schedule due, for the next round of any instance.
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
  private static final int MAX_PARSED = 10_000;

  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final RunStarts runs;
  private final Map<String, Schedule> parsed = new ConcurrentHashMap<>();
  private final Duration pollInterval;
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

  /**
   * Starts firing the schedules that are due: it wakes at the earliest next time, and looks at least
   * every {@code pollInterval} (for schedules put meanwhile).
   */
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

  private void loop() {
    while (running) {
      try {
        if (round(Time.now()) < ROUND) {
          Instant earliest = jdbi.withExtension(ScheduleDao.class, ScheduleDao::earliest).orElse(Time.LATEST);
          long ms = Math.min(pollInterval.toMillis(), Duration.between(Time.now(), earliest).toMillis());
          stop.tryAcquire(Math.max(ms, 1), TimeUnit.MILLISECONDS);
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
   * Fires the schedules due at {@code now} (up to {@value #ROUND}), in writes of one workspace's
   * schedules, {@value #PER_COMMIT} at most, that the group commit joins; returns how many were due.
   */
  public int round(Instant now) {
    List<ScheduleDao.Row> due = jdbi.withExtension(ScheduleDao.class, dao -> dao.due(now, ROUND));
    Map<String, List<ScheduleDao.Row>> rowsByWorkspace = new LinkedHashMap<>();
    due.forEach(row -> rowsByWorkspace.computeIfAbsent(row.workspaceId(), k -> new ArrayList<>()).add(row));
    // Workspaces in an order of this round's own: instances that read the same due schedules start
    // on different workspaces (on PostgreSQL, commits that write one workspace wait for each other).
    List<String> order = new ArrayList<>(rowsByWorkspace.keySet());
    Collections.shuffle(order);
    Map<String, List<Firing>> byWorkspace = new LinkedHashMap<>();
    order.forEach(ws -> {
      List<ScheduleDao.Row> rows = rowsByWorkspace.get(ws);
      // One read of the workspace's workflows: a put that changes a schedule changes its row, and an
      // archive removes it, so the move in the commit finds neither if the workflow changed so.
      Map<String, Workflow> active = new HashMap<>();
      jdbi.withExtension(WorkflowDao.class, dao -> dao.findAll(ws, rows.stream().map(ScheduleDao.Row::workflowId)
          .collect(Collectors.toSet()))).stream().filter(w -> !w.archived()).forEach(w -> active.put(w.id(), w));
      byWorkspace.put(ws, rows.stream().map(row -> firing(row, active.get(row.workflowId()), now)).toList());
    });
    // Submitted side by side, so that the group commit takes many batches in one transaction.
    Map<CompletableFuture<Boolean>, String> pending = new LinkedHashMap<>();
    try {
      for (Map.Entry<String, List<Firing>> e : byWorkspace.entrySet()) {
        List<Firing> firings = e.getValue();
        for (int from = 0; from < firings.size(); from += PER_COMMIT) {
          List<Firing> batch = firings.subList(from, Math.min(firings.size(), from + PER_COMMIT));
          pending.put(committer.submit(e.getKey(), tx -> fire(tx, batch)), e.getKey());
        }
      }
    } catch (RuntimeException e) { // too many writes wait: the rest are due still, for the next round
      LOG.warn("could not fire all the schedules due: {}", e.getMessage());
    }
    boolean callsDue = false;
    for (Map.Entry<CompletableFuture<Boolean>, String> p : pending.entrySet()) {
      try {
        callsDue |= p.getKey().join();
      } catch (CompletionException e) {
        // One workspace's failure (its commit refused, say) does not stop the others' schedules.
        LOG.warn("could not fire schedules of workspace {}: {}", p.getValue(), e.getCause().getMessage());
      }
    }
    if (callsDue) {
      runs.runsBecameDue();
    }
    return due.size();
  }

  /**
   * What firing a schedule read as {@code row} does: start a run of {@code workflow} (null: none)
   * for {@code time} (null: none, a time missed and skipped), and move the schedule on to {@code next}.
   */
  private record Firing(ScheduleDao.Row row, Schedule schedule, Instant time, Instant next, Workflow workflow) {}

  /** Decided before the transaction, so that the commit thread only writes. */
  private Firing firing(ScheduleDao.Row row, Workflow workflow, Instant now) {
    Schedule schedule = parsed(row.spec());
    Instant time = row.nextRunAt();
    Instant next;
    if (now.isAfter(time.plus(MISSED_AFTER))) { // missed: the latest time, if it is to run, then on from now
      Instant latest = schedule.latest(now);
      time = latest != null && (schedule.runMissed() || !now.isAfter(latest.plus(MISSED_AFTER))) ? latest : null;
      next = schedule.next(now);
    } else { // on time, or a little late: each time runs (the next may be due already)
      next = schedule.next(time);
    }
    return new Firing(row, schedule, time, next == null ? Time.LATEST : next, workflow);
  }

  /** Fires each schedule that is still as read; returns whether a run it started has work due now. */
  private boolean fire(Tx tx, List<Firing> firings) {
    ScheduleDao dao = tx.dao(ScheduleDao.class);
    boolean callsDue = false;
    for (Firing f : firings) {
      ScheduleDao.Row row = f.row();
      if (f.time() == null || f.workflow() == null) {
        dao.move(row, f.next(), null, null);
        continue;
      }
      String runId = Ids.newId("run", Time.now().toEpochMilli());
      if (dao.move(row, f.next(), f.time(), runId) == 0) {
        continue; // another instance fired it first, or a put changed it
      }
      callsDue |= runs.startScheduled(tx, runId, f.workflow(), f.schedule().project(),
          f.schedule().inputs().deepCopy(), row.triggerIndex(), f.time());
    }
    return callsDue;
  }

  /** A stored schedule, parsed once per text. */
  private Schedule parsed(String spec) {
    Schedule schedule = parsed.get(spec);
    if (schedule == null) {
      schedule = Trigger.parseAll(Json.tree("[" + spec + "]")).schedules().get(0);
      if (parsed.size() >= MAX_PARSED) {
        parsed.clear();
      }
      parsed.put(spec, schedule);
    }
    return schedule;
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
