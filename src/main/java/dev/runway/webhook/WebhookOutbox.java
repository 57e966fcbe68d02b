package dev.runway.webhook;

import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.Jdbc;
import dev.runway.db.Outbox;
import dev.runway.db.Tx;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * Turns each event published in a transaction into a delivery to every enabled endpoint of its
 * workspace that asked for its type, stored in that same transaction: the outbox the dispatcher
 * works from. The body is made once per event (a snapshot: a retry three days later sends what
 * the event said then) and shared by its deliveries.
 */
final class WebhookOutbox implements Outbox {
  private final Duration retryWindow;
  /** Set when deliveries were stored since the dispatcher last looked: a commit then wakes it. */
  private final AtomicBoolean stored = new AtomicBoolean();

  WebhookOutbox(Duration retryWindow) {
    this.retryWindow = retryWindow;
  }

  /** The endpoints of a workspace that may want its events, read once per transaction. */
  private record Listeners(List<WebhookEndpoint> endpoints, List<List<String>> types) {}

  @Override
  public void publish(Tx tx, String workspaceId, String eventId, String type, Instant createdAt, Supplier<String> data) {
    Listeners listeners = tx.local(new ListenersOf(workspaceId), k -> {
      List<WebhookEndpoint> endpoints = tx.dao(WebhookDao.class).enabledEndpoints(workspaceId);
      return new Listeners(endpoints, endpoints.stream().map(WebhookViews::eventTypes).toList());
    });
    String payload = null;
    for (int i = 0; i < listeners.endpoints().size(); i++) {
      if (EventTypes.matches(listeners.types().get(i), type)) {
        if (payload == null) {
          payload = envelope(eventId, type, createdAt, data.get());
          storeMessage(tx, workspaceId, eventId, type, payload, createdAt);
        }
        storeDelivery(tx, workspaceId, listeners.endpoints().get(i).id(), eventId, type, Time.now(), retryWindow);
      }
    }
  }

  /** The key of a workspace's listeners among a transaction's locals. */
  private record ListenersOf(String workspaceId) {}

  /** Tells the dispatcher, at the next commit, that deliveries became due. */
  void deliveriesDue() {
    stored.set(true);
  }

  /** True once after deliveries were stored or became due. */
  boolean takeStored() {
    return stored.getAndSet(false);
  }

  /** Standard Webhooks' body: {"id", "type", "created_at", "data"} ({@code data} is JSON already). */
  static String envelope(String eventId, String type, Instant createdAt, String data) {
    return "{\"id\":" + Json.string(eventId) + ",\"type\":" + Json.string(type) + ",\"created_at\":"
        + Json.string(createdAt) + ",\"data\":" + data + "}";
  }

  static void storeMessage(Tx tx, String ws, String eventId, String type, String payload, Instant createdAt) {
    PreparedStatement ps = tx.batch("INSERT INTO webhook_message (id, workspace_id, type, payload, created_at) "
        + "VALUES (?, ?, ?, ?, ?)");
    try {
      ps.setString(1, eventId);
      ps.setString(2, ws);
      ps.setString(3, type);
      ps.setString(4, payload);
      Jdbc.setTime(ps, 5, createdAt);
      ps.addBatch();
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  void storeDelivery(Tx tx, String ws, String endpointId, String eventId, String type, Instant now,
      Duration window) {
    PreparedStatement ps = tx.batch("INSERT INTO webhook_delivery (id, workspace_id, endpoint_id, event_id, event_type, "
        + "status, attempts, next_attempt_at, give_up_at, created_at, updated_at) "
        + "VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)");
    try {
      ps.setString(1, Ids.newId("del", now.toEpochMilli()));
      ps.setString(2, ws);
      ps.setString(3, endpointId);
      ps.setString(4, eventId);
      ps.setString(5, type);
      Jdbc.setTime(ps, 6, now);
      Jdbc.setTime(ps, 7, now.plus(window));
      Jdbc.setTime(ps, 8, now);
      Jdbc.setTime(ps, 9, now);
      ps.addBatch();
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
    deliveriesDue();
  }
}
