package dev.runway.usage;

import java.time.LocalDate;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/** The tokens each workspace's agent runs used per UTC day (table token_usage), and each agent's (agent_token_usage). */
public interface TokenUsageDao {
  /** A workspace's tokens of one day, or of one agent on one day (agent null: the workspace's). */
  record DayTokens(LocalDate dayUtc, String agentId, long tokens) {}

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

  @SqlUpdate("UPDATE agent_token_usage SET tokens = tokens + :tokens WHERE workspace_id = :ws AND day_utc = :day "
      + "AND agent_id = :agent")
  int addToAgent(String ws, LocalDate day, String agent, long tokens);

  @SqlUpdate("INSERT INTO agent_token_usage (workspace_id, day_utc, agent_id, tokens) VALUES (:ws, :day, :agent, :tokens)")
  void insertAgent(String ws, LocalDate day, String agent, long tokens);

  /** As {@link #add}, for one agent's count of the day. */
  default void addAgent(String ws, LocalDate day, String agent, long tokens) {
    if (addToAgent(ws, day, agent, tokens) == 0) {
      insertAgent(ws, day, agent, tokens);
    }
  }

  @SqlQuery("SELECT day_utc, NULL AS agent_id, tokens FROM token_usage WHERE workspace_id = :ws "
      + "AND day_utc >= :from ORDER BY day_utc DESC")
  @RegisterConstructorMapper(DayTokens.class)
  List<DayTokens> days(String ws, LocalDate from);

  /** Each agent's tokens of each day since {@code from}, at most {@code limit} rows, the most first. */
  @SqlQuery("SELECT day_utc, agent_id, tokens FROM agent_token_usage WHERE workspace_id = :ws "
      + "AND day_utc >= :from ORDER BY tokens DESC, agent_id LIMIT :limit")
  @RegisterConstructorMapper(DayTokens.class)
  List<DayTokens> agentDays(String ws, LocalDate from, int limit);
}
