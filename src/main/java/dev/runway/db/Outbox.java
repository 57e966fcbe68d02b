package dev.runway.db;

import java.time.Instant;
import java.util.function.Supplier;

/**
 * Where a transaction publishes the events it made, for whatever delivers them later (webhooks):
 * what is published is stored in the same commit as the event, so a crash can lose neither without
 * the other.
 */
public interface Outbox {
  /** An outbox that keeps nothing: no one delivers events. */
  Outbox NONE = (tx, workspaceId, eventId, type, createdAt, data) -> { };

  /**
   * Publishes event {@code eventId} of {@code type}; {@code data} gives its JSON object, and is asked
   * only when someone listens for that type.
   */
  void publish(Tx tx, String workspaceId, String eventId, String type, Instant createdAt, Supplier<String> data);

  /**
   * Whether this workspace's events were delivered somewhere when last published: a hint for the
   * group commit, which gathers such writes (see GroupCommitter), never a reason to deliver or not.
   */
  default boolean delivers(String workspaceId) {
    return false;
  }
}
