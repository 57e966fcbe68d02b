package dev.runway.agent;

import java.time.Instant;

/** An agent as stored; {@code definition} is the JSON of its model, instructions, tools, approval and limits. */
public record Agent(
    String workspaceId,
    String id,
    String name,
    String description,
    String definition,
    Instant createdAt,
    Instant updatedAt,
    Instant archivedAt) {

  public boolean archived() {
    return archivedAt != null;
  }
}
