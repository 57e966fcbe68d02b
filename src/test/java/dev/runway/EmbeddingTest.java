package dev.runway;

import dev.runway.support.TempFiles;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.runway.auth.Scope;
import dev.runway.config.Settings;
import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.List;

/** The public embedding API: Runway.start on a random port, with its own pool or the caller's DataSource. */
class EmbeddingTest {
  @BothDatabases
  void start_serves_on_a_random_port_and_close_stops_it(TestDatabase db) throws Exception {
    Settings settings = db.settingsForFreshDatabase();
    int port;
    try (Runway runway = Runway.start(settings)) {
      port = runway.port();
      assertTrue(port > 0);
      assertEquals(200, Http.onPort(port, null).get("/readyz").status());
      String key = runway.keys().create("embedded", "app", List.of(Scope.values()), null, null).key();
      Http http = Http.onPort(port, key);
      Http.Reply put = http.put("/v1/workflows/sync", "{\"name\":\"Sync\"}");
      assertEquals(201, put.status(), put.body());
      Http.Reply run = http.post("/v1/workflows/sync/runs", "{\"project\":\"crm\"}");
      assertEquals(200, run.status(), run.body());
      String id = Json.tree(run.body()).get("id").asText();
      assertEquals(200, http.get("/v1/runs/" + id).status());
    }
    assertRefused(port);
  }

  @BothDatabases
  void start_on_the_callers_datasource_leaves_it_open(TestDatabase db) throws Exception {
    Settings settings = db.settingsForFreshDatabase();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(settings.asMap().get("db.url"));
    config.setUsername(settings.asMap().get("db.user"));
    config.setPassword(settings.asMap().get("db.password"));
    try (HikariDataSource own = new HikariDataSource(config)) {
      try (Runway runway = Runway.start(settings, own)) {
        assertEquals(200, Http.onPort(runway.port(), null).get("/healthz").status());
      }
      try (Connection c = own.getConnection()) {
        assertTrue(c.isValid(2), "the caller's DataSource is still usable after close");
      }
    }
  }

  @BothDatabases
  void first_start_of_an_empty_database_makes_one_admin_key_and_loads_workflow_files(TestDatabase db)
      throws Exception {
    Path dir = TempFiles.dir("runway-workflows-");
    Files.writeString(dir.resolve("hello.json"), "{\"name\":\"Hello\",\"steps\":[]}");
    Settings settings = db.settingsForFreshDatabase()
        .with("bootstrap.admin_key", "true")
        .with("workflows.dir", dir.toString());
    String key;
    try (Runway runway = Runway.start(settings)) {
      key = runway.firstAdminKey().orElseThrow();
      assertTrue(key.startsWith("wsk_"));
      Http.Reply run = Http.onPort(runway.port(), key).post("/v1/workflows/hello/runs", "{\"project\":\"demo\"}");
      assertEquals(200, run.status(), run.body());
    }
    try (Runway again = Runway.start(settings)) {
      assertTrue(again.firstAdminKey().isEmpty(), "the admin key is made only on the first start");
      assertEquals(200, Http.onPort(again.port(), key).get("/v1/workflows/hello").status(), "the key still works");
    }
  }

  /**
   * The HTTP server starts on a thread of its own while the main thread opens the database, starts
   * the engine and loads the workflow files; when the files are bad, the start must fail and leave
   * nothing behind: port free, engine stopped.
   */
  @BothDatabases
  void a_start_that_fails_after_the_server_listens_stops_the_server_and_the_engine(TestDatabase db)
      throws Exception {
    Path dir = TempFiles.dir("runway-workflows-");
    Files.writeString(dir.resolve("broken.json"), "{\"name\": ");
    int port;
    try (ServerSocket probe = new ServerSocket(0, 0, InetAddress.getLoopbackAddress())) {
      port = probe.getLocalPort();
    }
    Settings settings = db.settingsForFreshDatabase()
        .with("http.port", String.valueOf(port))
        .with("engine.enabled", "true")
        .with("workflows.dir", dir.toString());

    RuntimeException failed = assertThrows(RuntimeException.class, () -> Runway.start(settings));
    assertTrue(failed.getMessage().contains("broken.json"), failed.getMessage());
    try (ServerSocket again = new ServerSocket(port, 0, InetAddress.getLoopbackAddress())) {
      assertEquals(port, again.getLocalPort(), "the port the failed start listened on is free again");
    }
    assertTrue(Thread.getAllStackTraces().keySet().stream()
        .noneMatch(t -> t.getName().equals("runway-engine-dispatcher") && t.isAlive()), "the engine stopped");
    assertRefused(port);
  }

  /** Nothing listens on the port any more: a connection to it is refused. */
  private static void assertRefused(int port) {
    assertInstanceOf(ConnectException.class,
        assertThrows(UncheckedIOException.class, () -> Http.onPort(port, null).get("/healthz")).getCause());
  }
}
