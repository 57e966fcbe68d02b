package dev.runway.it;

import dev.runway.support.Http;
import dev.runway.support.TempFiles;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.runway.core.Json;
import java.io.IOException;
import java.io.Reader;
import java.net.ConnectException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The packaged jar on an H2 file as shipped (AUTO_SERVER=TRUE, user sa, db.password empty): the
 * database is private to its owner on this machine, the keys command works while the server runs,
 * and a second server on the same file, or on a port in use, stops at once with one line.
 */
class H2DatabaseIT {
  private static Path database; // the path H2 is given, without .mv.db
  private static Map<String, String> env;
  private static RunwayProcess server;
  private static Http http;
  private static String key;

  @BeforeAll
  static void start() throws Exception {
    database = TempFiles.dir("runway-h2-it-").resolve("data").resolve("runway");
    env = env(database);
    server = new RunwayProcess(env, TempFiles.dir("runway-h2-it-server-"));
    http = server.http(null);
    server.start();
  }

  @AfterAll
  static void stop() throws Exception {
    if (server != null) {
      server.stop();
    }
  }

  @Test
  void the_auto_server_port_listens_on_loopback_only() throws Exception {
    int port = autoServerPort();
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 2000); // the keys command's way in
    }
    List<InetAddress> others = nonLoopbackAddresses();
    assumeTrue(!others.isEmpty(), "this machine has no address but loopback: nothing to check");
    for (InetAddress address : others) {
      try (Socket s = new Socket()) {
        assertThrows(ConnectException.class, () -> s.connect(new InetSocketAddress(address, port), 2000),
            "H2's port " + port + " answers on " + address);
      }
    }
  }

  @Test
  void the_database_has_a_generated_password_and_owner_only_files() throws Exception {
    Path dir = database.getParent();
    Path passwordFile = sibling(".password");
    assertTrue(Files.exists(passwordFile), "the password file is beside the database");
    if (Files.getFileStore(dir).supportsFileAttributeView(PosixFileAttributeView.class)) {
      assertEquals("rwx------", permissions(dir), dir.toString());
      try (var files = Files.list(dir)) {
        for (Path file : files.toList()) {
          assertEquals("rw-------", permissions(file), file.toString());
        }
      }
      assertTrue(Files.exists(sibling(".lock.db")) && Files.exists(sibling(".mv.db")), "checked the lock and data files");
    }
    // Through the server's AUTO_SERVER port, as any local process would come in.
    SQLException refused = assertThrows(SQLException.class, () -> DriverManager.getConnection(url(database), "sa", "").close());
    assertEquals("28000", refused.getSQLState(), refused.toString());
    try (Connection c = DriverManager.getConnection(url(database), "sa", password(database))) {
      assertTrue(c.isValid(2));
    }
  }

  @Test
  void keys_create_works_while_the_server_runs_and_the_server_accepts_its_key() throws Exception {
    assertEquals(200, http.get("/v1/runs", key()).status());
  }

  @Test
  void a_second_server_on_the_same_file_stops_at_once_with_one_line_and_leaves_the_first_alone() throws Exception {
    // Archived: a second server that loaded the workflow files would restore it.
    assertEquals(200, http.send("DELETE", "/v1/workflows/hello", key(), null, null).status());

    RunwayProcess second = new RunwayProcess(env, TempFiles.dir("runway-h2-it-second-"));
    long t0 = System.nanoTime();
    RunwayProcess.Result r = second.run(30);
    long ms = (System.nanoTime() - t0) / 1_000_000;

    System.out.printf("second server on the same H2 file: exit %d after %d ms%n", r.exitCode(), ms);
    assertEquals(4, r.exitCode(), r.stderr());
    assertOneLine("runway: the database " + database + " is in use by another process (another Runway server?); "
        + "stop it first or set db.url to another database", r.stderr());
    for (String started : List.of("loaded workflows", "engine eng_", "Listening on", "ERROR")) {
      assertFalse(r.stderr().contains(started), started + ":\n" + r.stderr());
    }
    assertTrue(ms < 10_000, "stopped after " + ms + " ms");

    assertEquals(200, http.get("/readyz", null).status(), "the first server still serves");
    Http.Reply hello = http.get("/v1/workflows/hello", key());
    assertEquals(200, hello.status(), hello.body());
    assertFalse(Json.tree(hello.body()).get("archived_at").isNull(),
        "still archived: the second server did not apply the workflow files: " + hello.body());
  }

  @Test
  void a_port_in_use_stops_the_start_with_one_line_and_closes_the_database() throws Exception {
    Path other = TempFiles.dir("runway-h2-it-port-").resolve("runway");
    RunwayProcess process = new RunwayProcess(env(other), TempFiles.dir("runway-h2-it-port-"));

    RunwayProcess.Result r = process.runWithEnv(Map.of("RUNWAY_HTTP_PORT", Integer.toString(server.port)));

    assertEquals(5, r.exitCode(), r.stderr());
    assertOneLine("runway: cannot listen on 127.0.0.1:" + server.port
        + ": the port is in use (set http.port or RUNWAY_HTTP_PORT)", r.stderr());
    assertFalse(r.stdout().contains("wsk_"), "no admin key shown: " + r.stdout());
    assertFalse(Files.exists(Path.of(other + ".lock.db")), "H2 was closed");
    try (Connection c = DriverManager.getConnection("jdbc:h2:file:" + other, "sa", password(other))) {
      assertEquals(0, count(c, "SELECT COUNT(*) FROM workspace"), "no admin key made that nobody would see");
    }
  }

  @Test
  void a_database_made_with_an_empty_password_gets_a_generated_one_at_start_and_keeps_its_data() throws Exception {
    Path old = TempFiles.dir("runway-h2-it-old-").resolve("runway");
    try (Connection c = DriverManager.getConnection("jdbc:h2:file:" + old, "sa", ""); Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA legacy");
      s.execute("CREATE TABLE legacy.marker (note VARCHAR(20))");
      s.execute("INSERT INTO legacy.marker VALUES ('kept')");
    }
    RunwayProcess process = new RunwayProcess(env(old), TempFiles.dir("runway-h2-it-old-"));
    try {
      process.start();
      assertTrue(process.logged("has a generated password now"), process.log());
      assertFalse(Files.exists(Path.of(old + ".password.new")));
      SQLException refused = assertThrows(SQLException.class, () -> DriverManager.getConnection(url(old), "sa", "").close());
      assertEquals("28000", refused.getSQLState(), refused.toString());
      try (Connection c = DriverManager.getConnection(url(old), "sa", password(old))) {
        assertEquals(1, count(c, "SELECT COUNT(*) FROM legacy.marker WHERE note = 'kept'"));
      }
    } finally {
      process.stop();
    }
  }

  /** The server's settings as shipped but for where the database is: AUTO_SERVER, user sa, no password. */
  private static Map<String, String> env(Path database) {
    Map<String, String> env = new HashMap<>(Map.of(
        "RUNWAY_DB_URL", url(database),
        "RUNWAY_DB_USER", "sa",
        "RUNWAY_DB_PASSWORD", "",
        "RUNWAY_WORKFLOWS_DIR", Path.of("config/workflows").toAbsolutePath().toString()));
    return Collections.unmodifiableMap(env);
  }

  private static String url(Path database) {
    return "jdbc:h2:file:" + database + ";AUTO_SERVER=TRUE";
  }

  private static Path sibling(String suffix) {
    return Path.of(database + suffix);
  }

  private static String password(Path database) throws IOException {
    return Files.readString(Path.of(database + ".password")).strip();
  }

  /** The key the keys command made while the server ran (made once). */
  private static synchronized String key() throws Exception {
    if (key == null) {
      key = server.command("keys", "create", "--workspace", "default", "--name", "h2-it").trim();
      assertTrue(key.startsWith("wsk_"), key);
    }
    return key;
  }

  /** The port of H2's AUTO_SERVER, from the lock file where H2 writes it for other processes. */
  private static int autoServerPort() throws IOException {
    Properties lock = new Properties();
    try (Reader in = Files.newBufferedReader(sibling(".lock.db"))) {
      lock.load(in);
    }
    String address = lock.getProperty("server");
    assertTrue(address != null && address.startsWith("localhost:"), "H2 tells clients to come in on loopback: " + address);
    return Integer.parseInt(address.substring("localhost:".length()));
  }

  private static List<InetAddress> nonLoopbackAddresses() throws IOException {
    List<InetAddress> addresses = new ArrayList<>();
    for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
      if (nic.isUp()) {
        for (InetAddress address : Collections.list(nic.getInetAddresses())) {
          if (!address.isLoopbackAddress() && !address.isLinkLocalAddress()
              && !(address instanceof Inet6Address && ((Inet6Address) address).getScopedInterface() != null)) {
            addresses.add(address);
          }
        }
      }
    }
    return addresses;
  }

  /** The last line of stderr is {@code line}, and the only one of Runway's own (log lines are not). */
  private static void assertOneLine(String line, String stderr) {
    List<String> lines = stderr.lines().toList();
    assertEquals(line, lines.get(lines.size() - 1), stderr);
    assertEquals(1, lines.stream().filter(l -> l.startsWith("runway:")).count(), stderr);
    assertTrue(lines.stream().noneMatch(l -> l.startsWith("\tat ") || l.contains("Exception")), "no stack trace:\n" + stderr);
  }

  private static long count(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet r = s.executeQuery(sql)) {
      r.next();
      return r.getLong(1);
    }
  }

  private static String permissions(Path path) throws IOException {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(path));
  }
}
