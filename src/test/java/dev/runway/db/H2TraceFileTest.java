package dev.runway.db;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.ServerSettings;
import dev.runway.config.Settings;
import dev.runway.support.TempFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * A fresh start leaves no H2 trace file: Flyway looks for its history table before making it, and
 * H2 would otherwise write that lookup's "table not found" there, as if something had gone wrong.
 */
class H2TraceFileTest {
  @Test
  void a_fresh_start_and_a_second_one_leave_no_trace_file() throws Exception {
    Path dir = TempFiles.dir("runway-h2-trace-");
    String url = "jdbc:h2:file:" + dir.resolve("data/runway") + ";AUTO_SERVER=TRUE";

    Database.open(settings(url)).close();
    Database.open(settings(url)).close();

    assertTrue(Files.exists(dir.resolve("data/runway.mv.db")), "the database was made");
    Path trace = dir.resolve("data/runway.trace.db");
    assertFalse(Files.exists(trace), () -> "trace file left: " + read(trace));
  }

  private static String read(Path file) {
    try {
      return Files.readString(file);
    } catch (Exception e) {
      return e.toString();
    }
  }

  private static DatabaseSettings settings(String url) {
    return ServerSettings.from(Settings.defaults()
        .with("db.url", url)
        .with("db.user", "sa")
        .with("db.password", "")
        .with("workflows.dir", "")
        .with("engine.enabled", "false")
        .with("db.connection_timeout_ms", "2000")).database();
  }
}
