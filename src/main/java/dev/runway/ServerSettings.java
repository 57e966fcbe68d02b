package dev.runway;

import dev.runway.config.Settings;
import dev.runway.console.ConsoleSettings;
import dev.runway.core.RateLimiter;
import dev.runway.crm.CrmSettings;
import dev.runway.db.DatabaseSettings;
import dev.runway.engine.EngineSettings;
import dev.runway.engine.ModelSettings;
import dev.runway.events.StreamSettings;
import dev.runway.http.RateLimits;
import dev.runway.metrics.MetricsSettings;
import dev.runway.webhook.WebhookSettings;
import java.nio.file.Path;
import java.time.Duration;

/** The settings Runway runs with, checked and typed once at start. */
public record ServerSettings(
    String httpHost,
    int httpPort,
    int maxBodyBytes,
    int maxThreads,
    int maxInFlight,
    int maxInFlightPerKey,
    Duration bodyTimeout,
    int maxPendingBodiesPerKey,
    int maxPendingBodiesPerAddress,
    long maxPendingBodyBytes,
    int maxConnections,
    Duration shutdownGrace,
    boolean requestLog,
    String dbUrl,
    String dbUser,
    String dbPassword,
    int dbPoolSize,
    int dbConnectionTimeoutMs,
    Path workflowsDir,
    Path agentsDir,
    boolean bootstrapAdminKey,
    Duration keyCache,
    int perKeyPerSecond,
    int perKeyBurst,
    int authFailuresPerMinute,
    int authFailuresBurst,
    Duration idempotencyTtl,
    String secretsKey,
    Path secretsKeyFile,
    EngineSettings engine,
    ModelSettings model,
    CrmSettings crm,
    WebhookSettings webhooks,
    StreamSettings streams,
    ConsoleSettings console,
    MetricsSettings metrics,
    java.util.Map<dev.runway.quota.Quota, Integer> quotas,
    int maxPageBytes,
    Duration heartbeat,
    dev.runway.trigger.HookSettings hooks,
    String publicUrl,
    dev.runway.mcp.McpSettings mcp) {

  public static ServerSettings from(Settings s) {
    String url = s.string("db.url");
    if (!url.startsWith("jdbc:h2:") && !url.startsWith("jdbc:postgresql:")) {
      throw s.invalid("db.url", "must start with jdbc:h2: or jdbc:postgresql:");
    }
    String host = s.string("http.host");
    if (host.isEmpty()) {
      throw s.invalid("http.host", "must not be empty");
    }
    String dir = s.string("workflows.dir");
    String secretsKey = s.string("secrets.key");
    if (!secretsKey.isEmpty() && !isKey(secretsKey)) {
      throw s.invalid("secrets.key", "must be 32 bytes in base64, e.g. the output of `openssl rand -base64 32`");
    }
    return new ServerSettings(
        host,
        s.integer("http.port", 0, 65535),
        s.integer("http.max_body_bytes", 1024, 64 * 1024 * 1024),
        s.integer("http.max_threads", 8, 10_000),
        s.integer("http.max_in_flight", 1, 100_000),
        s.integer("http.max_in_flight_per_key", 1, 100_000),
        Duration.ofMillis(s.integer("http.body_timeout_ms", 100, 3_600_000)),
        s.integer("http.max_pending_bodies_per_key", 1, 1_000_000),
        s.integer("http.max_pending_bodies_per_address", 1, 1_000_000),
        s.integer("http.max_pending_body_bytes", 65_536, Integer.MAX_VALUE),
        s.integer("http.max_connections", 1, 1_000_000),
        Duration.ofMillis(s.integer("http.shutdown_grace_ms", 0, 600_000)),
        s.bool("http.request_log"),
        url,
        s.string("db.user"),
        s.string("db.password"),
        s.integer("db.pool_size", 1, 1000),
        s.integer("db.connection_timeout_ms", 250, 600_000),
        dir.isEmpty() ? null : Path.of(dir),
        s.string("agents.dir").isEmpty() ? null : Path.of(s.string("agents.dir")),
        s.bool("bootstrap.admin_key"),
        Duration.ofSeconds(s.integer("auth.key_cache_seconds", 0, 3600)),
        s.integer("ratelimit.per_key_per_second", 0, 1_000_000),
        s.integer("ratelimit.per_key_burst", 1, 10_000_000),
        s.integer("ratelimit.auth_failures_per_minute", 0, 1_000_000),
        s.integer("ratelimit.auth_failures_burst", 1, 1_000_000),
        Duration.ofHours(s.integer("idempotency.ttl_hours", 1, 24 * 365)),
        secretsKey,
        Path.of(s.string("secrets.key_file")),
        EngineSettings.from(s),
        ModelSettings.from(s),
        CrmSettings.from(s),
        WebhookSettings.from(s),
        StreamSettings.from(s),
        ConsoleSettings.from(s),
        MetricsSettings.from(s),
        dev.runway.quota.Quotas.limits(s),
        s.integer("http.max_page_bytes", 1024, 64 * 1024 * 1024),
        // At most a third of the lease: a lease outlives two missed beats.
        dev.runway.instance.Leases.beatFor(Duration.ofMillis(s.integer("instances.heartbeat_ms", 100, 600_000)),
            Duration.ofSeconds(s.integer("engine.lease_seconds", 1, 3600))),
        dev.runway.trigger.HookSettings.from(s),
        publicUrl(s),
        dev.runway.mcp.McpSettings.from(s));
  }

  /** http.public_url: empty, or an http(s) URL with a host (a trailing slash is dropped). */
  private static String publicUrl(Settings s) {
    String url = s.string("http.public_url").trim();
    if (url.isEmpty()) {
      return url;
    }
    try {
      java.net.URI uri = new java.net.URI(url);
      if ((!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme())) || uri.getHost() == null
          || uri.getQuery() != null || uri.getFragment() != null) {
        throw s.invalid("http.public_url", "must be an http:// or https:// URL with a host and no query, e.g. "
            + "https://runway.example.com");
      }
    } catch (java.net.URISyntaxException e) {
      throw s.invalid("http.public_url", "must be a URL, e.g. https://runway.example.com");
    }
    return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
  }

  /** The server's public address, {@code port} giving the port it listens on once started. */
  public dev.runway.http.PublicUrl publicUrl(java.util.function.IntSupplier port) {
    return new dev.runway.http.PublicUrl(publicUrl, httpHost, port);
  }

  private static boolean isKey(String base64) {
    try {
      return java.util.Base64.getDecoder().decode(base64).length == 32;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** The limits these settings ask for (a rate of 0 turns a limit off). */
  public RateLimits rateLimits() {
    return new RateLimits(
        perKeyPerSecond == 0 ? null : new RateLimiter(perKeyPerSecond, perKeyBurst),
        authFailuresPerMinute == 0 ? null : new RateLimiter(authFailuresPerMinute / 60.0, authFailuresBurst));
  }

  public DatabaseSettings database() {
    return new DatabaseSettings(dbUrl, dbUser, dbPassword, dbPoolSize, dbConnectionTimeoutMs);
  }

  public boolean isH2() {
    return database().isH2();
  }
}
