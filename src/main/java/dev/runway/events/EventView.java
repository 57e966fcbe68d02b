package dev.runway.events;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.run.Event;
import java.time.Instant;

/** An event as the API shows it. */
public record EventView(
    String id,
    String type,
    String runId,
    String workflow,
    String agent,
    String project,
    Integer step,
    Integer attempt,
    String actor,
    JsonNode data,
    Instant createdAt) {

  public static EventView of(Event e) {
    return new EventView(e.id(), e.type(), e.runId(), e.workflowId(), e.agentId(), e.project(), e.stepIndex(), e.attempt(),
        e.actor(), Json.tree(e.data()), e.createdAt());
  }
}
