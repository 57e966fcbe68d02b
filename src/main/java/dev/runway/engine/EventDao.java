package dev.runway.engine;

import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindList;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlBatch;
import org.jdbi.v3.sqlobject.statement.SqlQuery;

@RegisterConstructorMapper(Event.class)
public interface EventDao {
  /**
   * Stores a transaction's events. Call it only inside a group commit (GroupCommitter), which holds
   * the workspace's lock until the transaction ends: so the events of one workspace get their seq
   * in the order their transactions commit, and a poller of GET /v1/events that has read up to some
   * seq never misses an event that commits later with a smaller one.
   */
  default void insert(List<Event> events) {
    if (!events.isEmpty()) {
      insertRows(events);
    }
  }

  @SqlBatch("INSERT INTO event (id, workspace_id, run_id, workflow_id, project, type, actor, step_index, attempt, "
      + "data, created_at) VALUES (:id, :workspaceId, :runId, :workflowId, :project, :type, :actor, :stepIndex, "
      + ":attempt, :data, :createdAt)")
  void insertRows(@BindMethods List<Event> events);

  @SqlQuery("SELECT * FROM event WHERE workspace_id = :workspaceId AND id = :id")
  Optional<Event> find(String workspaceId, String id);

  /** A run's events after the sequence number {@code afterSeq}, oldest first. */
  @SqlQuery("SELECT * FROM event WHERE run_id = :runId AND seq > :afterSeq ORDER BY seq LIMIT :limit")
  List<Event> ofRun(String runId, long afterSeq, int limit);

  @SqlQuery("SELECT * FROM event WHERE workspace_id = :workspaceId AND seq > :afterSeq ORDER BY seq LIMIT :limit")
  List<Event> ofWorkspaceAll(String workspaceId, long afterSeq, int limit);

  @SqlQuery("SELECT * FROM event WHERE workspace_id = :workspaceId AND seq > :afterSeq AND project IN (<projects>) "
      + "ORDER BY seq LIMIT :limit")
  List<Event> ofWorkspaceProjects(String workspaceId, long afterSeq, @BindList("projects") List<String> projects,
      int limit);

  /** A workspace's events after {@code afterSeq}, oldest first; only of {@code projects} unless null. */
  default List<Event> ofWorkspace(String workspaceId, long afterSeq, List<String> projects, int limit) {
    return projects == null ? ofWorkspaceAll(workspaceId, afterSeq, limit)
        : ofWorkspaceProjects(workspaceId, afterSeq, projects, limit);
  }
}
