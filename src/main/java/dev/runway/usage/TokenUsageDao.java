package dev.runway.usage;

import java.time.LocalDate;
import java.util.Optional;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/** The tokens each workspace's agent runs used per UTC day (table token_usage). */
public interface TokenUsageDao {
  @SqlQuery("SELECT tokens FROM token_usage WHERE workspace_id = :ws AND day_utc = :day")
  Optional<Long> tokens(String ws, LocalDate day);

  @SqlUpdate("UPDATE token_usage SET tokens = tokens + :tokens WHERE workspace_id = :ws AND day_utc = :day")
  int addTo(String ws, LocalDate day, long tokens);

  @SqlUpdate("INSERT INTO token_usage (workspace_id, day_utc, tokens) VALUES (:ws, :day, :tokens)")
  void insert(String ws, LocalDate day, long tokens);

  /**
   * Adds to the day's count, making its row at the first tokens of the day. Called within a group
   * commit, whose writes of one workspace commit one after another (across instances too, see
   * GroupCommitter): no two can both find the row missing.
   */
  default void add(String ws, LocalDate day, long tokens) {
    if (addTo(ws, day, tokens) == 0) {
      insert(ws, day, tokens);
    }
  }
}
