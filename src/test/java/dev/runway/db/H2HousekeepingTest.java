package dev.runway.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.Runway;
import dev.runway.auth.Scope;
import dev.runway.config.Settings;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import org.h2.jdbcx.JdbcDataSource;
import org.h2.mvstore.MVStore;
import org.junit.jupiter.api.Test;

/**
 * H2 only: the settings Runway gives H2 at start, and the housekeeping they need. With a write at
 * every commit, H2's own background writer is off, and Runway has to rewrite old, mostly dead
 * chunks itself, or the file keeps one chunk per commit for good.
 */
class H2HousekeepingTest {
  private static final int RUNS = 400;

  @Test
  void old_chunks_are_rewritten_so_the_file_does_not_keep_one_chunk_per_commit() throws Exception {
    Settings settings = TestDatabase.H2.settingsForFreshDatabase();
    String url = settings.asMap().get("db.url");
    try (Runway runway = Runway.start(settings); Connection c = connectBeside(url)) {
      String key = runway.keys().create("hk", "load", List.of(Scope.values()), null, null).key();
      Http http = Http.onPort(runway.port(), key);
      assertEquals(201, http.put("/v1/workflows/hello", "{\"name\":\"Hello\"}").status());
      // One at a time, so that every start is a commit of its own.
      for (int i = 0; i < RUNS; i++) {
        assertEquals(200, http.post("/v1/workflows/hello/runs", "{\"project\":\"p\"}").status());
      }

      // The first round comes 10 s after the start, and H2 rewrites only chunks older than the
      // retention time Runway sets (5 s; with H2's 45 s this would time out). Nothing commits
      // meanwhile: the rounds store what they rewrote themselves.
      long deadline = System.nanoTime() + 30_000_000_000L;
      long chunks = chunkCount(c);
      while (chunks > RUNS / 4 && System.nanoTime() < deadline) {
        Thread.sleep(100);
        chunks = chunkCount(c);
      }
      assertTrue(chunks <= RUNS / 4, "chunks after " + RUNS + " commits: " + chunks);
      try (Statement s = c.createStatement();
           ResultSet r = s.executeQuery("SELECT COUNT(*) FROM run WHERE workspace_id = 'hk'")) {
        r.next();
        assertEquals(RUNS, r.getInt(1), "every run is still there after the rewrite");
      }
    }
  }

  @Test
  void what_h2_wrote_is_synced_to_the_disk_within_moments() throws Exception {
    String url = TestDatabase.H2.settingsForFreshDatabase().asMap().get("db.url");
    JdbcDataSource dataSource = new JdbcDataSource();
    dataSource.setURL(url);
    dataSource.setUser("sa");
    try (Connection c = dataSource.getConnection(); H2Housekeeping housekeeping = new H2Housekeeping(dataSource)) {
      MVStore store = H2Housekeeping.storeOf(c);
      try (Statement s = c.createStatement()) {
        s.execute("SET WRITE_DELAY 0");
        s.execute("CREATE TABLE t (id INT PRIMARY KEY)");
        s.execute("INSERT INTO t VALUES (1)");
      }
      long written = store.getFileStore().getWriteCount();
      assertTrue(written > 0);
      // A sync every 250 ms; the deadline leaves room for a busy build machine.
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (housekeeping.syncedWrites() != written && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(written, housekeeping.syncedWrites(), "synced after the last write to the file");
    }
  }

  @Test
  void a_started_server_has_made_h2_write_every_commit_keep_a_small_page_cache_and_few_old_chunks() throws Exception {
    Settings settings = TestDatabase.H2.settingsForFreshDatabase();
    String url = settings.asMap().get("db.url");
    try (Runway runway = Runway.start(settings); Connection c = connectBeside(url)) {
      assertEquals("0", setting(c, "WRITE_DELAY"), "a commit is in the file before its 200");
      assertEquals("1024", setting(c, "CACHE_SIZE"), "H2's page cache, in KB");
      assertEquals("5000", setting(c, "RETENTION_TIME"), "how long H2 keeps a chunk it no longer needs, in ms");
    }
  }

  /** A connection of the test's own to the database the server opened, with the password Runway generated for it. */
  private static Connection connectBeside(String url) throws Exception {
    String password = Files.readString(H2FileDatabase.of(url).orElseThrow().passwordFile()).strip();
    return DriverManager.getConnection(url, "sa", password);
  }

  private static String setting(Connection c, String name) throws SQLException {
    try (Statement s = c.createStatement();
         ResultSet r = s.executeQuery(
             "SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS WHERE SETTING_NAME = '" + name + "'")) {
      assertTrue(r.next(), name);
      return r.getString(1);
    }
  }

  private static long chunkCount(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
         ResultSet r = s.executeQuery(
             "SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS WHERE SETTING_NAME = 'info.CHUNK_COUNT'")) {
      r.next();
      return Long.parseLong(r.getString(1));
    }
  }
}
