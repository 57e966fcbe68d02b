package dev.runway.config;

import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/** Runway's settings: built-in defaults, then a properties file, then RUNWAY_* environment variables. */
public final class Settings {
  public static final String DEFAULTS_RESOURCE = "/runway.properties";
  public static final String CONFIG_FILE_ENV = "RUNWAY_CONFIG";
  public static final Path DEFAULT_CONFIG_FILE = Path.of("config", "runway.properties");

  private final Map<String, String> values;
  private final Map<String, String> sources;

  private Settings(Map<String, String> values, Map<String, String> sources) {
    this.values = values;
    this.sources = sources;
  }

  /** The defaults built into the jar, nothing else: the start for embedding and tests. */
  public static Settings defaults() {
    Map<String, String> values = new LinkedHashMap<>();
    Map<String, String> sources = new LinkedHashMap<>();
    try (InputStream in = Settings.class.getResourceAsStream(DEFAULTS_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException("runway.properties is missing from the classpath");
      }
      Properties props = new Properties();
      props.load(new java.io.InputStreamReader(in, StandardCharsets.UTF_8));
      props.stringPropertyNames().forEach(k -> {
        values.put(k, props.getProperty(k).trim());
        sources.put(k, "built-in default");
      });
    } catch (IOException e) {
      throw new IllegalStateException("cannot read built-in runway.properties", e);
    }
    return new Settings(values, sources);
  }

  /** Defaults, overridden by the config file (RUNWAY_CONFIG or config/runway.properties), then by the environment. */
  public static Settings load(Map<String, String> env) {
    Settings settings = defaults();
    String named = env.get(CONFIG_FILE_ENV);
    Path file = named == null || named.isBlank() ? DEFAULT_CONFIG_FILE : Path.of(named);
    if (Files.exists(file)) {
      settings = settings.withFile(file);
    } else if (named != null && !named.isBlank()) {
      throw new SettingsException(CONFIG_FILE_ENV + "=" + named + ": no such file");
    }
    for (String key : settings.values.keySet().toArray(String[]::new)) {
      String envName = envName(key);
      String value = env.get(envName);
      if (value != null) {
        settings = settings.with(key, value, "environment variable " + envName);
      }
    }
    return settings;
  }

  public static String envName(String key) {
    return "RUNWAY_" + key.toUpperCase(Locale.ROOT).replace('.', '_');
  }

  private Settings withFile(Path file) {
    Properties props = new Properties();
    try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      props.load(reader);
    } catch (IOException e) {
      throw new SettingsException(file + ": cannot read (" + e.getMessage() + ")");
    }
    Settings settings = this;
    for (String key : props.stringPropertyNames()) {
      if (!values.containsKey(key)) {
        throw new SettingsException(file + ": unknown setting '" + key + "'");
      }
      settings = settings.with(key, props.getProperty(key), file.toString());
    }
    return settings;
  }

  /** A copy with one setting replaced; unknown keys are refused so typos never pass silently. */
  public Settings with(String key, String value) {
    return with(key, value, "code");
  }

  private Settings with(String key, String value, String source) {
    if (!values.containsKey(key)) {
      throw new SettingsException("unknown setting '" + key + "'");
    }
    Map<String, String> newValues = new LinkedHashMap<>(values);
    Map<String, String> newSources = new LinkedHashMap<>(sources);
    newValues.put(key, value.trim());
    newSources.put(key, source);
    return new Settings(newValues, newSources);
  }

  public Map<String, String> asMap() {
    return Collections.unmodifiableMap(values);
  }

  public String string(String key) {
    String value = values.get(key);
    if (value == null) {
      throw new SettingsException("unknown setting '" + key + "'");
    }
    return value;
  }

  public int integer(String key, int min, int max) {
    String value = string(key);
    try {
      int n = Integer.parseInt(value);
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // reported below with the allowed range
    }
    throw invalid(key, "must be a whole number from " + min + " to " + max);
  }

  public boolean bool(String key) {
    String value = string(key).toLowerCase(Locale.ROOT);
    if (value.equals("true") || value.equals("false")) {
      return Boolean.parseBoolean(value);
    }
    throw invalid(key, "must be true or false");
  }

  public SettingsException invalid(String key, String why) {
    // A secret's value is never shown, not even a wrong one: it may be the right one with a typo.
    String shown = isSecret(key) ? "(hidden)" : values.get(key).replace("\n", "\\n").replace("\r", "\\r");
    return new SettingsException("invalid setting " + key + "='" + shown + "' (from "
        + sources.get(key) + "): " + why);
  }

  /** Settings whose values are secrets (passwords, keys): never printed. */
  static boolean isSecret(String key) {
    return key.endsWith("password") || key.endsWith(".key") || key.endsWith("api_key") || key.endsWith(".token");
  }
}
