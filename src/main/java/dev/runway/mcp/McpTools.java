package dev.runway.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.Agent;
import dev.runway.agent.AgentService;
import dev.runway.core.Json;
import dev.runway.core.Slugs;
import dev.runway.db.Slice;
import dev.runway.workflow.Workflow;
import dev.runway.workflow.WorkflowService;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;

/**
 * The workspace's workflows and agents (not archived) as MCP tools: {@code workflow_<id>} and
 * {@code agent_<id>}, names that every model API takes (letters, digits, '_' and '-'; no dots),
 * read back unambiguously since the prefix is fixed. Listed workflows first, then agents, in pages.
 */
final class McpTools {
  static final String WORKFLOW_PREFIX = "workflow_";
  static final String AGENT_PREFIX = "agent_";
  private static final JsonNode ANY_OBJECT = Json.tree("{\"type\":\"object\"}");
  private static final JsonNode AGENT_INPUT = Json.tree("{\"type\":\"object\",\"properties\":{\"input\":"
      + "{\"type\":[\"string\",\"object\"],\"description\":\"The text or JSON object the agent works on.\"}},"
      + "\"required\":[\"input\"],\"additionalProperties\":false}");

  private final WorkflowService workflows;
  private final AgentService agents;
  private final int pageSize;
  private final long maxPageBytes;

  McpTools(WorkflowService workflows, AgentService agents, int pageSize, long maxPageBytes) {
    this.workflows = workflows;
    this.agents = agents;
    this.pageSize = pageSize;
    this.maxPageBytes = maxPageBytes;
  }

  /** What a tool's name names: a workflow or an agent, by id. */
  record Target(boolean agent, String id) {}

  /** The workflow or agent a tool name names, or null when it names neither (by its form). */
  static Target target(String name) {
    if (name.startsWith(WORKFLOW_PREFIX) && Slugs.isSlug(name.substring(WORKFLOW_PREFIX.length()))) {
      return new Target(false, name.substring(WORKFLOW_PREFIX.length()));
    }
    if (name.startsWith(AGENT_PREFIX) && Slugs.isSlug(name.substring(AGENT_PREFIX.length()))) {
      return new Target(true, name.substring(AGENT_PREFIX.length()));
    }
    return null;
  }

  /**
   * A tools/list result: the page after {@code cursor} (null: the first), with {@code nextCursor}
   * when more follow. An unreadable cursor is a JsonRpcError.invalidParams.
   */
  ObjectNode list(String workspaceId, String cursor) {
    boolean inAgents = false;
    String after = null;
    if (cursor != null) {
      String decoded = decode(cursor);
      if (decoded == null || !(decoded.startsWith("w:") || decoded.startsWith("a:"))) {
        throw JsonRpcError.invalidParams("cursor is not one that tools/list gave: start again without a cursor");
      }
      inAgents = decoded.startsWith("a:");
      after = decoded.substring(2).isEmpty() ? null : decoded.substring(2);
    }
    ObjectNode result = Json.MAPPER.createObjectNode();
    ArrayNode tools = result.putArray("tools");
    String next = null;
    if (!inAgents) {
      Slice<Workflow> page = workflows.page(workspaceId, after, false, pageSize, maxPageBytes);
      page.rows().forEach(w -> tools.add(tool(w)));
      if (page.more()) {
        next = "w:" + last(page.rows()).id();
      }
      after = null;
    }
    int room = pageSize - tools.size();
    if (next == null && room > 0) {
      Slice<Agent> page = agents.page(workspaceId, after, false, room, maxPageBytes);
      page.rows().forEach(a -> tools.add(tool(a)));
      if (page.more()) {
        next = "a:" + last(page.rows()).id();
      }
    } else if (next == null && !agents.page(workspaceId, null, false, 1, maxPageBytes).rows().isEmpty()) {
      next = "a:"; // the page is full of workflows; the agents follow
    }
    if (next != null) {
      result.put("nextCursor", Base64.getUrlEncoder().withoutPadding().encodeToString(
          next.getBytes(StandardCharsets.UTF_8)));
    }
    return result;
  }

  private static <T> T last(List<T> rows) {
    return rows.get(rows.size() - 1);
  }

  private static String decode(String cursor) {
    try {
      return new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  static ObjectNode tool(Workflow w) {
    ObjectNode tool = Json.MAPPER.createObjectNode();
    tool.put("name", WORKFLOW_PREFIX + w.id());
    tool.put("title", w.name());
    tool.put("description", describe(w.name(), w.description(), "Starts a run of the Runway workflow `" + w.id()
        + "` with the arguments as its inputs" + (w.requiresApproval() ? "; the run waits for a person's approval"
        + " in Runway before it goes on" : "") + ", and answers its output when it ends within the call's wait."));
    tool.set("inputSchema", w.inputsSchema() == null ? ANY_OBJECT : Json.tree(w.inputsSchema()));
    meta(tool, "workflow", w.id());
    return tool;
  }

  static ObjectNode tool(Agent a) {
    ObjectNode tool = Json.MAPPER.createObjectNode();
    tool.put("name", AGENT_PREFIX + a.id());
    tool.put("title", a.name());
    tool.put("description", describe(a.name(), a.description(), "Starts a run of the Runway agent `" + a.id()
        + "` on the input, and answers its output when it ends within the call's wait."));
    tool.set("inputSchema", AGENT_INPUT);
    meta(tool, "agent", a.id());
    return tool;
  }

  private static void meta(ObjectNode tool, String kind, String id) {
    tool.putObject("_meta").put("runway/kind", kind).put("runway/id", id);
  }

  private static String describe(String name, String description, String what) {
    StringBuilder text = new StringBuilder(name);
    if (description != null && !description.isBlank()) {
      text.append(": ").append(description.strip());
    }
    return text.append(text.charAt(text.length() - 1) == '.' ? " " : ". ").append(what).toString();
  }
}
