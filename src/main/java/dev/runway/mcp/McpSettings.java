package dev.runway.mcp;

import dev.runway.config.Settings;
import java.time.Duration;

/** The MCP server's settings (mcp.* in config/runway.properties). */
public record McpSettings(
    Duration defaultWait,
    Duration maxWait,
    int maxWaitingCalls,
    Duration pollInterval,
    int toolsPageSize) {

  public static McpSettings from(Settings s) {
    return new McpSettings(
        Duration.ofSeconds(s.integer("mcp.default_wait_seconds", 0, 3600)),
        Duration.ofSeconds(s.integer("mcp.max_wait_seconds", 0, 3600)),
        s.integer("mcp.max_waiting_calls", 0, 1_000_000),
        Duration.ofMillis(s.integer("mcp.poll_interval_ms", 10, 600_000)),
        s.integer("mcp.tools_page_size", 1, 1000));
  }

  /** How many calls one API key may have waiting at once: a tenth of the instance's (at least one). */
  public int maxWaitingCallsPerKey() {
    return Math.max(1, maxWaitingCalls / 10);
  }
}
