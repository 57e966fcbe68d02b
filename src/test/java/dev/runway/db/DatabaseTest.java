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
  void a_run_start_writes_no_foreign_key_check_and_on_postgresql_no_entry_in_the_sparse_indexes(TestDatabase kind)
      throws Exception {
    ServerSettings settings = ServerSettings.from(kind.settingsForFreshDatabase());
    try (HikariDataSource pool = pool(settings); Database opened = Database.using(pool);
         Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      ResultSet keys = s.executeQuery("SELECT COUNT(*) FROM information_schema.table_constraints WHERE "
          + "UPPER(table_name) = 'RUN' AND table_schema = CURRENT_SCHEMA AND constraint_type = 'FOREIGN KEY'");
      keys.next();
      assertEquals(0, keys.getInt(1), "the run's foreign key to its workflow is gone (V30)");
      if (kind == TestDatabase.POSTGRESQL) {
        ResultSet indexes = s.executeQuery("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = "
            + "current_schema() AND indexname IN ('run_parent', 'run_thread', 'run_concurrency_key', 'run_due', "
            + "'run_workspace_agent_id')");
        int partial = 0;
        while (indexes.next()) {
          assertTrue(indexes.getString(2).contains(" IS NOT NULL"), indexes.getString(2));
          partial++;
        }
        assertEquals(5, partial);
      }
    }
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
