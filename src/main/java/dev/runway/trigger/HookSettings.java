package dev.runway.trigger;

import dev.runway.config.Settings;

/** The hooks.* settings: how many deliveries each inbound webhook takes a second, and at once. */
public record HookSettings(int perSecond, int burst) {
  public static HookSettings from(Settings s) {
    return new HookSettings(s.integer("hooks.per_second", 0, 1_000_000), s.integer("hooks.burst", 1, 10_000_000));
  }
}
