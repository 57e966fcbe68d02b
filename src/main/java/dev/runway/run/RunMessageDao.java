package dev.runway.run;

import dev.runway.db.Jdbc;
import dev.runway.db.Tx;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.statement.SqlQuery;

@RegisterConstructorMapper(RunMessage.class)
public interface RunMessageDao {
  /** Stores a move's messages when the group commit's transaction commits (see {@link Tx#batch}). */
  static void insert(Tx tx, List<RunMessage> messages) {
    if (messages.isEmpty()) {
      return;
    }
    PreparedStatement ps = tx.batch("INSERT INTO run_message (run_id, idx, role, content, tool_calls, tool_call_id, "
        + "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)");
    try {
      for (RunMessage m : messages) {
        ps.setString(1, m.runId());
        ps.setInt(2, m.idx());
        ps.setString(3, m.role());
        ps.setString(4, m.content());
        ps.setString(5, m.toolCalls());
        ps.setString(6, m.toolCallId());
        Jdbc.setTime(ps, 7, m.createdAt());
        ps.addBatch();
      }
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  /** The run's messages after index {@code afterIdx}, oldest first. */
  @SqlQuery("SELECT * FROM run_message WHERE run_id = :runId AND idx > :afterIdx ORDER BY run_id, idx LIMIT :limit")
  List<RunMessage> page(String runId, int afterIdx, int limit);

  @SqlQuery("SELECT COALESCE(LENGTH(content), 0) + COALESCE(LENGTH(tool_calls), 0) FROM run_message "
      + "WHERE run_id = :runId AND idx > :afterIdx ORDER BY run_id, idx LIMIT :limit")
  List<Long> sizes(String runId, int afterIdx, int limit);

  /** The whole transcript, oldest first: what the next model call sends. */
  @SqlQuery("SELECT * FROM run_message WHERE run_id = :runId ORDER BY idx")
  List<RunMessage> all(String runId);
}
