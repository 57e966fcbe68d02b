package dev.runway.webhook;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.customizer.Define;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/** Webhook endpoints, the messages sent to them, their deliveries and each delivery's attempts. */
@RegisterConstructorMapper(WebhookEndpoint.class)
@RegisterConstructorMapper(WebhookDelivery.class)
@RegisterConstructorMapper(WebhookAttempt.class)
public interface WebhookDao {
  // ---- endpoints ----

  @SqlUpdate("INSERT INTO webhook_endpoint (id, workspace_id, url, description, event_types, enabled, disabled_reason, "
      + "secret, previous_secret, previous_secret_until, failing_since, created_at, updated_at) VALUES (:id, "
      + ":workspaceId, :url, :description, :eventTypes, :enabled, :disabledReason, :secret, :previousSecret, "
      + ":previousSecretUntil, :failingSince, :createdAt, :updatedAt)")
  void insertEndpoint(@BindMethods WebhookEndpoint endpoint);

  @SqlQuery("SELECT * FROM webhook_endpoint WHERE workspace_id = :ws AND id = :id")
  Optional<WebhookEndpoint> endpoint(String ws, String id);

  /** A page of endpoints, newest first, after {@code after} (null: from the newest). */
  @SqlQuery("SELECT * FROM webhook_endpoint WHERE workspace_id = :ws <after> ORDER BY workspace_id DESC, id DESC "
      + "LIMIT :limit")
  List<WebhookEndpoint> endpoints(String ws, @Define("after") String afterClause, String after, int limit);

  default List<WebhookEndpoint> endpoints(String ws, String after, int limit) {
    return endpoints(ws, after == null ? "" : "AND id < :after", after, limit);
  }

  @SqlUpdate("UPDATE webhook_endpoint SET url = :url, description = :description, event_types = :eventTypes, "
      + "enabled = :enabled, disabled_reason = :disabledReason, secret = :secret, previous_secret = :previousSecret, "
      + "previous_secret_until = :previousSecretUntil, failing_since = :failingSince, updated_at = :updatedAt "
      + "WHERE workspace_id = :workspaceId AND id = :id")
  int updateEndpoint(@BindMethods WebhookEndpoint endpoint);

  @SqlUpdate("UPDATE webhook_endpoint SET failing_since = :since WHERE id = :id AND failing_since IS NULL")
  int failingSince(String id, Instant since);

  @SqlUpdate("UPDATE webhook_endpoint SET failing_since = NULL WHERE id = :id AND failing_since IS NOT NULL")
  int notFailing(String id);

  @SqlUpdate("DELETE FROM webhook_endpoint WHERE workspace_id = :ws AND id = :id")
  int deleteEndpoint(String ws, String id);

  @SqlUpdate("DELETE FROM webhook_attempt WHERE delivery_id IN (SELECT id FROM webhook_delivery WHERE endpoint_id = :id)")
  int deleteAttemptsOf(String id);

  @SqlUpdate("DELETE FROM webhook_delivery WHERE endpoint_id = :id")
  int deleteDeliveriesOf(String id);

  // ---- deliveries ----

  @SqlQuery("SELECT * FROM webhook_delivery WHERE workspace_id = :ws AND id = :id")
  Optional<WebhookDelivery> delivery(String ws, String id);

  /** A page of an endpoint's deliveries, newest first, after {@code after}; filters are SQL conditions on bound values. */
  @SqlQuery("SELECT * FROM webhook_delivery WHERE endpoint_id = :endpoint <filters> ORDER BY endpoint_id DESC, id DESC "
      + "LIMIT :limit")
  List<WebhookDelivery> deliveries(String endpoint, @Define("filters") String filters, String after, String status,
      String eventType, int limit);

  default List<WebhookDelivery> deliveries(String endpoint, String after, String status, String eventType, int limit) {
    String filters = (after == null ? "" : "AND id < :after ") + (status == null ? "" : "AND status = :status ")
        + (eventType == null ? "" : "AND event_type = :eventType");
    return deliveries(endpoint, filters, after, status, eventType, limit);
  }

  @SqlQuery("SELECT * FROM webhook_attempt WHERE delivery_id = :id ORDER BY delivery_id, attempt")
  List<WebhookAttempt> attempts(String id);

  @SqlQuery("SELECT payload FROM webhook_message WHERE id = :id")
  Optional<String> payload(String id);

  /** Records an attempt's outcome, if the delivery is still leased to {@code owner} (a claim's round of this instance). */
  @SqlUpdate("UPDATE webhook_delivery SET status = :status, attempts = :attempts, next_attempt_at = :next, "
      + "lease_owner = NULL, lease_until = NULL, last_response_status = :responseStatus, last_error = :error, "
      + "updated_at = :now WHERE id = :id AND lease_owner = :owner")
  int attempted(String id, String owner, String status, int attempts, Instant next, Integer responseStatus,
      String error, Instant now);

  @SqlUpdate("INSERT INTO webhook_attempt (delivery_id, attempt, started_at, duration_ms, response_status, "
      + "response_body, error) VALUES (:deliveryId, :attempt, :startedAt, :durationMs, :responseStatus, "
      + ":responseBody, :error)")
  void insertAttempt(@BindMethods WebhookAttempt attempt);

  /** Makes deliveries due now again, each with a new retry window. */
  @SqlUpdate("UPDATE webhook_delivery SET status = 'pending', next_attempt_at = :now, give_up_at = :giveUpAt, "
      + "updated_at = :now WHERE workspace_id = :ws AND id = :id")
  int redeliver(String ws, String id, Instant now, Instant giveUpAt);

  @SqlUpdate("UPDATE webhook_delivery SET status = 'pending', next_attempt_at = :now, give_up_at = :giveUpAt, "
      + "updated_at = :now WHERE endpoint_id = :endpoint AND status = 'failed' AND created_at >= :since")
  int recover(String endpoint, Instant since, Instant now, Instant giveUpAt);

  /**
   * Ends the pending deliveries of an endpoint that was disabled (recover sends them again). One
   * being attempted now is left to its attempt: its next claim finds the endpoint disabled.
   */
  @SqlUpdate("UPDATE webhook_delivery SET status = 'failed', next_attempt_at = NULL, last_error = :why, "
      + "updated_at = :now WHERE endpoint_id = :endpoint AND status = 'pending' "
      + "AND (lease_until IS NULL OR lease_until < :now)")
  int failPending(String endpoint, String why, Instant now);


  // ---- pruning ----

  // Old rows are found through their ids, which begin with their creation time (Ids.firstOf): a
  // delivery last updated before `before` was made before it too. No index on the times is needed.

  @SqlUpdate("DELETE FROM webhook_attempt WHERE delivery_id IN (SELECT id FROM webhook_delivery "
      + "WHERE id < :madeBefore AND updated_at < :before AND status <> 'pending')")
  int pruneAttempts(String madeBefore, Instant before);

  @SqlUpdate("DELETE FROM webhook_delivery WHERE id < :madeBefore AND updated_at < :before AND status <> 'pending'")
  int pruneDeliveries(String madeBefore, Instant before);

  /** Bodies made before {@code madeBefore} (an event id) that no delivery needs any more. */
  @SqlUpdate("DELETE FROM webhook_message WHERE id < :madeBefore AND NOT EXISTS "
      + "(SELECT 1 FROM webhook_delivery d WHERE d.event_id = webhook_message.id)")
  int pruneMessages(String madeBefore);
}
