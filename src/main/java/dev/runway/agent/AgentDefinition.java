package dev.runway.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.JsonFields;
import dev.runway.outbound.CallTargets;
import dev.runway.secret.SecretReferences;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What a caller (or a file under config/agents) gives for an agent, checked field by field, every
 * default filled in: the model it talks to, its instructions, the caller's tools it may call, whether
 * a run needs approval to start, its limits, and the JSON Schema its output must match
 * ({@code outputSchema}; null: the output is the model's last text).
 */
public record AgentDefinition(String name, String description, String model, String instructions, List<Tool> tools,
    boolean requiresApproval, Limits limits, JsonNode outputSchema, List<McpServer> mcpServers) {
  private static final Set<String> FIELDS = Set.of("name", "description", "model", "instructions", "tools",
      "requires_approval", "limits", "output_schema", "mcp_servers");
  private static final Set<String> MCP_FIELDS =
      Set.of("name", "url", "headers", "allowed_tools", "requires_approval", "timeout_ms");
  /** An MCP server's name: its tools are offered to the model as {@code <server>__<tool>}. */
  private static final Pattern MCP_SERVER_NAME = Pattern.compile("[A-Za-z0-9_-]{1,61}");
  /** Between an MCP server's name and its tool's in the name the model sees. */
  public static final String MCP_SEPARATOR = "__";
  public static final int MAX_MCP_SERVERS = 8;
  private static final Set<String> TOOL_FIELDS =
      Set.of("name", "description", "parameters", "url", "headers", "timeout_ms", "requires_approval");
  private static final Set<String> LIMIT_FIELDS = Set.of("max_turns", "max_tool_calls", "max_total_tokens", "timeout_s",
      "max_parallel_tool_calls");
  /** What the Chat Completions API accepts as a function name. */
  private static final Pattern TOOL_NAME = Pattern.compile("[A-Za-z0-9_-]{1,64}");
  public static final int MAX_TOOLS = 64;
  /**
   * The most tokens one run may be given (limits.max_total_tokens): a run's bill stays bounded even
   * where the workspace's daily quota is off.
   */
  public static final long MAX_TOTAL_TOKENS = 1_000_000;
  /**
   * The most characters output_schema's JSON may take: it goes to the model with every call (as
   * response_format), so its tokens are paid at every turn.
   */
  public static final int MAX_OUTPUT_SCHEMA_CHARS = 32_768;

  /**
   * One of the caller's tools: its name and description and the JSON Schema of its arguments (what
   * the model sees), and where Runway calls it (url, headers; both may refer to secrets).
   */
  public record Tool(String name, String description, JsonNode parameters, String url, Map<String, String> headers,
      int timeoutMs, boolean requiresApproval) {
    /** The workspace secrets its url and headers refer to. */
    public Set<String> secretNames() {
      Set<String> names = new HashSet<>(SecretReferences.names(url));
      headers.values().forEach(v -> names.addAll(SecretReferences.names(v)));
      return names;
    }
  }

  /**
   * When a run stops: past any of these it fails, with the limit's error code. {@code maxParallelToolCalls}
   * lowers the server's agents.max_parallel_tool_calls for the agent's runs (null: the server's).
   */
  public record Limits(int maxTurns, int maxToolCalls, long maxTotalTokens, int timeoutSeconds,
      Integer maxParallelToolCalls) {
    /** The most tool calls of one answer made at once, given the server's cap. */
    public int parallelToolCalls(int serverCap) {
      return maxParallelToolCalls == null ? serverCap : Math.min(serverCap, maxParallelToolCalls);
    }
  }

  /**
   * An MCP server (Streamable HTTP) whose tools the agent may call: where it is (url, headers; both
   * may refer to secrets), which of its tools the model is offered ({@code allowedTools}; null: all),
   * which need a person's approval ({@code approveAll}, or those in {@code approvalTools}) and how
   * long one request may take.
   */
  public record McpServer(String name, String url, Map<String, String> headers, List<String> allowedTools,
      boolean approveAll, List<String> approvalTools, int timeoutMs) {
    /** The workspace secrets its url and headers refer to. */
    public Set<String> secretNames() {
      Set<String> names = new HashSet<>(SecretReferences.names(url));
      headers.values().forEach(v -> names.addAll(SecretReferences.names(v)));
      return names;
    }

    /** Whether the model may be offered its tool {@code tool}. */
    public boolean allows(String tool) {
      return allowedTools == null || allowedTools.contains(tool);
    }

    /** Whether a call of its tool {@code tool} waits for a person's approval. */
    public boolean requiresApproval(String tool) {
      return approveAll || approvalTools.contains(tool);
    }
  }

  /** Reads a definition; a missing name defaults to the agent id. Refuses bad fields with a 400 naming them. */
  public static AgentDefinition parse(String agentId, ObjectNode body) {
    JsonFields fields = JsonFields.of(body, FIELDS);
    String model = fields.optionalString("model", null, 200);
    if (model == null || model.isBlank()) {
      throw DomainException.invalid("model", "model is required: the name the model endpoint knows it by, "
          + "e.g. gpt-4o-mini, llama3.1");
    }
    List<Tool> tools = tools(fields.optionalArray("tools"));
    return new AgentDefinition(
        fields.optionalString("name", agentId, 200),
        fields.optionalString("description", "", 2000),
        model,
        fields.optionalString("instructions", "", 32_768),
        tools,
        fields.optionalBoolean("requires_approval", false),
        limits(fields.optionalObject("limits")),
        outputSchema(body.get("output_schema")),
        mcpServers(fields.optionalArray("mcp_servers"), tools));
  }

  private static List<McpServer> mcpServers(JsonNode servers, List<Tool> tools) {
    if (servers.size() > MAX_MCP_SERVERS) {
      throw DomainException.invalid("mcp_servers", "an agent has at most " + MAX_MCP_SERVERS + " MCP servers");
    }
    List<McpServer> parsed = new ArrayList<>();
    Set<String> names = new HashSet<>();
    for (int i = 0; i < servers.size(); i++) {
      String at = "mcp_servers[" + i + "]";
      if (!servers.get(i).isObject()) {
        throw DomainException.invalid(at, at + " must be a JSON object with a name and a url");
      }
      McpServer server = mcpServer((ObjectNode) servers.get(i), at + ".");
      if (!names.add(server.name())) {
        throw DomainException.invalid(at + ".name", at + ".name: another MCP server is named '" + server.name()
            + "' already");
      }
      for (Tool t : tools) {
        if (t.name().startsWith(server.name() + MCP_SEPARATOR)) {
          throw DomainException.invalid(at + ".name", at + ".name: tool '" + t.name() + "' starts with '"
              + server.name() + MCP_SEPARATOR + "', as this server's tools are named for the model: rename one");
        }
      }
      parsed.add(server);
    }
    return List.copyOf(parsed);
  }

  private static McpServer mcpServer(ObjectNode server, String prefix) {
    JsonFields f = JsonFields.of(server, MCP_FIELDS, prefix);
    String name = f.optionalString("name", null, 61);
    if (name == null || !MCP_SERVER_NAME.matcher(name).matches()) {
      throw DomainException.invalid(prefix + "name", prefix + "name is required: 1-61 letters, digits, '_' and '-' "
          + "(the model sees its tools as <name>" + MCP_SEPARATOR + "<tool>, at most 64 characters)");
    }
    if (name.contains(MCP_SEPARATOR)) {
      throw DomainException.invalid(prefix + "name", prefix + "name may not hold '" + MCP_SEPARATOR + "': it "
          + "separates the server's name from its tool's in the names the model sees");
    }
    String url = CallTargets.url(server.get("url"), prefix + "url");
    Map<String, String> headers = CallTargets.headers(f.optionalObject("headers"), prefix + "headers");
    List<String> allowed = null;
    if (server.hasNonNull("allowed_tools")) {
      allowed = toolNames(f.optionalArray("allowed_tools"), prefix + "allowed_tools", name);
    }
    JsonNode approval = server.get("requires_approval");
    boolean approveAll = false;
    List<String> approvalTools = List.of();
    if (approval != null && approval.isBoolean()) {
      approveAll = approval.booleanValue();
    } else if (approval != null && approval.isArray()) {
      approvalTools = toolNames(approval, prefix + "requires_approval", name);
    } else if (approval != null && !approval.isNull()) {
      throw DomainException.invalid(prefix + "requires_approval", prefix + "requires_approval must be true, false "
          + "or a list of the server's tool names, not " + Json.kindOf(approval));
    }
    return new McpServer(name, url, headers, allowed, approveAll, approvalTools,
        (int) f.optionalLong("timeout_ms", 10_000, 1, 300_000));
  }

  /** A list of an MCP server's tool names, each fitting the model's function-name rule once prefixed. */
  private static List<String> toolNames(JsonNode list, String param, String server) {
    if (list.size() > 128) {
      throw DomainException.invalid(param, param + " lists at most 128 tools");
    }
    List<String> names = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      JsonNode n = list.get(i);
      if (!n.isTextual() || !TOOL_NAME.matcher(server + MCP_SEPARATOR + n.asText()).matches()) {
        throw DomainException.invalid(param + "[" + i + "]", param + "[" + i + "] must be a tool name of letters, "
            + "digits, '_' and '-' such that " + server + MCP_SEPARATOR + "<tool> has at most 64 characters");
      }
      if (!names.contains(n.asText())) {
        names.add(n.asText());
      }
    }
    return List.copyOf(names);
  }

  /** The model's name for tool {@code tool} of MCP server {@code server}, or null when it breaks the function-name rule. */
  public static String mcpToolName(String server, String tool) {
    String name = server + MCP_SEPARATOR + tool;
    return TOOL_NAME.matcher(name).matches() ? name : null;
  }

  /** The JSON Schema (of any JSON value) the run's output must match, checked as a tool's parameters are; or null. */
  private static JsonNode outputSchema(JsonNode schema) {
    if (schema == null || schema.isNull()) {
      return null;
    }
    if (!schema.isObject()) {
      throw DomainException.invalid("output_schema", "output_schema must be a JSON Schema: a JSON object such as "
          + "{\"type\": \"object\", \"properties\": {...}, \"required\": [...]}, not " + Json.kindOf(schema));
    }
    if (Json.string(schema).length() > MAX_OUTPUT_SCHEMA_CHARS) {
      throw DomainException.invalid("output_schema", "output_schema must be at most " + MAX_OUTPUT_SCHEMA_CHARS
          + " characters of JSON (it is sent to the model at every turn)");
    }
    ToolSchemas.checkSchema(schema, "output_schema");
    return schema;
  }

  private static List<Tool> tools(JsonNode tools) {
    if (tools.size() > MAX_TOOLS) {
      throw DomainException.invalid("tools", "an agent has at most " + MAX_TOOLS + " tools");
    }
    // the schemas of all the tools share one budget, so that 64 costly ones cannot hold a thread 64 times as long
    return SchemaBudget.within(ToolSchemas.DEFINITION_BUDGET, () -> checkedTools(tools));
  }

  private static List<Tool> checkedTools(JsonNode tools) {
    List<Tool> parsed = new ArrayList<>();
    Set<String> names = new HashSet<>();
    for (int i = 0; i < tools.size(); i++) {
      String at = "tools[" + i + "]";
      if (!tools.get(i).isObject()) {
        throw DomainException.invalid(at, at + " must be a JSON object with a name and a url");
      }
      Tool tool = tool((ObjectNode) tools.get(i), at + ".");
      if (!names.add(tool.name())) {
        throw DomainException.invalid(at + ".name", at + ".name: another tool is named '" + tool.name() + "' already");
      }
      parsed.add(tool);
    }
    return parsed;
  }

  private static Tool tool(ObjectNode tool, String prefix) {
    JsonFields f = JsonFields.of(tool, TOOL_FIELDS, prefix);
    String name = f.optionalString("name", null, 64);
    if (name == null || !TOOL_NAME.matcher(name).matches()) {
      throw DomainException.invalid(prefix + "name", prefix + "name is required: 1-64 letters, digits, '_' and '-'");
    }
    JsonNode parameters = tool.get("parameters");
    if (parameters == null || parameters.isNull()) {
      parameters = Json.MAPPER.createObjectNode().put("type", "object").set("properties", Json.MAPPER.createObjectNode());
    }
    ToolSchemas.check(parameters, prefix + "parameters");
    return new Tool(name, f.optionalString("description", "", 1024), parameters, url(tool.get("url"), prefix + "url"),
        CallTargets.headers(f.optionalObject("headers"), prefix + "headers"),
        (int) f.optionalLong("timeout_ms", 10_000, 1, 300_000),
        f.optionalBoolean("requires_approval", false));
  }

  /** An http or https URL, or a built-in tool's {@code builtin:<name>}. */
  private static String url(JsonNode url, String param) {
    if (url != null && url.isTextual() && BuiltinTools.isBuiltin(url.asText())) {
      String name = url.asText().substring(BuiltinTools.PREFIX.length());
      if (!BuiltinTools.NAMES.contains(name)) {
        throw DomainException.invalid(param, param + ": no built-in tool '" + name + "'; there is "
            + String.join(", ", BuiltinTools.NAMES.stream().map(n -> BuiltinTools.PREFIX + n).sorted().toList()));
      }
      return url.asText();
    }
    return CallTargets.url(url, param);
  }

  private static Limits limits(ObjectNode limits) {
    JsonFields f = JsonFields.of(limits, LIMIT_FIELDS, "limits.");
    return new Limits(
        (int) f.optionalLong("max_turns", 10, 1, 100),
        (int) f.optionalLong("max_tool_calls", 20, 1, 1000),
        f.optionalLong("max_total_tokens", 50_000, 1, MAX_TOTAL_TOKENS),
        (int) f.optionalLong("timeout_s", 600, 1, 86_400),
        limits != null && limits.has("max_parallel_tool_calls")
            ? (int) f.optionalLong("max_parallel_tool_calls", 1, 1, 64) : null);
  }

  /** Each field that may refer to secrets (tools[i].url, tools[i].headers.NAME) and its text, in order. */
  public Map<String, String> secretFields() {
    Map<String, String> fields = new java.util.LinkedHashMap<>();
    for (int i = 0; i < tools.size(); i++) {
      String at = "tools[" + i + "].";
      fields.put(at + "url", tools.get(i).url());
      tools.get(i).headers().forEach((name, value) -> fields.put(at + "headers." + name, value));
    }
    for (int i = 0; i < mcpServers.size(); i++) {
      String at = "mcp_servers[" + i + "].";
      fields.put(at + "url", mcpServers.get(i).url());
      mcpServers.get(i).headers().forEach((name, value) -> fields.put(at + "headers." + name, value));
    }
    return fields;
  }

  /**
   * The definition as stored: model, instructions, tools, requires_approval and limits, defaults
   * filled in, and output_schema only when there is one (so a definition without it is stored as
   * before, and putting it again changes nothing).
   */
  public ObjectNode toJson() {
    ObjectNode out = Json.MAPPER.createObjectNode().put("model", model).put("instructions", instructions);
    ArrayNode list = out.putArray("tools");
    for (Tool t : tools) {
      ObjectNode tool = list.addObject().put("name", t.name()).put("description", t.description());
      tool.set("parameters", t.parameters());
      tool.put("url", t.url());
      ObjectNode headers = tool.putObject("headers");
      t.headers().forEach(headers::put);
      tool.put("timeout_ms", t.timeoutMs()).put("requires_approval", t.requiresApproval());
    }
    out.put("requires_approval", requiresApproval);
    out.putObject("limits").put("max_turns", limits.maxTurns()).put("max_tool_calls", limits.maxToolCalls())
        .put("max_total_tokens", limits.maxTotalTokens()).put("timeout_s", limits.timeoutSeconds());
    if (limits.maxParallelToolCalls() != null) {
      out.with("limits").put("max_parallel_tool_calls", limits.maxParallelToolCalls());
    }
    if (outputSchema != null) {
      out.set("output_schema", outputSchema);
    }
    if (!mcpServers.isEmpty()) {
      ArrayNode servers = out.putArray("mcp_servers");
      for (McpServer m : mcpServers) {
        ObjectNode server = servers.addObject().put("name", m.name()).put("url", m.url());
        ObjectNode headers = server.putObject("headers");
        m.headers().forEach(headers::put);
        if (m.allowedTools() == null) {
          server.putNull("allowed_tools");
        } else {
          m.allowedTools().forEach(server.putArray("allowed_tools")::add);
        }
        if (m.approvalTools().isEmpty()) {
          server.put("requires_approval", m.approveAll());
        } else {
          m.approvalTools().forEach(server.putArray("requires_approval")::add);
        }
        server.put("timeout_ms", m.timeoutMs());
      }
    }
    return out;
  }

  /** The definition stored as {@link #toJson}, read back (its name and description come from their columns). */
  public static AgentDefinition of(Agent agent) {
    ObjectNode body = (ObjectNode) Json.tree(agent.definition());
    body.put("name", agent.name()).put("description", agent.description());
    return stored(agent.id(), body);
  }

  /**
   * A definition stored by {@link #toJson} (of an agent or a run), read back. One saved when the
   * bounds were wider is held to today's: a max_total_tokens above {@link #MAX_TOTAL_TOKENS} (once
   * up to 10 million) counts as that bound, so its runs start and go on rather than fail to read.
   */
  public static AgentDefinition stored(String agentId, ObjectNode body) {
    JsonNode limits = body.path("limits");
    if (limits.isObject() && limits.path("max_total_tokens").isIntegralNumber()
        && limits.get("max_total_tokens").asLong() > MAX_TOTAL_TOKENS) {
      ((ObjectNode) limits).put("max_total_tokens", MAX_TOTAL_TOKENS);
    }
    return parse(agentId, body);
  }
}
