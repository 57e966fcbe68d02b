package dev.runway.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.runway.ServerSettings;
import dev.runway.support.BothDatabases;
import dev.runway.support.TestDatabase;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

/** Opening a database: when Flyway has to run, and when the schema is already the jar's. */
class DatabaseTest {
  private static final Pattern VERSIONED = Pattern.compile("V(\\d+)__.*\\.sql");

  @Test
  void schema_version_is_the_newest_migration_for_each_database() throws Exception {
    for (String vendor : List.of("h2", "postgresql")) {
      int newest = Math.max(newestIn("/db/migration"), newestIn("/db/vendor/" + vendor));
      assertEquals(String.valueOf(newest), Database.SCHEMA_VERSION, vendor);
    }
  }

  @BothDatabases
  void the_schema_counts_as_current_only_once_the_newest_migration_succeeded(TestDatabase kind) throws Exception {
    ServerSettings settings = ServerSettings.from(kind.settingsForFreshDatabase());
    try (HikariDataSource pool = pool(settings)) {
      assertFalse(Database.schemaIsCurrent(pool), "a new database has no schema");
      try (Database opened = Database.using(pool)) {
        assertTrue(Database.schemaIsCurrent(pool), "migrated at the first start");
      }
      try (Database reopened = Database.using(pool)) {
        assertTrue(Database.schemaIsCurrent(pool));
      }
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        // As if the last migration had failed halfway: the next start must hand it back to Flyway.
        s.execute("UPDATE \"flyway_schema_history\" SET \"success\" = FALSE WHERE \"version\" = '"
            + Database.SCHEMA_VERSION + "'");
      }
      assertFalse(Database.schemaIsCurrent(pool));
    }
  }

  @BothDatabases
  void a_run_start_writes_no_foreign_key_check_and_no_entry_in_an_index_of_a_column_most_runs_leave_empty(
      TestDatabase kind) throws Exception {
    ServerSettings settings = ServerSettings.from(kind.settingsForFreshDatabase());
    try (HikariDataSource pool = pool(settings); Database opened = Database.using(pool);
         Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      ResultSet keys = s.executeQuery("SELECT COUNT(*) FROM information_schema.table_constraints WHERE "
          + "UPPER(table_name) = 'RUN' AND table_schema = CURRENT_SCHEMA AND constraint_type = 'FOREIGN KEY'");
      keys.next();
      assertEquals(0, keys.getInt(1), "the run's foreign key to its workflow is gone (V30)");
      // The run table's indexes (both databases' metadata): the parent, thread, agent and concurrency
      // key are found through their own tables since V31; due_at is the only sparse column indexed.
      List<String> indexed = new java.util.ArrayList<>();
      try (ResultSet columns = c.getMetaData().getIndexInfo(null, c.getSchema(), kind == TestDatabase.H2 ? "RUN" : "run",
          false, false)) {
        while (columns.next()) {
          indexed.add(columns.getString("COLUMN_NAME").toLowerCase(java.util.Locale.ROOT));
        }
      }
      assertTrue(indexed.contains("due_at") && indexed.contains("workflow_id"), indexed.toString());
      for (String sparse : List.of("parent_run_id", "thread_id", "agent_id", "concurrency_key")) {
        assertFalse(indexed.contains(sparse), sparse + " in " + indexed);
      }
      if (kind == TestDatabase.POSTGRESQL) {
        ResultSet due = s.executeQuery("SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            + "AND indexname = 'run_due'");
        assertTrue(due.next());
        assertTrue(due.getString(1).contains("WHERE (due_at IS NOT NULL)"), due.getString(1));
      }
    }
  }

  @BothDatabases
  void v31_puts_the_runs_stored_before_it_in_the_lookup_tables(TestDatabase kind) throws Exception {
    ServerSettings settings = ServerSettings.from(kind.settingsForFreshDatabase());
    try (HikariDataSource pool = pool(settings)) {
      Flyway.configure().dataSource(pool)
          .locations("classpath:db/migration", "classpath:db/vendor/" + (kind == TestDatabase.H2 ? "h2" : "postgresql"))
          .target("30").load().migrate();
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        String columns = "INSERT INTO run (id, workspace_id, workflow_id, agent_id, kind, project, status, "
            + "requires_approval, inputs, definition, steps, created_at, updated_at, parent_run_id, thread_id, concurrency_key) VALUES ";
        String at = "TIMESTAMP WITH TIME ZONE '2026-11-28 00:00:00+00', TIMESTAMP WITH TIME ZONE '2026-11-28 00:00:00+00'";
        s.execute(columns + "('run_1', 'ws_a', 'wf', NULL, 'workflow', 'p', 'succeeded', FALSE, '{}', '{}', '[]', " + at
            + ", NULL, NULL, NULL)");
        s.execute(columns + "('run_2', 'ws_a', 'wf', NULL, 'workflow', 'p', 'running', FALSE, '{}', '{}', '[]', " + at
            + ", 'run_1', NULL, 'k1')");
        s.execute(columns + "('run_3', 'ws_a', 'wf', NULL, 'workflow', 'p', 'succeeded', FALSE, '{}', '{}', '[]', " + at
            + ", NULL, NULL, 'k1')");
        s.execute(columns + "('run_4', 'ws_a', NULL, 'ag', 'agent', 'p', 'queued', FALSE, '{}', '{}', '[]', " + at
            + ", 'run_2', 'thr_1', NULL)");
      }
      try (Database migrated = Database.using(pool); Connection c = pool.getConnection();
           Statement s = c.createStatement()) {
        assertEquals(List.of("run_1 run_2", "run_2 run_4"), rows(s, "SELECT parent_run_id, run_id FROM run_by_parent"));
        assertEquals(List.of("ws_a thr_1 run_4"), rows(s, "SELECT workspace_id, thread_id, run_id FROM run_by_thread"));
        assertEquals(List.of("ws_a ag run_4"), rows(s, "SELECT workspace_id, agent_id, run_id FROM run_by_agent"));
        assertEquals(List.of("ws_a wf k1 running run_2"),
            rows(s, "SELECT workspace_id, workflow_id, concurrency_key, status, run_id FROM run_by_key"),
            "only the key's runs that have not ended");
      }
    }
  }

  /** Each row's columns joined by spaces, in order. */
  private static List<String> rows(Statement s, String select) throws java.sql.SQLException {
    List<String> rows = new java.util.ArrayList<>();
    try (ResultSet rs = s.executeQuery(select + " ORDER BY 1, 2")) {
      int n = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        StringBuilder row = new StringBuilder(rs.getString(1));
        for (int i = 2; i <= n; i++) {
          row.append(' ').append(rs.getString(i));
        }
        rows.add(row.toString());
      }
    }
    return rows;
  }

  private static HikariDataSource pool(ServerSettings settings) {
    HikariDataSource pool = new HikariDataSource();
    pool.setJdbcUrl(settings.dbUrl());
    pool.setUsername(settings.dbUser());
    pool.setPassword(settings.dbPassword());
    pool.setMaximumPoolSize(2);
    return pool;
  }

  private static int newestIn(String folder) throws IOException, URISyntaxException {
    try (Stream<Path> files = Files.list(Path.of(DatabaseTest.class.getResource(folder).toURI()))) {
      return files.map(f -> VERSIONED.matcher(f.getFileName().toString()))
          .filter(Matcher::matches)
          .mapToInt(m -> Integer.parseInt(m.group(1)))
          .max()
          .orElse(0);
    }
  }
}
