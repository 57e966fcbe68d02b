package dev.runway.it;

import dev.runway.support.TempFiles;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A bad setting stops the packaged jar at once, with exit code 2 and one line naming the setting. */
class StartupIT {

  @Test
  void a_bad_setting_in_the_environment_stops_start_up_with_one_line_naming_it() throws Exception {
    Path dir = TempFiles.dir("runway-startup-");
    RunwayProcess.Result r = new RunwayProcess(Map.of("RUNWAY_DB_URL", "jdbc:h2:file:" + dir.resolve("db")), dir)
        .runWithEnv(Map.of("RUNWAY_HTTP_PORT", "abc"));
    assertEquals(2, r.exitCode(), r.stderr());
    assertEquals("runway: invalid setting http.port='abc' (from environment variable RUNWAY_HTTP_PORT): "
        + "must be a whole number from 0 to 65535\n", r.stderr());
  }

  @Test
  void an_unknown_key_in_the_config_file_stops_start_up_with_one_line_naming_it() throws Exception {
    Path dir = TempFiles.dir("runway-startup-");
    Path file = dir.resolve("runway.properties");
    Files.writeString(file, "http.prot=9090\n");
    RunwayProcess.Result r = new RunwayProcess(Map.of("RUNWAY_CONFIG", file.toString()), dir).runWithEnv(Map.of());
    assertEquals(2, r.exitCode(), r.stderr());
    assertEquals(1, r.stderr().lines().count(), r.stderr());
    assertTrue(r.stderr().contains("unknown setting 'http.prot'") && r.stderr().contains(file.toString()),
        r.stderr());
  }
}
