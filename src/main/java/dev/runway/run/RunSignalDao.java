package dev.runway.run;

import java.time.Instant;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/** Signals sent to runs, and the hashes of runs' signal URLs. */
@RegisterConstructorMapper(RunSignal.class)
public interface RunSignalDao {
  @SqlUpdate("INSERT INTO run_signal (id, workspace_id, run_id, name, body, via, created_at, consumed_at, "
      + "consumed_step) VALUES (:id, :workspaceId, :runId, :name, :body, :via, :createdAt, :consumedAt, :consumedStep)")
  void insert(@BindMethods RunSignal signal);

  /** The run's oldest signal of this name that no wait took yet, locked. */
  @SqlQuery("SELECT * FROM run_signal WHERE run_id = :runId AND name = :name AND consumed_at IS NULL "
      + "ORDER BY id LIMIT 1 FOR UPDATE")
  Optional<RunSignal> oldestKept(String runId, String name);

  @SqlUpdate("UPDATE run_signal SET consumed_at = :at, consumed_step = :step WHERE id = :id AND consumed_at IS NULL")
  int consume(String id, Instant at, int step);

  /** How many signals of the run are kept (no wait took them), up to {@code limit}. */
  @SqlQuery("SELECT COUNT(*) FROM (SELECT 1 FROM run_signal WHERE run_id = :runId AND consumed_at IS NULL "
      + "LIMIT :limit) kept")
  int countKept(String runId, int limit);

  @SqlQuery("SELECT * FROM run_signal WHERE workspace_id = :workspaceId AND run_id = :runId ORDER BY id")
  java.util.List<RunSignal> ofRun(String workspaceId, String runId);

  @SqlUpdate("INSERT INTO run_signal_url (token_hash, workspace_id, run_id, name, created_at) "
      + "VALUES (:tokenHash, :workspaceId, :runId, :name, :createdAt)")
  void insertUrl(String tokenHash, String workspaceId, String runId, String name, Instant createdAt);

  /** What an unused signal URL's token (by its hash) sends to: workspace, run and name. */
  record UrlTarget(String workspaceId, String runId, String name) {}

  @SqlQuery("SELECT workspace_id, run_id, name FROM run_signal_url WHERE token_hash = :tokenHash AND ended_at IS NULL")
  @RegisterConstructorMapper(UrlTarget.class)
  Optional<UrlTarget> findUrl(String tokenHash);

  /** Uses the URL up; 0 when it was used or ended meanwhile. */
  @SqlUpdate("UPDATE run_signal_url SET ended_at = :at WHERE token_hash = :tokenHash AND ended_at IS NULL")
  int useUrl(String tokenHash, Instant at);

  /** Ends the run's URL for signal {@code name}: its wait ended. */
  @SqlUpdate("UPDATE run_signal_url SET ended_at = :at WHERE run_id = :runId AND name = :name AND ended_at IS NULL")
  int endUrl(String runId, String name, Instant at);

  /** Ends all the run's URLs: the run ended. */
  @SqlUpdate("UPDATE run_signal_url SET ended_at = :at WHERE run_id = :runId AND ended_at IS NULL")
  int endUrls(String runId, Instant at);
}
