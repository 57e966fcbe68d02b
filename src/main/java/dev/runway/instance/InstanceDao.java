package dev.runway.instance;

import java.time.Instant;
import java.util.List;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/** The instance registry. */
@RegisterConstructorMapper(Instance.class)
public interface InstanceDao {
  @SqlUpdate("INSERT INTO instance (id, host, pid, version, started_at, heartbeat_at, stopping_at, stopped_at) "
      + "VALUES (:id, :host, :pid, :version, :startedAt, :heartbeatAt, :stoppingAt, :stoppedAt)")
  void insert(@BindMethods Instance instance);

  @SqlUpdate("UPDATE instance SET heartbeat_at = :now WHERE id = :id AND stopped_at IS NULL")
  int beat(String id, Instant now);

  @SqlUpdate("UPDATE instance SET stopping_at = :now, heartbeat_at = :now WHERE id = :id AND stopping_at IS NULL")
  int stopping(String id, Instant now);

  @SqlUpdate("UPDATE instance SET stopped_at = :now, heartbeat_at = :now, stopping_at = COALESCE(stopping_at, :now) "
      + "WHERE id = :id")
  int stopped(String id, Instant now);

  /** The newest {@code limit} instances, newest first. */
  @SqlQuery("SELECT * FROM instance ORDER BY started_at DESC, id DESC LIMIT :limit")
  List<Instance> newest(int limit);

  /** Forgets instances that stopped, or went quiet, before {@code before}. */
  @SqlUpdate("DELETE FROM instance WHERE heartbeat_at < :before")
  int prune(Instant before);
}
