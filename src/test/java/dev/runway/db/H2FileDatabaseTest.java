package dev.runway.db;

import dev.runway.support.TempFiles;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.runway.ServerSettings;
import dev.runway.config.Settings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/**
 * An H2 file database opened with an empty db.password gets a generated one, kept beside it
 * owner-only; one made before that (user sa, empty password) is moved to it; its files are made
 * owner-only. In one JVM; AUTO_SERVER's port and a second process are tested on the jar (H2IT).
 */
class H2FileDatabaseTest {

  @Test
  void a_new_database_gets_a_generated_password_kept_owner_only_beside_it() throws Exception {
    Path dir = TempFiles.dir("runway-h2-password-");
    String url = "jdbc:h2:file:" + dir.resolve("data/runway");

    Database.open(settings(url, "")).close();

    Path file = dir.resolve("data/runway.password");
    String password = Files.readString(file).strip();
    assertTrue(password.length() >= 40, password);
    if (posix(dir)) {
      assertEquals("rw-------", permissions(file));
      assertEquals("rwx------", permissions(dir.resolve("data")), "the directory Runway made");
      assertEquals("rw-------", permissions(dir.resolve("data/runway.mv.db")));
    }
    assertLoginRefused(url, "");
    assertTrue(count(url, password, "SELECT COUNT(*) FROM \"flyway_schema_history\"") > 0, "migrated");

    Database.open(settings(url, "")).close();
    assertEquals(password, Files.readString(file).strip(), "the same password at the next start");
  }

  @Test
  void a_database_made_with_an_empty_password_is_moved_to_a_generated_one_and_keeps_its_data() throws Exception {
    Path dir = TempFiles.dir("runway-h2-legacy-");
    String url = "jdbc:h2:file:" + dir.resolve("runway");
    try (Connection c = DriverManager.getConnection(url, "sa", ""); Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA legacy");
      s.execute("CREATE TABLE legacy.marker (note VARCHAR(20))");
      s.execute("INSERT INTO legacy.marker VALUES ('kept')");
    }

    Database.open(settings(url, "")).close();

    String password = Files.readString(dir.resolve("runway.password")).strip();
    assertFalse(Files.exists(dir.resolve("runway.password.new")));
    assertLoginRefused(url, "");
    assertEquals(1, count(url, password, "SELECT COUNT(*) FROM legacy.marker WHERE note = 'kept'"));
  }

  @Test
  void a_move_interrupted_before_the_password_was_set_is_finished_at_the_next_start() throws Exception {
    Path dir = TempFiles.dir("runway-h2-interrupted-");
    String url = "jdbc:h2:file:" + dir.resolve("runway");
    DriverManager.getConnection(url, "sa", "").close();
    Files.writeString(dir.resolve("runway.password.new"), "written-before-the-crash\n");

    Database.open(settings(url, "")).close();

    assertEquals("written-before-the-crash", Files.readString(dir.resolve("runway.password")).strip());
    assertFalse(Files.exists(dir.resolve("runway.password.new")));
    assertLoginRefused(url, "");
    assertLoginAccepted(url, "written-before-the-crash");
  }

  @Test
  void a_move_interrupted_after_the_password_was_set_is_finished_at_the_next_start() throws Exception {
    Path dir = TempFiles.dir("runway-h2-interrupted-");
    String url = "jdbc:h2:file:" + dir.resolve("runway");
    DriverManager.getConnection(url, "sa", "set-before-the-crash").close();
    Files.writeString(dir.resolve("runway.password.new"), "set-before-the-crash\n");

    Database.open(settings(url, "")).close();

    assertEquals("set-before-the-crash", Files.readString(dir.resolve("runway.password")).strip());
    assertFalse(Files.exists(dir.resolve("runway.password.new")));
    assertLoginAccepted(url, "set-before-the-crash");
  }

  @Test
  void a_database_whose_password_is_unknown_fails_at_once_naming_the_setting() throws Exception {
    Path dir = TempFiles.dir("runway-h2-unknown-");
    String url = "jdbc:h2:file:" + dir.resolve("runway");
    DriverManager.getConnection(url, "sa", "someone-elses").close();

    long t0 = System.nanoTime();
    DatabaseUnavailableException e =
        assertThrows(DatabaseUnavailableException.class, () -> Database.open(settings(url, "")));
    assertTrue(e.getMessage().contains("nor an empty one is accepted; set db.password"), e.getMessage());
    assertTrue(System.nanoTime() - t0 < 10_000_000_000L, "no wait for a database that refuses the login");

    long t1 = System.nanoTime();
    e = assertThrows(DatabaseUnavailableException.class, () -> Database.open(settings(url, "wrong")));
    assertTrue(e.getMessage().contains("the login was refused: Wrong user name or password"), e.getMessage());
    assertTrue(System.nanoTime() - t1 < 10_000_000_000L, "no wait for a database that refuses the login");
  }

  @Test
  void a_configured_password_is_used_as_is_and_no_file_is_written() throws Exception {
    Path dir = TempFiles.dir("runway-h2-configured-");
    String url = "jdbc:h2:file:" + dir.resolve("runway");

    Database.open(settings(url, "chosen-by-the-operator")).close();

    assertFalse(Files.exists(dir.resolve("runway.password")));
    assertLoginAccepted(url, "chosen-by-the-operator");
  }

  @Test
  void only_embedded_file_urls_are_file_databases() {
    assertTrue(H2FileDatabase.of("jdbc:h2:mem:runway").isEmpty());
    assertTrue(H2FileDatabase.of("jdbc:h2:mem:").isEmpty());
    assertTrue(H2FileDatabase.of("jdbc:h2:tcp://127.0.0.1:9092/runway").isEmpty());
    assertTrue(H2FileDatabase.of("jdbc:h2:ssl://127.0.0.1/runway").isEmpty());
    assertTrue(H2FileDatabase.of("jdbc:postgresql://127.0.0.1:5432/runway").isEmpty());

    H2FileDatabase file = H2FileDatabase.of("jdbc:h2:file:./data/runway;AUTO_SERVER=TRUE").orElseThrow();
    assertEquals("./data/runway", file.shownName());
    assertEquals(Path.of("data/runway.password").toAbsolutePath(), file.passwordFile());
    H2FileDatabase home = H2FileDatabase.of("jdbc:h2:~/runway").orElseThrow();
    assertEquals(Path.of(System.getProperty("user.home"), "runway.password"), home.passwordFile());
  }

  @Test
  void the_directory_is_made_owner_only_when_it_holds_only_the_database() throws Exception {
    Path dir = TempFiles.dir("runway-h2-own-dir-");
    assumeTrue(posix(dir));
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path data = Files.writeString(dir.resolve("runway.mv.db"), "");
    Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rw-r--r--"));

    H2FileDatabase.of("jdbc:h2:file:" + dir.resolve("runway")).orElseThrow().restrictPermissions();

    assertEquals("rwx------", permissions(dir));
    assertEquals("rw-------", permissions(data));
  }

  @Test
  void a_directory_shared_with_other_files_is_left_as_it_is_but_the_database_files_are_owner_only() throws Exception {
    Path dir = TempFiles.dir("runway-h2-shared-dir-");
    assumeTrue(posix(dir));
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path data = Files.writeString(dir.resolve("runway.mv.db"), "");
    Path lock = Files.writeString(dir.resolve("runway.lock.db"), "");
    Path other = Files.writeString(dir.resolve("notes.txt"), "not Runway's");
    for (Path file : new Path[] {data, lock, other}) {
      Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
    }

    H2FileDatabase.of("jdbc:h2:file:" + dir.resolve("runway")).orElseThrow().restrictPermissions();

    assertEquals("rwxr-xr-x", permissions(dir));
    assertEquals("rw-r--r--", permissions(other));
    assertEquals("rw-------", permissions(data));
    assertEquals("rw-------", permissions(lock));
  }

  private static DatabaseSettings settings(String url, String password) {
    return ServerSettings.from(Settings.defaults()
        .with("db.url", url)
        .with("db.user", "sa")
        .with("db.password", password)
        .with("workflows.dir", "")
        .with("engine.enabled", "false")
        .with("db.connection_timeout_ms", "250")).database();
  }

  private static void assertLoginRefused(String url, String password) {
    SQLException e = assertThrows(SQLException.class, () -> DriverManager.getConnection(url, "sa", password).close());
    assertTrue(SqlErrors.isLoginRefused(e), e.toString());
  }

  private static void assertLoginAccepted(String url, String password) throws SQLException {
    DriverManager.getConnection(url, "sa", password).close();
  }

  private static long count(String url, String password, String sql) throws SQLException {
    try (Connection c = DriverManager.getConnection(url, "sa", password); Statement s = c.createStatement();
         ResultSet r = s.executeQuery(sql)) {
      r.next();
      return r.getLong(1);
    }
  }

  private static boolean posix(Path path) throws Exception {
    return Files.getFileStore(path).supportsFileAttributeView(PosixFileAttributeView.class);
  }

  private static String permissions(Path path) throws Exception {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(path));
  }
}
