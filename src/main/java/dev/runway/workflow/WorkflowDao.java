package dev.runway.workflow;

import dev.runway.db.Slice;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindList;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.customizer.Define;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

@RegisterConstructorMapper(Workflow.class)
public interface WorkflowDao {
  @SqlQuery("SELECT * FROM workflow WHERE workspace_id = :workspaceId AND id = :id")
  Optional<Workflow> find(String workspaceId, String id);

  @SqlQuery("SELECT * FROM workflow WHERE workspace_id = :workspaceId AND id IN (<ids>)")
  List<Workflow> findAll(String workspaceId, @BindList("ids") Collection<String> ids);

  @SqlQuery("SELECT * FROM workflow WHERE workspace_id = :workspaceId AND id = :id FOR UPDATE")
  Optional<Workflow> findForUpdate(String workspaceId, String id);

  @SqlUpdate("INSERT INTO workflow (workspace_id, id, name, description, requires_approval, steps, triggers, created_at, "
      + "updated_at, archived_at, inputs_schema, output, concurrency) VALUES (:workspaceId, :id, :name, :description, "
      + ":requiresApproval, :steps, :triggers, :createdAt, :updatedAt, :archivedAt, :inputsSchema, :output, :concurrency)")
  void insert(@BindMethods Workflow workflow);

  @SqlUpdate("UPDATE workflow SET name = :name, description = :description, requires_approval = :requiresApproval, "
      + "steps = :steps, triggers = :triggers, updated_at = :updatedAt, archived_at = :archivedAt, "
      + "inputs_schema = :inputsSchema, output = :output, concurrency = :concurrency "
      + "WHERE workspace_id = :workspaceId AND id = :id")
  void update(@BindMethods Workflow workflow);

  /** A page of workflows by id; {@code after} is "" for the first page. */
  @SqlQuery("SELECT * FROM workflow WHERE workspace_id = :workspaceId AND id > :after <archived> ORDER BY id LIMIT :limit")
  List<Workflow> page(String workspaceId, String after, @Define("archived") String archivedFilter, int limit);

  @SqlQuery("SELECT " + STORED_SIZE + " FROM workflow WHERE workspace_id = :workspaceId AND id > :after <archived> "
      + "ORDER BY id LIMIT :limit")
  List<Long> pageSizes(String workspaceId, String after, @Define("archived") String archivedFilter, int limit);

  /** The characters a workflow's stored JSON takes, for pages bounded by bytes. */
  String STORED_SIZE = "LENGTH(steps) + COALESCE(LENGTH(triggers), 0) + COALESCE(LENGTH(description), 0) "
      + "+ COALESCE(LENGTH(inputs_schema), 0) + COALESCE(LENGTH(output), 0)";

  /** Up to {@code limit} workflows by id, as many as fit in {@code maxBytes} of stored JSON (at least one). */
  default Slice<Workflow> page(String workspaceId, String after, boolean includeArchived, int limit, long maxBytes) {
    String archived = includeArchived ? "" : "AND archived_at IS NULL";
    return Slice.within(pageSizes(workspaceId, after, archived, limit + 1), limit, maxBytes,
        rows -> page(workspaceId, after, archived, rows));
  }

  @SqlUpdate("DELETE FROM crm_trigger WHERE workspace_id = :workspaceId AND workflow_id = :workflowId")
  void deleteTriggers(String workspaceId, String workflowId);

  @SqlUpdate("INSERT INTO crm_trigger (workspace_id, object_type, workflow_id, on_created, on_updated, on_deleted, project) "
      + "VALUES (:workspaceId, :t.objectType, :workflowId, :t.onCreated, :t.onUpdated, :t.onDeleted, :t.project)")
  void insertTrigger(String workspaceId, String workflowId, @BindMethods("t") Trigger trigger);

  @SqlUpdate("UPDATE workflow SET archived_at = :at, updated_at = :at WHERE workspace_id = :workspaceId AND id = :id AND archived_at IS NULL")
  int archive(String workspaceId, String id, Instant at);
}
