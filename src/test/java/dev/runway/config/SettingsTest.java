package dev.runway.config;

import dev.runway.ServerSettings;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Settings: built-in defaults, then the properties file, then RUNWAY_* environment variables; bad values stop start-up. */
class SettingsTest {
  @TempDir
  Path dir;

  @Test
  void defaults_are_the_documented_ones() {
    Settings defaults = Settings.defaults();
    assertEquals("8080", defaults.string("http.port"));
    assertEquals("127.0.0.1", defaults.string("http.host"));
    assertTrue(defaults.string("db.url").startsWith("jdbc:h2:file:./data/runway"), defaults.string("db.url"));
    assertEquals("65536", defaults.string("http.max_body_bytes"));
    assertEquals("24", defaults.string("idempotency.ttl_hours"));

    ServerSettings server = ServerSettings.from(defaults);
    assertEquals(8080, server.httpPort());
    assertEquals(65536, server.maxBodyBytes());
    assertTrue(server.isH2());
    assertEquals(Path.of("config", "workflows"), server.workflowsDir());
    assertTrue(server.bootstrapAdminKey());
    assertEquals(Duration.ofHours(24), server.idempotencyTtl());
  }

  @Test
  void env_names_are_upper_case_with_underscores() {
    assertEquals("RUNWAY_DB_URL", Settings.envName("db.url"));
    assertEquals("RUNWAY_HTTP_MAX_BODY_BYTES", Settings.envName("http.max_body_bytes"));
  }

  @Test
  void environment_variables_override_the_defaults() {
    Settings s = Settings.load(Map.of(
        "RUNWAY_HTTP_PORT", "9191",
        "RUNWAY_DB_URL", "jdbc:postgresql://db.internal:5432/runway",
        "RUNWAY_HTTP_REQUEST_LOG", "false",
        "RUNWAY_UNRELATED", "ignored",
        "PATH", "/usr/bin"));
    ServerSettings server = ServerSettings.from(s);
    assertEquals(9191, server.httpPort());
    assertEquals("jdbc:postgresql://db.internal:5432/runway", server.dbUrl());
    assertFalse(server.isH2());
    assertFalse(server.requestLog());
    assertEquals("127.0.0.1", server.httpHost(), "untouched settings keep their value");
  }

  @Test
  void load_without_environment_reads_the_repository_config_file() throws IOException {
    // Maven runs tests from the repository root, where config/runway.properties is the shipped file.
    assertTrue(Files.exists(Settings.DEFAULT_CONFIG_FILE));
    Properties file = new Properties();
    try (Reader reader = Files.newBufferedReader(Settings.DEFAULT_CONFIG_FILE, StandardCharsets.UTF_8)) {
      file.load(reader);
    }
    Map<String, String> loaded = Settings.load(Map.of()).asMap();
    assertFalse(file.isEmpty());
    for (String key : file.stringPropertyNames()) {
      assertEquals(file.getProperty(key).trim(), loaded.get(key), key);
    }
    assertEquals(Settings.defaults().asMap().keySet(), loaded.keySet());
  }

  @Test
  void config_file_beats_defaults_and_loses_to_environment() throws IOException {
    Path file = write("runway.properties", """
        # a comment
        http.port=7070
        http.host=0.0.0.0
        db.pool_size=3
        """);
    Settings fromFile = Settings.load(Map.of("RUNWAY_CONFIG", file.toString()));
    assertEquals("7070", fromFile.string("http.port"));
    assertEquals("0.0.0.0", fromFile.string("http.host"));
    assertEquals("3", fromFile.string("db.pool_size"));
    assertEquals(Settings.defaults().string("db.url"), fromFile.string("db.url"), "keys not in the file keep defaults");

    Settings withEnv = Settings.load(Map.of("RUNWAY_CONFIG", file.toString(), "RUNWAY_HTTP_PORT", "6060"));
    assertEquals("6060", withEnv.string("http.port"), "the environment beats the file");
    assertEquals("0.0.0.0", withEnv.string("http.host"), "the file still beats the defaults");
    assertEquals(6060, ServerSettings.from(withEnv).httpPort());
  }

  @Test
  void values_are_trimmed() throws IOException {
    Path file = write("runway.properties", "http.port = 7071   \n");
    assertEquals(7071, ServerSettings.from(Settings.load(Map.of("RUNWAY_CONFIG", file.toString()))).httpPort());
    assertEquals(7072, ServerSettings.from(Settings.load(Map.of("RUNWAY_HTTP_PORT", " 7072 "))).httpPort());
  }

  @Test
  void unknown_key_in_the_file_is_refused_naming_it() throws IOException {
    Path file = write("runway.properties", "http.port=7070\nhttp.prot=7071\n");
    SettingsException e = assertThrows(SettingsException.class,
        () -> Settings.load(Map.of("RUNWAY_CONFIG", file.toString())));
    assertTrue(e.getMessage().contains("http.prot"), e.getMessage());
    assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
  }

  @Test
  void unknown_key_in_code_is_refused() {
    SettingsException e = assertThrows(SettingsException.class, () -> Settings.defaults().with("db.uri", "x"));
    assertTrue(e.getMessage().contains("db.uri"), e.getMessage());
  }

  @Test
  void config_env_naming_a_missing_file_is_refused() {
    Path missing = dir.resolve("nope.properties");
    SettingsException e = assertThrows(SettingsException.class,
        () -> Settings.load(Map.of("RUNWAY_CONFIG", missing.toString())));
    assertTrue(e.getMessage().contains("RUNWAY_CONFIG"), e.getMessage());
    assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
  }

  @Test
  void bad_port_from_environment_names_the_key_and_its_source_on_one_line() {
    Settings s = Settings.load(Map.of("RUNWAY_HTTP_PORT", "abc"));
    SettingsException e = assertThrows(SettingsException.class, () -> ServerSettings.from(s));
    String message = e.getMessage();
    assertTrue(message.contains("http.port"), message);
    assertTrue(message.contains("abc"), message);
    assertTrue(message.contains("environment variable RUNWAY_HTTP_PORT"), message);
    assertFalse(message.contains("\n") || message.contains("\r"), "one line: " + message);
    assertNull(e.getCause(), "no stack of causes for the operator");
  }

  @Test
  void bad_port_from_file_names_the_file() throws IOException {
    Path file = write("runway.properties", "http.port=70000\n");
    Settings s = Settings.load(Map.of("RUNWAY_CONFIG", file.toString()));
    String message = assertThrows(SettingsException.class, () -> ServerSettings.from(s)).getMessage();
    assertTrue(message.contains("http.port"), message);
    assertTrue(message.contains(file.toString()), message);
    assertFalse(message.contains("\n"), message);
  }

  @Test
  void bad_boolean_is_refused_naming_the_key() {
    Settings s = Settings.load(Map.of("RUNWAY_HTTP_REQUEST_LOG", "yes"));
    String message = assertThrows(SettingsException.class, () -> ServerSettings.from(s)).getMessage();
    assertTrue(message.contains("http.request_log"), message);
    assertTrue(message.contains("RUNWAY_HTTP_REQUEST_LOG"), message);
  }

  @Test
  void db_url_that_is_neither_h2_nor_postgresql_is_refused() {
    for (String url : new String[] {"jdbc:mysql://localhost/runway", "postgresql://localhost/runway", ""}) {
      Settings s = Settings.load(Map.of("RUNWAY_DB_URL", url));
      SettingsException e = assertThrows(SettingsException.class, () -> ServerSettings.from(s), url);
      assertTrue(e.getMessage().contains("db.url"), e.getMessage());
      assertTrue(e.getMessage().contains("RUNWAY_DB_URL"), e.getMessage());
      assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }
    assertTrue(ServerSettings.from(Settings.defaults().with("db.url", "jdbc:h2:mem:x")).isH2());
  }

  @Test
  void the_model_endpoint_is_sandbox_or_an_http_url_without_credentials_and_its_key_is_never_shown() {
    assertTrue(ServerSettings.from(Settings.defaults()).model().isSandbox(), "the default is the sandbox model");
    assertEquals("http://127.0.0.1:11434/v1", ServerSettings.from(Settings.defaults()
        .with("agents.model.base_url", "http://127.0.0.1:11434/v1/")).model().baseUrl());
    for (String url : new String[] {"ollama", "ftp://models.example.com/v1", "https://user:pw@api.example.com/v1"}) {
      Settings s = Settings.load(Map.of("RUNWAY_AGENTS_MODEL_BASE_URL", url));
      SettingsException e = assertThrows(SettingsException.class, () -> ServerSettings.from(s), url);
      assertTrue(e.getMessage().contains("agents.model.base_url"), e.getMessage());
    }
    Settings badKey = Settings.load(Map.of("RUNWAY_AGENTS_MODEL_API_KEY", "sk-secret-value"));
    assertFalse(ServerSettings.from(badKey).model().toString().contains("sk-secret-value"));
    SettingsException e = assertThrows(SettingsException.class, () -> badKey.integer("agents.model.api_key", 0, 1));
    assertFalse(e.getMessage().contains("sk-secret-value"), e.getMessage());
  }

  /** docs/configuration.md's table is where operators look a setting up: none may be missing. */
  @Test
  void every_setting_has_a_row_in_the_configuration_table() throws IOException {
    // Maven runs tests from the repository root.
    List<String> lines = Files.readAllLines(Path.of("docs/configuration.md"), StandardCharsets.UTF_8);
    int header = lines.indexOf("| key | environment variable | default | meaning |");
    assertTrue(header >= 0, "docs/configuration.md has its configuration table");
    List<String> rows = lines.subList(header + 2, lines.size()).stream().takeWhile(l -> l.startsWith("|")).toList();
    for (String key : Settings.defaults().asMap().keySet()) {
      assertTrue(rows.stream().anyMatch(row -> row.startsWith("| `" + key + "`") || row.contains(", `" + key + "`")),
          "no row for " + key + " in docs/configuration.md's configuration table");
    }
  }

  private Path write(String name, String text) throws IOException {
    Path file = dir.resolve(name);
    Files.writeString(file, text, StandardCharsets.UTF_8);
    return file;
  }
}
