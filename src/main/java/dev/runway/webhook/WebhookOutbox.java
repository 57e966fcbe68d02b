package dev.runway.webhook;

import com.fasterxml.jackson.core.type.TypeReference;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.Jdbc;
import dev.runway.db.Outbox;
import dev.runway.db.Tx;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
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

  /** The enabled endpoints of a workspace (their ids) and the event types each asks for, read once per transaction. */
  private record Listeners(List<String> endpoints, List<List<String>> types) {}

  /**
   * Endpoints' event_types as stored (a JSON array) and as parsed: parsing them for every
   * transaction cost more than reading them. Only grows by distinct lists; past the bound it starts afresh.
   */
  private final Map<String, List<String>> parsedTypes = new ConcurrentHashMap<>();
  private static final int MAX_PARSED_TYPES = 10_000;

  @Override
  public void publish(Tx tx, String workspaceId, String eventId, String type, Instant createdAt, Supplier<String> data) {
    Listeners listeners = tx.local(new ListenersOf(workspaceId), k -> listeners(tx, workspaceId));
    String payload = null;
    for (int i = 0; i < listeners.endpoints().size(); i++) {
      if (EventTypes.matches(listeners.types().get(i), type)) {
        if (payload == null) {
          payload = envelope(eventId, type, createdAt, data.get());
          storeMessage(tx, workspaceId, eventId, type, payload, createdAt);
        }
        storeDelivery(tx, workspaceId, listeners.endpoints().get(i), eventId, type, Time.now(), retryWindow);
      }
    }
  }

  /**
   * Read in the transaction itself, so that what it delivers to follows the endpoints' changes
   * exactly (also those of other instances), in plain JDBC: this runs in every transaction that
   * stores events, on the group commit's thread, where attaching Jdbi's DAO and mapping whole
   * endpoints cost as much as the rest of a batch of run starts' webhook work.
   */
  private Listeners listeners(Tx tx, String workspaceId) {
    List<String> ids = new ArrayList<>();
    List<List<String>> types = new ArrayList<>();
    try (PreparedStatement ps = tx.connection().prepareStatement(
        "SELECT id, event_types FROM webhook_endpoint WHERE workspace_id = ? AND enabled = TRUE")) {
      ps.setString(1, workspaceId);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getString(1));
          types.add(parsed(rs.getString(2)));
        }
      }
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
    return new Listeners(ids, types);
  }

  private List<String> parsed(String eventTypes) {
    List<String> types = parsedTypes.get(eventTypes);
    if (types == null) {
      if (parsedTypes.size() >= MAX_PARSED_TYPES) {
        parsedTypes.clear();
      }
      types = List.copyOf(Json.MAPPER.convertValue(Json.tree(eventTypes), new TypeReference<List<String>>() {}));
      parsedTypes.put(eventTypes, types);
    }
    return types;
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
