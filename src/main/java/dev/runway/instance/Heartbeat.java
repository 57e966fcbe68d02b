package dev.runway.instance;

import dev.runway.core.Ids;
import dev.runway.core.Time;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This process in the instance registry: registered at its start, its heartbeat moved on every
 * interval while it runs, marked stopping when its stop begins and stopped when it ends. A beat
 * that fails (the database away) is logged and the next one tries again.
 */
public final class Heartbeat implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Heartbeat.class);

  private final Jdbi jdbi;
  private final String id;
  private final ScheduledExecutorService timer;

  private Heartbeat(Jdbi jdbi, String id, ScheduledExecutorService timer) {
    this.jdbi = jdbi;
    this.id = id;
    this.timer = timer;
  }

  /** Registers this process and beats every {@code interval}. */
  public static Heartbeat start(Jdbi jdbi, Duration interval) {
    Instant now = Time.now();
    String version = Heartbeat.class.getPackage().getImplementationVersion();
    Instance self = new Instance(Ids.newId("ins", now.toEpochMilli()), host(), ProcessHandle.current().pid(),
        version == null ? "dev" : version, now, now, null, null);
    jdbi.useExtension(InstanceDao.class, dao -> dao.insert(self));
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "runway-heartbeat");
      t.setDaemon(true);
      return t;
    });
    Heartbeat heartbeat = new Heartbeat(jdbi, self.id(), timer);
    timer.scheduleWithFixedDelay(heartbeat::beat, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
    LOG.info("instance {} registered ({} pid {}, version {})", self.id(), self.host(), self.pid(), self.version());
    return heartbeat;
  }

  public String id() {
    return id;
  }

  private void beat() {
    try {
      jdbi.useExtension(InstanceDao.class, dao -> dao.beat(id, Time.now()));
    } catch (RuntimeException e) {
      LOG.warn("instance {}: heartbeat not recorded ({}); trying again", id, e.getMessage());
    }
  }

  /** Its stop began: it takes no new work. */
  public void stopping() {
    record(dao -> dao.stopping(id, Time.now()), "stopping");
  }

  /** Its stop ended: no more beats; the registry says stopped. */
  @Override
  public void close() {
    timer.shutdownNow();
    record(dao -> dao.stopped(id, Time.now()), "stopped");
  }

  private void record(ToIntFunction<InstanceDao> change, String what) {
    try {
      jdbi.useExtension(InstanceDao.class, change::applyAsInt);
    } catch (RuntimeException e) {
      LOG.warn("instance {}: could not record that it {} ({})", id, what, e.getMessage());
    }
  }

  private static String host() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "unknown";
    }
  }
}
