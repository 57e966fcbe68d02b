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

  /** The enabled endpoints of a workspace and the event types each asks for, read once per transaction. */
  private record Listeners(List<WebhookEndpoint> endpoints, List<List<String>> types) {}

  /**
   * Endpoints' event_types as stored (a JSON array) and as parsed: parsing them for every
   * transaction cost more than reading them. Only grows by distinct lists; past the bound it starts afresh.
   */
  private final Map<String, List<String>> parsedTypes = new ConcurrentHashMap<>();
  private static final int MAX_PARSED_TYPES = 10_000;

  /**
   * The dispatcher of this instance while it runs: a delivery it has room for is stored already
   * leased to it, and handed to it as the transaction commits (see {@link Handoff}).
   */
  private volatile Handoff handoff;

  /**
   * Takes new deliveries without a claim. A claim (a query for due deliveries, an update leasing
   * them, committed, and a query for their bodies) is much of what a delivery costs the database,
   * and on PostgreSQL a commit of its own; the transaction that stores the
   * delivery can store its lease as well, and the body and endpoint are at hand then. The lease
   * is the same as a claim's (one instance attempts the delivery; should this one stop before
   * recording the attempt, the lease expires and any instance attempts it again), and the
   * dispatcher's bounds hold: it is asked for each delivery.
   */
  interface Handoff {
    /**
     * The lease to store a new delivery to this endpoint (of this workspace) under, when the
     * dispatcher has room for it besides {@code alreadyLeased} deliveries to the endpoint and
     * {@code leasedInAll} in all leased so far in the same transaction; null to store it due, for a
     * claim. The place is the workspace's from now on: handed over or given back, below.
     */
    Lease lease(String workspaceId, String endpointId, int alreadyLeased, int leasedInAll, Instant now);

    /**
     * The deliveries stored under the leases it gave, on the group commit's thread the moment the
     * commit that stored them is done: before the next transaction asks for a lease, which must
     * count them. It must not block (but as the dispatcher stops).
     */
    void handOver(List<Handed> handed);

    /** The leases granted to a transaction that rolled back (the workspace of each): their places are free. */
    void giveBack(List<String> workspaceIds);
  }

  record Lease(String owner, Instant until) {}

  /** A delivery stored leased, with its endpoint as the transaction read it. */
  record Handed(DispatchQueries.Claimed claimed, String owner, WebhookEndpoint endpoint) {}

  void handOffTo(Handoff handoff) {
    this.handoff = handoff;
  }

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
        WebhookEndpoint endpoint = listeners.endpoints().get(i);
        Instant now = Time.now();
        Handoff to = handoff;
        Handing handing = to == null ? null : tx.local(Handing.class, k -> new Handing(tx, to));
        Lease lease = handing == null || handing.to != to ? null
            : to.lease(workspaceId, endpoint.id(), handing.leased(endpoint.id()), handing.granted.size(), now);
        if (lease != null) {
          handing.granted(workspaceId, endpoint.id());
        }
        String id = storeDelivery(tx, workspaceId, endpoint.id(), eventId, type, now, retryWindow, lease);
        if (lease != null) {
          handing.add(new Handed(new DispatchQueries.Claimed(id, workspaceId, endpoint.id(), eventId, 0,
              now.plus(retryWindow), payload), lease.owner(), endpoint));
        }
      }
    }
  }

  /**
   * The leases a transaction was granted and the deliveries it stored under them: handed over as it
   * commits, given back if it rolls back.
   */
  private static final class Handing {
    private final Handoff to;
    /** The workspace of each lease granted. */
    private final List<String> granted = new ArrayList<>();
    private final List<Handed> all = new ArrayList<>();
    private final Map<String, Integer> perEndpoint = new java.util.HashMap<>();

    Handing(Tx tx, Handoff to) {
      this.to = to;
      tx.onCommit(() -> to.handOver(all));
      tx.onRollback(() -> to.giveBack(granted));
    }

    int leased(String endpointId) {
      return perEndpoint.getOrDefault(endpointId, 0);
    }

    void granted(String workspaceId, String endpointId) {
      granted.add(workspaceId);
      perEndpoint.merge(endpointId, 1, Integer::sum);
    }

    void add(Handed h) {
      all.add(h);
    }
  }

  /**
   * Read in the transaction itself, so that what it delivers to follows the endpoints' changes
   * exactly (also those of other instances), in plain JDBC: this runs in every transaction that
   * stores events, on the group commit's thread, where attaching Jdbi's DAO and mapping whole
   * endpoints cost as much as the rest of a batch of run starts' webhook work. The whole row: a
   * delivery handed to the dispatcher is sent with what it says (URL, secrets).
   */
  private Listeners listeners(Tx tx, String workspaceId) {
    List<WebhookEndpoint> endpoints = new ArrayList<>();
    List<List<String>> types = new ArrayList<>();
    try (PreparedStatement ps = tx.connection().prepareStatement(
        "SELECT " + DispatchQueries.ENDPOINT_COLUMNS + " FROM webhook_endpoint WHERE workspace_id = ? AND enabled = TRUE")) {
      ps.setString(1, workspaceId);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          WebhookEndpoint e = DispatchQueries.endpoint(rs);
          endpoints.add(e);
          types.add(parsed(e.eventTypes()));
        }
      }
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
    if (listened.size() >= MAX_LISTENED) {
      listened.clear();
    }
    listened.put(workspaceId, !endpoints.isEmpty());
    return new Listeners(endpoints, types);
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

  /**
   * The workspaces found with enabled endpoints when their events were last published (see
   * {@link #delivers}). Only grows by workspaces that publish; past the bound it starts afresh.
   */
  private final Map<String, Boolean> listened = new ConcurrentHashMap<>();
  private static final int MAX_LISTENED = 10_000;

  @Override
  public boolean delivers(String workspaceId) {
    return listened.getOrDefault(workspaceId, false);
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
    storeDelivery(tx, ws, endpointId, eventId, type, now, window, null);
  }

  /** Stores a delivery, due now, or leased already (see {@link Handoff}); its id. */
  private String storeDelivery(Tx tx, String ws, String endpointId, String eventId, String type, Instant now,
      Duration window, Lease lease) {
    PreparedStatement ps = tx.batch("INSERT INTO webhook_delivery (id, workspace_id, endpoint_id, event_id, event_type, "
        + "status, attempts, next_attempt_at, give_up_at, created_at, updated_at, lease_owner, lease_until) "
        + "VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, ?)");
    String id = Ids.newId("del", now.toEpochMilli());
    try {
      ps.setString(1, id);
      ps.setString(2, ws);
      ps.setString(3, endpointId);
      ps.setString(4, eventId);
      ps.setString(5, type);
      Jdbc.setTime(ps, 6, now);
      Jdbc.setTime(ps, 7, now.plus(window));
      Jdbc.setTime(ps, 8, now);
      Jdbc.setTime(ps, 9, now);
      ps.setString(10, lease == null ? null : lease.owner());
      Jdbc.setTime(ps, 11, lease == null ? null : lease.until());
      ps.addBatch();
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
    if (lease == null) {
      deliveriesDue();
    }
    return id;
  }
}
