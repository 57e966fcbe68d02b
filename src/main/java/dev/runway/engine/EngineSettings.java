package dev.runway.engine;

import dev.runway.config.Settings;
import dev.runway.outbound.OutboundHttp;
import java.time.Duration;
import org.eclipse.jetty.util.SocketAddressResolver;

/** The engine's settings (engine.* in config/runway.properties). */
public record EngineSettings(
    boolean enabled,
    int workers,
    Duration pollInterval,
    Duration lease,
    Duration retryBase,
    long approvalTimeoutSeconds,
    int maxCallsInFlight,
    int maxCallsInFlightPerWorkspace,
    int maxCallsPerHost,
    long maxCallBytesInFlight,
    boolean allowPrivateNetworks,
    int maxResponseBytes,
    Duration shutdownGrace) {

  public static EngineSettings from(Settings s) {
    return new EngineSettings(
        s.bool("engine.enabled"),
        s.integer("engine.workers", 1, 1000),
        Duration.ofMillis(s.integer("engine.poll_interval_ms", 10, 60_000)),
        Duration.ofSeconds(s.integer("engine.lease_seconds", 1, 3600)),
        Duration.ofMillis(s.integer("engine.retry_base_ms", 1, 600_000)),
        s.integer("engine.approval_timeout_s", 1, 31_536_000),
        s.integer("engine.max_calls_in_flight", 1, 1_000_000),
        s.integer("engine.max_calls_in_flight_per_workspace", 1, 1_000_000),
        s.integer("engine.http.max_calls_per_host", 1, 1_000_000),
        s.integer("engine.max_call_bytes_in_flight", 1_048_576, Integer.MAX_VALUE),
        s.bool("engine.http.allow_private_networks"),
        s.integer("engine.http.max_response_bytes", 1024, 16 * 1024 * 1024),
        Duration.ofSeconds(s.integer("shutdown.grace_seconds", 0, 3600)));
  }

  /** The memory one workspace's calls may hold: its share of the calls, of the memory too. */
  public long maxCallBytesInFlightPerWorkspace() {
    return maxCallBytesInFlight * maxCallsInFlightPerWorkspace / maxCallsInFlight;
  }

  /** The client for tools' calls these settings describe; {@code dns} null: the system's resolver. */
  public OutboundHttp outbound(SocketAddressResolver dns) {
    return new OutboundHttp(OutboundHttp.AddressPolicy.publicOnly(allowPrivateNetworks), maxCallsPerHost,
        maxCallsInFlight, dns);
  }
}
