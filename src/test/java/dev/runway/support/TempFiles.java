package dev.runway.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * The temporary folders and PostgreSQL schemas a test run makes, removed when the test JVM exits
 * (after the databases still open in it are closed), so that runs leave nothing behind in /tmp or
 * in the test database.
 */
public final class TempFiles {
  private static final List<Path> DIRS = new ArrayList<>();
  private static final List<String> SCHEMAS = new ArrayList<>();
  private static final List<Runnable> FIRST = new ArrayList<>();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(TempFiles::cleanUp, "test-cleanup"));
  }

  private TempFiles() {}

  /** A new temporary folder, deleted with what it holds when the tests end. */
  public static Path dir(String prefix) {
    try {
      Path dir = Files.createTempDirectory(prefix);
      synchronized (DIRS) {
        DIRS.add(dir);
      }
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A PostgreSQL schema (made by the caller) to drop when the tests end. */
  static void schema(String name) {
    synchronized (DIRS) {
      SCHEMAS.add(name);
    }
  }

  /** Something to do before the folders go, e.g. close a database whose files are in one. */
  static void first(Runnable closer) {
    synchronized (DIRS) {
      FIRST.add(closer);
    }
  }

  private static void cleanUp() {
    synchronized (DIRS) {
      for (Runnable closer : FIRST) {
        try {
          closer.run();
        } catch (RuntimeException e) {
          // going away anyway
        }
      }
      if (!SCHEMAS.isEmpty()) {
        try (Connection c = DriverManager.getConnection(TestDatabase.PG_URL, TestDatabase.PG_USER,
            TestDatabase.PG_PASSWORD); Statement s = c.createStatement()) {
          for (String schema : SCHEMAS) {
            s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
          }
        } catch (SQLException e) {
          System.err.println("could not drop the test schemas " + SCHEMAS + ": " + e.getMessage());
        }
      }
      for (Path dir : DIRS) {
        try (Stream<Path> files = Files.walk(dir)) {
          files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
          // already gone
        }
      }
    }
  }
}
