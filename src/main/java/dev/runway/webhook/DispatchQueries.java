package dev.runway.webhook;

import dev.runway.db.Jdbc;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/**
 * The dispatcher's statements that run for every round or every delivery, in plain JDBC: through
 * Jdbi's DAO, attaching it and mapping the rows (and the compiling of all that, which went on for
 * minutes) cost more than the database's work. The rest of the webhook statements are in
 * {@link WebhookDao}.
 */
final class DispatchQueries {
  private DispatchQueries() {}

  /**
   * Earlier than any next_attempt_at: as a lower bound, it lets an index range scan skip the NULLs
   * (as RunDao.DUE_SINCE does for runs). An ended delivery's next_attempt_at is NULL, H2 sorts
   * NULLs first, and with an upper bound alone each claim read every ended delivery in the log.
   */
  static final String DUE_SINCE = "TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00'";

  /** A due delivery, its endpoint and workspace. */
  /** A due delivery; {@code lapsedOwner}: the owner of a lease that lapsed on it, or null. */
  record Due(String id, String endpointId, String workspaceId, String lapsedOwner) {}

  /** A delivery leased for an attempt, with what to send. */
  record Claimed(String id, String workspaceId, String endpointId, String eventId, int attempts, Instant giveUpAt,
      String payload) {
    /** What holding its body costs, counted against webhooks.max_bytes_in_flight. */
    long weight() {
      return payload == null ? 0 : payload.length();
    }

    /** The same delivery without its body: what an outcome waiting to be recorded keeps. */
    Claimed withoutPayload() {
      return new Claimed(id, workspaceId, endpointId, eventId, attempts, giveUpAt, null);
    }
  }

  /**
   * Due deliveries that no live lease holds, longest due first, leaving out those of the endpoints
   * in {@code except} and of the workspaces in {@code exceptWorkspaces} (none when empty).
   */
  static List<Due> due(Connection c, Instant now, Collection<String> except, Collection<String> exceptWorkspaces,
      int limit) {
    String sql = "SELECT id, endpoint_id, workspace_id, lease_owner FROM webhook_delivery WHERE next_attempt_at >= "
        + DUE_SINCE
        + " AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?)"
        + (except.isEmpty() ? "" : " AND endpoint_id NOT IN (" + marks(except.size()) + ")")
        + (exceptWorkspaces.isEmpty() ? "" : " AND workspace_id NOT IN (" + marks(exceptWorkspaces.size()) + ")")
        + " ORDER BY next_attempt_at LIMIT ?";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      int i = 1;
      Jdbc.setTime(ps, i++, now);
      Jdbc.setTime(ps, i++, now);
      for (String id : except) {
        ps.setString(i++, id);
      }
      for (String id : exceptWorkspaces) {
        ps.setString(i++, id);
      }
      ps.setInt(i, limit);
      List<Due> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new Due(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4)));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  /** Leases these deliveries to {@code owner} where still due and unleased; the others are someone else's. */
  static int claim(Connection c, Collection<String> ids, String owner, Instant until, Instant now) {
    String sql = "UPDATE webhook_delivery SET lease_owner = ?, lease_until = ? WHERE id IN (" + marks(ids.size())
        + ") AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?)";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      int i = 1;
      ps.setString(i++, owner);
      Jdbc.setTime(ps, i++, until);
      for (String id : ids) {
        ps.setString(i++, id);
      }
      Jdbc.setTime(ps, i++, now);
      Jdbc.setTime(ps, i, now);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  /** Those of these deliveries that {@code owner} holds, with their bodies. */
  static List<Claimed> claimed(Connection c, Collection<String> ids, String owner) {
    String sql = "SELECT d.id, d.workspace_id, d.endpoint_id, d.event_id, d.attempts, d.give_up_at, m.payload "
        + "FROM webhook_delivery d JOIN webhook_message m ON m.id = d.event_id WHERE d.id IN (" + marks(ids.size())
        + ") AND d.lease_owner = ?";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      int i = 1;
      for (String id : ids) {
        ps.setString(i++, id);
      }
      ps.setString(i, owner);
      List<Claimed> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new Claimed(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getInt(5),
              Jdbc.getTime(rs, "give_up_at"), rs.getString(7)));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  static final String ENDPOINT_COLUMNS = "id, workspace_id, url, description, event_types, enabled, disabled_reason, "
      + "secret, previous_secret, previous_secret_until, failing_since, created_at, updated_at";

  static List<WebhookEndpoint> endpoints(Connection c, Collection<String> ids) {
    String sql = "SELECT " + ENDPOINT_COLUMNS + " FROM webhook_endpoint WHERE id IN (" + marks(ids.size()) + ")";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      int i = 1;
      for (String id : ids) {
        ps.setString(i++, id);
      }
      List<WebhookEndpoint> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(endpoint(rs));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  /** The endpoint in the row of a query for {@link #ENDPOINT_COLUMNS}. */
  static WebhookEndpoint endpoint(ResultSet rs) throws SQLException {
    return new WebhookEndpoint(rs.getString("id"), rs.getString("workspace_id"), rs.getString("url"),
        rs.getString("description"), rs.getString("event_types"), rs.getBoolean("enabled"),
        rs.getString("disabled_reason"), rs.getString("secret"), rs.getString("previous_secret"),
        Jdbc.getTime(rs, "previous_secret_until"), Jdbc.getTime(rs, "failing_since"),
        Jdbc.getTime(rs, "created_at"), Jdbc.getTime(rs, "updated_at"));
  }

  private static final String SUCCEEDED = "UPDATE webhook_delivery SET status = '" + WebhookDelivery.SUCCEEDED
      + "', attempts = ?, next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL, last_response_status = ?, "
      + "last_error = NULL, updated_at = ? WHERE id = ? AND lease_owner = ?";
  private static final String ATTEMPT = "INSERT INTO webhook_attempt (delivery_id, attempt, started_at, "
      + "duration_ms, response_status, response_body, error) VALUES (?, ?, ?, ?, ?, ?, ?)";

  /** A successful attempt to record: the delivery, the lease it was made under, and the attempt. */
  record Success(String deliveryId, String owner, int attempts, int status, Instant now, WebhookAttempt attempt) {}

  /**
   * Records successful attempts (WebhookDao.attempted and insertAttempt, for many at once): one
   * batch for the deliveries, each only if {@code owner} still holds its lease, and one for the
   * attempts of those. Returns which were recorded.
   */
  static boolean[] recordSuccesses(Connection c, List<Success> successes) {
    boolean[] recorded = new boolean[successes.size()];
    try {
      int[] updated;
      try (PreparedStatement ps = c.prepareStatement(SUCCEEDED)) {
        for (Success s : successes) {
          ps.setInt(1, s.attempts());
          ps.setInt(2, s.status());
          Jdbc.setTime(ps, 3, s.now());
          ps.setString(4, s.deliveryId());
          ps.setString(5, s.owner());
          ps.addBatch();
        }
        updated = ps.executeBatch();
      }
      try (PreparedStatement ps = c.prepareStatement(ATTEMPT)) {
        int rows = 0;
        for (int i = 0; i < successes.size(); i++) {
          // 0: the lease ran out and another attempt has it now. (A driver that cannot count says
          // SUCCESS_NO_INFO, below 0: the statement ran, taken as recorded.)
          if (updated[i] == 0) {
            continue;
          }
          recorded[i] = true;
          WebhookAttempt a = successes.get(i).attempt();
          ps.setString(1, a.deliveryId());
          ps.setInt(2, a.attempt());
          Jdbc.setTime(ps, 3, a.startedAt());
          ps.setInt(4, a.durationMs());
          ps.setObject(5, a.responseStatus(), Types.INTEGER);
          ps.setString(6, a.responseBody());
          ps.setString(7, a.error());
          ps.addBatch();
          rows++;
        }
        if (rows > 0) {
          ps.executeBatch();
        }
      }
      return recorded;
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  /** Releases a delivery leased to {@code owner} and not attempted. */
  static void release(Connection c, Collection<String> ids, String owner) {
    String sql = "UPDATE webhook_delivery SET lease_owner = NULL, lease_until = NULL WHERE id IN ("
        + marks(ids.size()) + ") AND lease_owner = ?";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      int i = 1;
      for (String id : ids) {
        ps.setString(i++, id);
      }
      ps.setString(i, owner);
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new Jdbc.UncheckedSqlException(e);
    }
  }

  private static String marks(int n) {
    return String.join(", ", Collections.nCopies(n, "?"));
  }
}
