package dev.runway.run;

import dev.runway.db.Jdbc;
import dev.runway.db.Tx;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindList;
import org.jdbi.v3.sqlobject.statement.SqlQuery;

/**
 * Events. Pages are ordered by every column of their index (see CrmDao: H2 otherwise reads and
 * sorts every event after the cursor).
 */
@RegisterConstructorMapper(Event.class)
public interface EventDao {
  /**
   * Stores a transaction's events. Call it only inside a group commit (GroupCommitter), which holds
   * the workspace's lock until the transaction ends: so the events of one workspace get their seq
   * in the order their transactions commit, and a poller of GET /v1/events that has read up to some
   * seq never misses an event that commits later with a smaller one.
   */
  static void insert(Tx tx, List<Event> events) {
    if (events.isEmpty()) {
      return;
    }
    // Stored when the transaction commits (see Tx.batch): two or more events go with every run start.
    PreparedStatement ps = tx.batch("INSERT INTO event (id, workspace_id, run_id, workflow_id, project, type, "
        + "actor, step_index, attempt, data, created_at, agent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    try {
      for (Event e : events) {
        ps.setString(1, e.id());
        ps.setString(2, e.workspaceId());
        ps.setString(3, e.runId());
        ps.setString(4, e.workflowId());
        ps.setString(5, e.project());
        ps.setString(6, e.type());
        ps.setString(7, e.actor());
        ps.setObject(8, e.stepIndex(), Types.INTEGER);
        ps.setObject(9, e.attempt(), Types.INTEGER);
        ps.setString(10, e.data());
        Jdbc.setTime(ps, 11, e.createdAt());
        ps.setString(12, e.agentId());
        ps.addBatch();
      }
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  @SqlQuery("SELECT * FROM event WHERE workspace_id = :workspaceId AND id = :id")
  Optional<Event> find(String workspaceId, String id);

  /** The seq of the workspace's latest event (0 if none): where a stream of what happens from now on starts. */
  @SqlQuery("SELECT COALESCE(MAX(seq), 0) FROM event WHERE workspace_id = :workspaceId")
  long lastSeq(String workspaceId);

  /** A run's events after the sequence number {@code afterSeq}, oldest first. */
  @SqlQuery("SELECT * FROM event WHERE run_id = :runId AND seq > :afterSeq ORDER BY run_id, seq LIMIT :limit")
  List<Event> ofRun(String runId, long afterSeq, int limit);

  /** A run's events but those of one type, oldest first. */
  @SqlQuery("SELECT * FROM event WHERE run_id = :runId AND type <> :type ORDER BY run_id, seq LIMIT :limit")
  List<Event> ofRunWithout(String runId, String type, int limit);

  @SqlQuery("SELECT * FROM event WHERE workspace_id = :workspaceId AND seq > :afterSeq ORDER BY workspace_id, seq "
      + "LIMIT :limit")
  List<Event> ofWorkspaceAll(String workspaceId, long afterSeq, int limit);

  @SqlQuery("SELECT * FROM event WHERE workspace_id = :workspaceId AND seq > :afterSeq AND project IN (<projects>) "
      + "ORDER BY workspace_id, seq LIMIT :limit")
  List<Event> ofWorkspaceProjects(String workspaceId, long afterSeq, @BindList("projects") List<String> projects,
      int limit);

  /** A workspace's events after {@code afterSeq}, oldest first; only of {@code projects} unless null. */
  default List<Event> ofWorkspace(String workspaceId, long afterSeq, List<String> projects, int limit) {
    return projects == null ? ofWorkspaceAll(workspaceId, afterSeq, limit)
        : ofWorkspaceProjects(workspaceId, afterSeq, projects, limit);
  }
}
