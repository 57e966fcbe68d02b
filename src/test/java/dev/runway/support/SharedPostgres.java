package dev.runway.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import dev.runway.config.Settings;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * For tests of several Runway instances started on one PostgreSQL schema (H2 serves one process):
 * the schema, run starts spread over the instances, and a look with JDBC at what they wrote.
 */
public final class SharedPostgres {
  private static final Set<String> toldWhySkipped = ConcurrentHashMap.newKeySet();

  private SharedPostgres() {}

  /**
   * Settings of a fresh schema for instances each on a port of its own; without PostgreSQL the test
   * is skipped (said once per test class, as surefire does not show why), or fails when
   * RUNWAY_TEST_PG_REQUIRED=true. {@code which} names the tests in the message.
   */
  public static Settings freshSchemaOrSkip(Class<?> test, String which) {
    if (!TestDatabase.postgresReachable()) {
      String where = "PostgreSQL is not reachable at " + TestDatabase.PG_URL + " as " + TestDatabase.PG_USER;
      if (TestDatabase.PG_REQUIRED) {
        fail(where + ", and RUNWAY_TEST_PG_REQUIRED=true");
      }
      String why = "skipped: " + where + "; " + which + " run on PostgreSQL only "
          + "(set RUNWAY_TEST_PG_URL, or RUNWAY_TEST_PG_REQUIRED=true to fail instead of skipping)";
      if (toldWhySkipped.add(test.getName())) {
        System.out.println(test.getSimpleName() + " " + why);
      }
      Assumptions.abort(why);
    }
    return TestDatabase.POSTGRESQL.settingsForFreshDatabase().with("http.port", "0");
  }

  public static Connection connect(Settings settings) throws SQLException {
    Map<String, String> s = settings.asMap();
    return DriverManager.getConnection(s.get("db.url"), s.get("db.user"), s.get("db.password"));
  }

  /**
   * Starts {@code n} runs by POSTing {@code body} to {@code path} of the instances in turn,
   * {@code threads} at a time, each answered 200; their ids in order.
   */
  public static List<String> startRuns(List<Http> instances, String path, String body, int n, int threads)
      throws Exception {
    ExecutorService posters = Executors.newFixedThreadPool(threads);
    try {
      List<Future<String>> ids = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Http instance = instances.get(i % instances.size());
        ids.add(posters.submit(() -> {
          Http.Reply r = instance.post(path, body);
          assertEquals(200, r.status(), r.body());
          return r.json().get("id").asText();
        }));
      }
      List<String> out = new ArrayList<>();
      for (Future<String> id : ids) {
        out.add(id.get(30, TimeUnit.SECONDS));
      }
      return out;
    } finally {
      posters.shutdownNow();
    }
  }

  /** The one number a query counts. */
  public static long count(Connection db, String sql) {
    try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A query's first column. */
  public static List<String> strings(Connection db, String sql) {
    try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      List<String> out = new ArrayList<>();
      while (rs.next()) {
        out.add(rs.getString(1));
      }
      return out;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A query's rows as a map of its first column to its second. */
  public static Map<String, Long> longs(Connection db, String sql) {
    try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      Map<String, Long> out = new HashMap<>();
      while (rs.next()) {
        out.put(rs.getString(1), rs.getLong(2));
      }
      return out;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
