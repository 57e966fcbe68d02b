package dev.runway.webhook;

import dev.runway.config.Settings;
import java.time.Duration;

/** The webhook settings (webhooks.* in config/runway.properties). */
public record WebhookSettings(
    boolean enabled,
    Duration timeout,
    Duration retryBase,
    Duration retryWindow,
    Duration disableAfter,
    int maxInFlight,
    int maxInFlightPerEndpoint,
    Duration pollInterval,
    Duration retention,
    boolean allowPrivateNetworks,
    long maxBytesInFlight,
    Duration shutdownGrace) {

  /** Endpoint URLs go through the same private-network guard, and setting, as http steps. */
  public static WebhookSettings from(Settings s) {
    return new WebhookSettings(
        s.bool("webhooks.enabled"),
        Duration.ofMillis(s.integer("webhooks.timeout_ms", 100, 600_000)),
        Duration.ofMillis(s.integer("webhooks.retry_base_ms", 1, 3_600_000)),
        Duration.ofHours(s.integer("webhooks.retry_window_hours", 0, 24 * 365)),
        Duration.ofHours(s.integer("webhooks.disable_after_hours", 0, 24 * 365)),
        s.integer("webhooks.max_in_flight", 1, 100_000),
        s.integer("webhooks.max_in_flight_per_endpoint", 1, 10_000),
        Duration.ofMillis(s.integer("webhooks.poll_interval_ms", 10, 600_000)),
        Duration.ofHours(s.integer("webhooks.retention_hours", 1, 24 * 365)),
        s.bool("engine.http.allow_private_networks"),
        s.integer("webhooks.max_bytes_in_flight", 65_536, Integer.MAX_VALUE),
        Duration.ofSeconds(s.integer("shutdown.grace_seconds", 0, 3600)));
  }
}
