package dev.runway.agent;

import dev.runway.db.Slice;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.customizer.Define;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

@RegisterConstructorMapper(Agent.class)
public interface AgentDao {
  @SqlQuery("SELECT * FROM agent WHERE workspace_id = :workspaceId AND id = :id")
  Optional<Agent> find(String workspaceId, String id);

  @SqlQuery("SELECT * FROM agent WHERE workspace_id = :workspaceId AND id = :id FOR UPDATE")
  Optional<Agent> findForUpdate(String workspaceId, String id);

  @SqlUpdate("INSERT INTO agent (workspace_id, id, name, description, definition, created_at, updated_at, archived_at) "
      + "VALUES (:workspaceId, :id, :name, :description, :definition, :createdAt, :updatedAt, :archivedAt)")
  void insert(@BindMethods Agent agent);

  @SqlUpdate("UPDATE agent SET name = :name, description = :description, definition = :definition, "
      + "updated_at = :updatedAt, archived_at = :archivedAt WHERE workspace_id = :workspaceId AND id = :id")
  void update(@BindMethods Agent agent);

  /** A page of agents by id; {@code after} is "" for the first page. */
  @SqlQuery("SELECT * FROM agent WHERE workspace_id = :workspaceId AND id > :after <archived> ORDER BY id LIMIT :limit")
  List<Agent> page(String workspaceId, String after, @Define("archived") String archivedFilter, int limit);

  @SqlQuery("SELECT " + STORED_SIZE + " FROM agent WHERE workspace_id = :workspaceId AND id > :after <archived> "
      + "ORDER BY id LIMIT :limit")
  List<Long> pageSizes(String workspaceId, String after, @Define("archived") String archivedFilter, int limit);

  /** The characters a agent's stored JSON takes, for pages bounded by bytes. */
  String STORED_SIZE = "LENGTH(definition) + COALESCE(LENGTH(description), 0)";

  /** Up to {@code limit} agents by id, as many as fit in {@code maxBytes} of stored JSON (at least one). */
  default Slice<Agent> page(String workspaceId, String after, boolean includeArchived, int limit, long maxBytes) {
    String archived = includeArchived ? "" : "AND archived_at IS NULL";
    return Slice.within(pageSizes(workspaceId, after, archived, limit + 1), limit, maxBytes,
        rows -> page(workspaceId, after, archived, rows));
  }

  @SqlUpdate("UPDATE agent SET archived_at = :at, updated_at = :at WHERE workspace_id = :workspaceId AND id = :id "
      + "AND archived_at IS NULL")
  int archive(String workspaceId, String id, Instant at);
}
