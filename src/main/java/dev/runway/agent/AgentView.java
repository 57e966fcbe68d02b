package dev.runway.agent;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.secret.SecretReferences;
import java.time.Instant;

/**
 * An agent as the API shows it: its definition with every default filled in, literal header values
 * masked; {@code output_schema} only when the agent has one.
 */
public record AgentView(
    String id,
    String name,
    String description,
    String model,
    String instructions,
    JsonNode tools,
    boolean requiresApproval,
    JsonNode limits,
    @JsonInclude(JsonInclude.Include.NON_NULL) JsonNode outputSchema,
    JsonNode mcpServers,
    Instant createdAt,
    Instant updatedAt,
    Instant archivedAt) {

  public static AgentView of(Agent a) {
    ObjectNode d = (ObjectNode) Json.tree(a.definition());
    d.path("tools").forEach(tool -> SecretReferences.maskLiteral(tool.path("headers")));
    d.path("mcp_servers").forEach(server -> SecretReferences.maskLiteral(server.path("headers")));
    if (d.path("limits").path("max_total_tokens").asLong() > AgentDefinition.MAX_TOTAL_TOKENS) {
      // Saved when the bound was wider: shown as the bound its runs are held to (AgentDefinition.stored).
      ((ObjectNode) d.get("limits")).put("max_total_tokens", AgentDefinition.MAX_TOTAL_TOKENS);
    }
    return new AgentView(a.id(), a.name(), a.description(), d.path("model").asText(), d.path("instructions").asText(),
        d.path("tools"), d.path("requires_approval").asBoolean(), d.path("limits"), d.get("output_schema"),
        d.has("mcp_servers") ? d.get("mcp_servers") : Json.MAPPER.createArrayNode(), a.createdAt(), a.updatedAt(), a.archivedAt());
  }
}
