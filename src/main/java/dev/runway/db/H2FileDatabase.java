package dev.runway.db;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Base64;
import java.util.Optional;
import java.util.Set;
import org.h2.engine.ConnectionInfo;
import org.h2.engine.SessionRemote;
import org.h2.engine.SysProperties;
import org.h2.jdbc.JdbcConnection;
import org.h2.jdbcx.JdbcDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An embedded H2 database in a file ({@code jdbc:h2:file:…} or {@code jdbc:h2:<path>}), kept to
 * its owner on this machine: the server socket H2 opens for AUTO_SERVER listens on loopback only,
 * the database has a generated password kept in {@code <path>.password} (unless db.password is
 * set), and its directory and files are readable by their owner only.
 */
final class H2FileDatabase {
  private static final Logger LOG = LoggerFactory.getLogger(H2FileDatabase.class);
  static final String BIND_ADDRESS = "h2.bindAddress";
  private static final Set<PosixFilePermission> OWNER_ONLY_DIRECTORY = PosixFilePermissions.fromString("rwx------");
  private static final Set<PosixFilePermission> OWNER_ONLY_FILE = PosixFilePermissions.fromString("rw-------");
  private static final SecureRandom RANDOM = new SecureRandom();

  private final String shownName;
  private final Path base;

  private H2FileDatabase(String shownName, Path base) {
    this.shownName = shownName;
    this.base = base;
  }

  /** The file database this URL names; empty for other H2 URLs (mem:, tcp:, ssl:, nio: and such) and other databases. */
  static Optional<H2FileDatabase> of(String url) {
    if (!url.startsWith("jdbc:h2:")) {
      return Optional.empty();
    }
    Path base;
    try {
      ConnectionInfo info = new ConnectionInfo(url, null, null, null);
      if (info.isRemote() || !info.isPersistent()) {
        return Optional.empty();
      }
      base = Path.of(info.getName()); // absolute, as H2 resolves it (~ and all)
    } catch (RuntimeException e) {
      return Optional.empty(); // a URL H2 refuses: it says why when asked to connect
    }
    if (!base.isAbsolute()) {
      return Optional.empty(); // a file system prefix such as nio: or memFS:
    }
    String shown = url.substring("jdbc:h2:".length()).split(";", 2)[0];
    return Optional.of(new H2FileDatabase(shown.startsWith("file:") ? shown.substring("file:".length()) : shown, base));
  }

  /**
   * Makes the server sockets H2 opens (AUTO_SERVER's among them) listen on 127.0.0.1 instead of
   * every interface, unless the JVM was started with -Dh2.bindAddress. H2 reads the property once,
   * when its first class is initialized, and also writes that address into the lock file, where a
   * second process (the keys command) finds the server to connect to.
   */
  static void keepServersOnLoopback() {
    if (System.getProperty(BIND_ADDRESS) == null) {
      System.setProperty(BIND_ADDRESS, "127.0.0.1");
    }
    if (!System.getProperty(BIND_ADDRESS).equals(SysProperties.BIND_ADDRESS)) {
      LOG.warn("H2 was loaded before Runway could set {}: its server ports (AUTO_SERVER) listen on {}; "
          + "start Java with -D{}=127.0.0.1", BIND_ADDRESS,
          SysProperties.BIND_ADDRESS == null ? "every interface" : SysProperties.BIND_ADDRESS, BIND_ADDRESS);
    }
  }

  /** The database as db.url names it, for messages: {@code ./data/runway}. */
  String shownName() {
    return shownName;
  }

  Path passwordFile() {
    return sibling(".password");
  }

  /** Written before the password of a database that had none is set, renamed to {@link #passwordFile} after. */
  private Path newPasswordFile() {
    return sibling(".password.new");
  }

  private Path dataFile() {
    return sibling(".mv.db");
  }

  private Path sibling(String suffix) {
    return base.resolveSibling(base.getFileName() + suffix);
  }

  /**
   * The password to log in with when db.password is empty: the one in {@link #passwordFile}, made
   * on the first start. A database made before Runway generated passwords (its user has an empty
   * one) is moved to a generated password here, crash-safely: the new password is written to a
   * file of its own first, then set in the database, then that file is renamed to the password
   * file. An interrupted move is finished at the next start, whichever step it stopped at.
   *
   * <p>When another process holds that old database (reached through AUTO_SERVER), its empty
   * password is returned and the move left to the process that holds it.
   */
  String password(String url, String user) {
    try {
      createDirectory();
      if (Files.exists(passwordFile())) {
        return read(passwordFile());
      }
      if (!Files.exists(dataFile())) {
        return write(passwordFile(), generate()); // a new database: H2 makes it with this password
      }
      if (!Files.exists(newPasswordFile())) {
        write(newPasswordFile(), generate());
      }
      String generated = read(newPasswordFile());
      if (!setPassword(url, user, generated)) {
        return "";
      }
      Files.move(newPasswordFile(), passwordFile(), StandardCopyOption.ATOMIC_MOVE);
      syncDirectory();
      LOG.info("the database {} has a generated password now, kept in {}", shownName, passwordFile());
      return generated;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot keep the password of the database " + shownName + " in "
          + passwordFile() + ": " + e.getMessage(), e);
    }
  }

  /**
   * Sets {@code generated} as the user's password, logging in with the empty one; true if it is the
   * password now, false if another process holds the database (then nothing is changed).
   */
  private boolean setPassword(String url, String user, String generated) {
    JdbcDataSource h2 = new JdbcDataSource();
    h2.setURL(url);
    h2.setUser(user);
    h2.setPassword(generated);
    try (Connection c = Database.firstConnection(h2)) {
      return true; // set before a crash stopped the move
    } catch (SQLException e) {
      if (!SqlErrors.isLoginRefused(e)) {
        throw new DatabaseUnavailableException("cannot open the database: " + e.getMessage(), e);
      }
    }
    h2.setPassword("");
    try (Connection c = Database.firstConnection(h2); Statement s = c.createStatement()) {
      if (isReachedThroughAutoServer(c)) {
        return false;
      }
      String name;
      try (ResultSet r = s.executeQuery("SELECT CURRENT_USER")) {
        r.next();
        name = r.getString(1);
      }
      // The password is base64url: nothing in it needs escaping in a string literal.
      s.execute("ALTER USER \"" + name.replace("\"", "\"\"") + "\" SET PASSWORD '" + generated + "'");
      s.execute("CHECKPOINT SYNC"); // on the disk before the password file says it is set
      return true;
    } catch (SQLException e) {
      if (SqlErrors.isLoginRefused(e)) {
        throw new DatabaseUnavailableException("cannot log in to the database " + shownName + " as " + user
            + ": neither the password in " + newPasswordFile() + " nor an empty one is accepted; set db.password", e);
      }
      throw new DatabaseUnavailableException("cannot open the database: " + e.getMessage(), e);
    }
  }

  /**
   * True when this connection reaches the database through the AUTO_SERVER of another process that
   * holds the file, instead of opening it in this one.
   */
  static boolean isReachedThroughAutoServer(Connection c) throws SQLException {
    return c.unwrap(JdbcConnection.class).getSession() instanceof SessionRemote;
  }

  /**
   * Makes the database's directory and files owner-only (0700, 0600), for databases made before
   * Runway did so too. Call it once the database is open: H2 makes its lock file then. A directory
   * that holds other files too (a home directory, /tmp) is left as it is: only the database's own
   * files are changed. Does nothing on file systems without POSIX permissions.
   */
  void restrictPermissions() {
    Path dir = base.getParent();
    String prefix = base.getFileName() + ".";
    boolean onlyOurs = true;
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path file : files) {
        if (!file.getFileName().toString().startsWith(prefix)) {
          onlyOurs = false;
        } else if (Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
          Files.setPosixFilePermissions(file, OWNER_ONLY_FILE);
        }
      }
      if (onlyOurs) {
        Files.setPosixFilePermissions(dir, OWNER_ONLY_DIRECTORY);
      }
    } catch (UnsupportedOperationException e) {
      // no POSIX permissions here
    } catch (IOException e) {
      LOG.warn("cannot make the files of the database {} owner-only: {}", shownName, e.toString());
    }
  }

  /** A directory Runway makes is owner-only from the start, before H2 writes anything into it. */
  private void createDirectory() throws IOException {
    Path dir = base.getParent();
    if (Files.isDirectory(dir)) {
      return;
    }
    try {
      Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIRECTORY));
    } catch (UnsupportedOperationException e) {
      Files.createDirectories(dir);
    }
  }

  private static String generate() {
    byte[] bytes = new byte[32];
    RANDOM.nextBytes(bytes);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
  }

  private static String read(Path file) throws IOException {
    String password = Files.readString(file, StandardCharsets.UTF_8).strip();
    if (password.isEmpty()) {
      throw new IOException(file + " is empty");
    }
    return password;
  }

  /**
   * Writes the file whole or not at all: a temporary file (owner-only, as Java makes them), synced
   * to the disk, then renamed.
   */
  private String write(Path file, String password) throws IOException {
    Path temporary = Files.createTempFile(file.getParent(), file.getFileName() + ".", ".tmp");
    try {
      try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.WRITE)) {
        channel.write(StandardCharsets.UTF_8.encode(password + "\n"));
        channel.force(true);
      }
      Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(temporary);
    }
    syncDirectory();
    return password;
  }

  /** Makes a rename in the directory durable (where the operating system allows it). */
  private void syncDirectory() {
    try (FileChannel dir = FileChannel.open(base.getParent(), StandardOpenOption.READ)) {
      dir.force(true);
    } catch (IOException e) {
      // not possible on every system; the rename still happened
    }
  }
}
