package dev.runway.trigger;

import java.time.Instant;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/** The deliveries hooks took, by the sender's delivery id, so that a retry starts no second run. */
public interface HookDeliveryDao {
  /** The run that delivery {@code deliveryId} to the hook of a trigger started, and when. */
  @SqlQuery("SELECT run_id, received_at FROM hook_delivery WHERE workspace_id = :workspaceId "
      + "AND workflow_id = :workflowId AND trigger_index = :triggerIndex AND delivery_id = :deliveryId")
  @RegisterConstructorMapper(HookReceiver.Taken.class)
  Optional<HookReceiver.Taken> find(String workspaceId, String workflowId, int triggerIndex, String deliveryId);

  @SqlUpdate("INSERT INTO hook_delivery (workspace_id, workflow_id, trigger_index, delivery_id, run_id, received_at) "
      + "VALUES (:workspaceId, :workflowId, :triggerIndex, :deliveryId, :runId, :receivedAt)")
  void insert(String workspaceId, String workflowId, int triggerIndex, String deliveryId, String runId,
      Instant receivedAt);

  /** A delivery id taken before {@code before}: it may be used again (the row goes before the new one is stored). */
  @SqlUpdate("DELETE FROM hook_delivery WHERE workspace_id = :workspaceId AND workflow_id = :workflowId "
      + "AND trigger_index = :triggerIndex AND delivery_id = :deliveryId AND received_at <= :before")
  int deleteOld(String workspaceId, String workflowId, int triggerIndex, String deliveryId, Instant before);

  /** Deletes the deliveries received before {@code before} (the housekeeping sweep). */
  @SqlUpdate("DELETE FROM hook_delivery WHERE received_at <= :before")
  int deleteBefore(Instant before);
}
