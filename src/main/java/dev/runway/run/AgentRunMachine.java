package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.AgentDefinition;
import dev.runway.agent.AllowedModels;
import dev.runway.agent.ModelOutcome;
import dev.runway.agent.ToolSchemas;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.usage.TokenQuota;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * An agent run's progress and the moves it may make, on top of what every run shares
 * ({@link RunMachine}): turns of the model, each answer stored before anything is done with it,
 * then the tool calls of that answer, made at once up to a cap (the engine's), each outcome kept as
 * it arrives and the results stored as tool messages in the model's order, then the next turn, until the model answers without tool calls. Limits, bad tool calls and the
 * model's failures end the run. An agent with an output_schema asks the model for JSON matching it
 * (response_format) and checks the final answer: a mismatch is sent back once as a user message,
 * which makes one more turn; a second ends the run with output_invalid.
 *
 * <p>Its progress document: {@code phase} ("mcp": the agent's MCP servers' tools are being listed,
 * before the first model call; "model": the next move is a model call; "tools": the last answer's
 * tool calls are being worked through), {@code mcp_tools} (each MCP server's tools as listed at the
 * start, {name, description, input_schema}: what the model is offered for the whole run; absent
 * until listed), {@code mcp_listing} and {@code mcp_list_attempts} (a listing started and not
 * recorded, and how many were started), {@code turns}, {@code messages} (the
 * transcript's length), {@code usage}, {@code output}, {@code deadline}, {@code model_attempt} and
 * {@code model_calling} (an attempt started and not recorded), {@code bad_in_a_row} and
 * {@code transcript_chars}, {@code model_endpoint} (of the last model call), {@code last_call_tokens}
 * (the total_tokens of the last answer), {@code tool_calls} (of the last answer: id, name, arguments
 * as the model sent them, attempts, and status: pending (not checked yet), ready, awaiting (its
 * approval), approved, calling, answered (its outcome and {@code result} kept until the calls before
 * it have theirs) or done (its result in the transcript)), and
 * {@code output_sent_back} (the turn whose answer did not match output_schema and was sent back;
 * absent until one did), and {@code stream} (true: the model streams its answers, each piece an
 * event; absent: it does not).
 */
public final class AgentRunMachine extends RunMachine {
  /** Bad tool calls in a row that end the run (invalid_tool_calls). */
  public static final int BAD_CALLS_IN_A_ROW = 3;
  /** Times a tool call cut off by a stop is sent again before it counts as failed. */
  static final int MAX_TOOL_ATTEMPTS = 3;
  /** The most characters of what is wrong with an answer that go back to the model (and into the error). */
  static final int MAX_MISMATCH_CHARS = 1000;
  /** The name of the response_format's schema: the model sees it, Runway does not read it back. */
  static final String RESPONSE_FORMAT_NAME = "output";

  /** The model endpoint of the built-in sandbox model (agents.model.base_url=sandbox). */
  public static final String SANDBOX = "sandbox";
  /** The event of a piece of a streamed answer's text. */
  public static final String MESSAGE_DELTA = "run.message.delta";

  /** What the run calls next. */
  public enum Next { NOTHING, MODEL, TOOL, MCP_LIST }

  /** An MCP tool the model may call: its server and its name there. */
  public record McpTool(AgentDefinition.McpServer server, String name) {}

  /** Times a listing of the MCP servers' tools cut off by a stop is made again before the run fails. */
  static final int MAX_MCP_LIST_ATTEMPTS = 3;

  /** What an agent run started with: the agent as it was, and the model it asks for. */
  public record Definition(AgentDefinition agent, String model) {}

  private final Definition definition;
  private final ObjectNode state;
  /** Tokens of the answers this machine recorded, to count in the workspace's usage of the day when saved. */
  private long newTokens;

  /** The machine of {@code run}, its definition parsed now (see {@link RunMachines}, which keeps them parsed). */
  public AgentRunMachine(Run run, Instant now) {
    this(run, now, parse(run.definition(), run.agentId()));
  }

  /** The machine of {@code run}, whose definition parsed is {@code definition}. */
  AgentRunMachine(Run run, Instant now, Definition definition) {
    super(run, now);
    this.definition = definition;
    this.state = (ObjectNode) Json.tree(run.steps());
  }

  /** The agent and model of a run's stored definition (its schemas checked). */
  static Definition parse(String text, String agentId) {
    JsonNode json = Json.tree(text);
    return new Definition(AgentDefinition.stored(agentId, (ObjectNode) json.get("agent").deepCopy()),
        json.get("model").asText());
  }

  /** The definition a new run stores. */
  public static String definitionJson(AgentDefinition agent, String model) {
    ObjectNode d = Json.MAPPER.createObjectNode().put("model", model);
    d.set("agent", agent.toJson());
    return Json.string(d);
  }

  /** The progress of a new run that must end by {@code deadline}, its model asked to stream or not. */
  public static String initialProgress(Instant deadline, boolean stream) {
    if (!stream) {
      return initialProgress(deadline);
    }
    ObjectNode s = (ObjectNode) Json.tree(initialProgress(deadline));
    return Json.string(s.put("stream", true));
  }

  /** The progress of a new run that must end by {@code deadline}. */
  public static String initialProgress(Instant deadline) {
    ObjectNode s = Json.MAPPER.createObjectNode();
    s.putNull("output").putNull("model_endpoint");
    s.putObject("usage").put("model_calls", 0).put("tool_calls", 0).put("prompt_tokens", 0)
        .put("completion_tokens", 0).put("total_tokens", 0);
    s.put("phase", "model").put("turns", 0).put("messages", 0).put("deadline", Json.time(deadline))
        .put("model_attempt", 0).put("model_calling", false).put("bad_in_a_row", 0).putArray("tool_calls");
    return Json.string(s);
  }

  public Definition definition() {
    return definition;
  }

  public String runId() {
    return base.id();
  }

  public String workspaceId() {
    return base.workspaceId();
  }

  public String agentId() {
    return base.agentId();
  }

  /** The tokens of the answers recorded by this machine's moves (not yet in the workspace's usage). */
  public long newTokens() {
    return newTokens;
  }

  @Override
  protected String progress() {
    return Json.string(state);
  }

  /** A new run's first messages: the instructions (as the system message) and the input. */
  public void begin(JsonNode input) {
    if (!definition.agent().instructions().isEmpty()) {
      addMessage("system", definition.agent().instructions(), null, null);
    }
    addMessage("user", input.isTextual() ? input.asText() : Json.string(input), null, null);
  }

  private Instant deadline() {
    return Instant.parse(state.get("deadline").asText());
  }

  private AgentDefinition.Limits limits() {
    return definition.agent().limits();
  }

  /**
   * Makes every move that needs no waiting (the start's approval gate, bad tool calls answered with
   * their error, a limit reached, a tool call's approval) and returns what the run calls next, or
   * NOTHING when it waits or ended. {@code maxModelAttempts} counts a model call's first attempt.
   */
  public Next moveUntilWaiting(long approvalTimeoutSeconds, int maxModelAttempts) {
    while (true) {
      if (!mayAdvance(approvalTimeoutSeconds)) {
        return Next.NOTHING;
      }
      if (!now.isBefore(deadline())) {
        fail("timeout", "the run did not finish within its limit of " + limits().timeoutSeconds() + " s", null);
        continue;
      }
      if (needsMcpList()) {
        if (state.path("mcp_listing").asBoolean()) {
          state.put("mcp_listing", false);
          if (state.path("mcp_list_attempts").asInt() >= MAX_MCP_LIST_ATTEMPTS) {
            fail("mcp_server_error", "listing the MCP servers' tools was cut off " + MAX_MCP_LIST_ATTEMPTS
                + " times before its answer was recorded (the server stopped)", null);
          }
          continue;
        }
        dueAt = now;
        return Next.MCP_LIST;
      }
      if (callingModel()) {
        if (state.get("model_calling").asBoolean()) {
          modelCallCutOff(maxModelAttempts);
          continue;
        }
        if (dueAt != null && now.isBefore(dueAt)) {
          return Next.NOTHING; // waiting to retry the model
        }
        if (state.get("turns").asInt() >= limits().maxTurns()) {
          fail("max_turns_exceeded", "the model was called " + limits().maxTurns() + " times (limits.max_turns) "
              + (outputSentBack() ? "and its last answer did not match output_schema" : "and still asked for tools"),
              null);
          continue;
        }
        dueAt = now;
        return Next.MODEL;
      }
      if (moveTools(approvalTimeoutSeconds)) {
        continue;
      }
      if (ended() || status == RunStatus.AWAITING_APPROVAL) {
        return Next.NOTHING;
      }
      dueAt = now;
      return Next.TOOL;
    }
  }

  /**
   * The tools phase with no call in flight (a claim, or the last call of a batch answered): checks
   * the calls not checked yet (a bad one is answered with its error at once), answers the calls cut
   * off too often, and moves to the next model call once every call has its result. Returns true
   * after a move that calls for another look (the run may have ended); false when the run makes
   * its next tool calls (TOOL) or now waits for the approval of the calls that need one. Calls that
   * need no approval run first, then those that need one are asked together.
   */
  private boolean moveTools(long approvalTimeoutSeconds) {
    flushAnswered();
    boolean allDone = true;
    boolean toCall = false;
    boolean startsNew = false;
    ArrayNode asking = Json.MAPPER.createArrayNode();
    for (JsonNode c : state.withArray("tool_calls")) {
      ObjectNode call = (ObjectNode) c;
      String callStatus = call.get("status").asText();
      if (callStatus.equals("pending")) {
        if (check(call)) {
          return true;
        }
        callStatus = call.get("status").asText();
      }
      switch (callStatus) {
        case "done", "answered" -> { }
        case "calling" -> {
          if (call.get("attempts").asInt() >= MAX_TOOL_ATTEMPTS) {
            toolResult(call, false, null, "the call was cut off " + MAX_TOOL_ATTEMPTS + " times before its answer "
                + "was recorded (the server stopped)", "failed");
            return true;
          }
          toCall = true;
        }
        case "ready", "approved" -> {
          toCall = true;
          startsNew = true;
        }
        case "awaiting" -> {
          ObjectNode asked = asking.addObject().put("id", call.get("id").asText()).put("name", call.get("name").asText());
          asked.set("arguments", arguments(call));
        }
        default -> throw new IllegalStateException("tool call status " + callStatus);
      }
      allDone &= callStatus.equals("done");
    }
    if (allDone) {
      state.put("phase", "model");
      return true;
    }
    if (toCall) {
      if (startsNew && !hasCalling() && state.with("usage").get("tool_calls").asInt() >= limits().maxToolCalls()) {
        fail("max_tool_calls_exceeded", "the run made " + limits().maxToolCalls() + " tool calls "
            + "(limits.max_tool_calls) and the model asked for more", null);
        return true;
      }
      return false;
    }
    if (!asking.isEmpty()) {
      ObjectNode pending = awaitApproval(approvalTimeoutSeconds, null);
      if (asking.size() == 1) {
        pending.set("tool_call", asking.get(0).deepCopy()); // as before several calls could be asked at once
      }
      pending.set("tool_calls", asking);
      return false;
    }
    return true; // answered calls wait for an earlier one: nothing here (flushAnswered wrote all it could)
  }

  /**
   * Checks a call the model just asked for: an unknown tool or arguments that do not fit are answered
   * with their error; else it is ready, or awaiting its approval. True when it was answered (or the
   * run failed).
   */
  private boolean check(ObjectNode call) {
    AgentDefinition.Tool tool = tool(call.get("name").asText());
    McpTool mcp = tool == null ? mcpTool(call.get("name").asText()) : null;
    if (tool == null && mcp == null) {
      toolResult(call, false, null, "there is no tool named '" + call.get("name").asText() + "'; the tools are: "
          + String.join(", ", toolNames()), "invalid");
      return true;
    }
    JsonNode arguments = arguments(call);
    if (arguments == null) {
      toolResult(call, false, null, "the arguments are not a JSON object: " + abbreviate(call.get("arguments")
          .asText(), 200), "invalid");
      return true;
    }
    if (mcp != null) {
      // The MCP server checks the arguments against its own inputSchema (its error goes to the model).
      call.put("status", mcp.server().requiresApproval(mcp.name()) ? "awaiting" : "ready");
      return false;
    }
    List<String> violations;
    try {
      violations = ToolSchemas.violations(tool.parameters(), arguments);
    } catch (ToolSchemas.TooSlow e) {
      fail("schema_budget_exceeded", e.getMessage() + " (tool '" + tool.name() + "'): make its parameters "
          + "schema simpler", null);
      return true;
    }
    if (!violations.isEmpty()) {
      toolResult(call, false, null, "the arguments do not match the tool's parameters: "
          + String.join("; ", violations), "invalid");
      return true;
    }
    call.put("status", tool.requiresApproval() ? "awaiting" : "ready");
    return false;
  }

  // ---- MCP servers ----

  /** Whether the run must still list its MCP servers' tools (before its first model call). */
  private boolean needsMcpList() {
    return !definition.agent().mcpServers().isEmpty() && !state.has("mcp_tools");
  }

  /** Whether the run's call in progress lists its MCP servers' tools. */
  public boolean listingMcp() {
    return listingMcp(state);
  }

  /** As {@link #listingMcp()}, of a run's progress document. */
  public static boolean listingMcp(JsonNode progress) {
    return progress.path("phase").asText().equals("mcp");
  }

  /** Records the listing of the MCP servers' tools as started, before it goes out. */
  public void startMcpList() {
    state.put("phase", "mcp").put("mcp_listing", true)
        .put("mcp_list_attempts", state.path("mcp_list_attempts").asInt() + 1);
  }

  /**
   * The MCP servers' tools were listed: {@code tools} (each a list of {name, description,
   * input_schema}) are kept in the progress for the rest of the run, whatever the servers list
   * later; {@code skipped} names the tools left out. A server that could not be listed
   * ({@code errors}) fails the run with mcp_server_error, as the OpenAI Agents SDK's run fails when
   * an MCP server's list_tools does.
   */
  public void mcpListed(Map<String, List<ObjectNode>> tools, Map<String, List<String>> skipped,
      Map<String, String> errors) {
    if (ended() || !listingMcp()) {
      return;
    }
    state.put("phase", "model").put("mcp_listing", false);
    for (AgentDefinition.McpServer server : definition.agent().mcpServers()) {
      String error = errors.get(server.name());
      if (error != null) {
        ObjectNode details = Json.MAPPER.createObjectNode().put("mcp_server", server.name());
        fail("mcp_server_error", "MCP server '" + server.name() + "': its tools could not be listed: "
            + abbreviate(error, MAX_MISMATCH_CHARS), details);
        return;
      }
    }
    ObjectNode kept = state.putObject("mcp_tools");
    List<Map<String, Object>> listed = new java.util.ArrayList<>();
    for (AgentDefinition.McpServer server : definition.agent().mcpServers()) {
      ArrayNode list = kept.putArray(server.name());
      tools.getOrDefault(server.name(), List.of()).forEach(list::add);
      listed.add(data("name", server.name(), "tools", tools.getOrDefault(server.name(), List.of()).stream()
          .map(t -> t.get("name").asText()).toList(), "skipped", skipped.getOrDefault(server.name(), List.of())));
    }
    record("mcp.tools_listed", ENGINE, null, state.path("mcp_list_attempts").asInt(), data("mcp_servers", listed));
    dueAt = now;
  }

  /** The MCP tool the model knows as {@code name} ({@code <server>__<tool>}), as listed at the run's start; or null. */
  public McpTool mcpTool(String name) {
    int at = name.indexOf(AgentDefinition.MCP_SEPARATOR);
    if (at <= 0) {
      return null;
    }
    String serverName = name.substring(0, at);
    String toolName = name.substring(at + AgentDefinition.MCP_SEPARATOR.length());
    for (AgentDefinition.McpServer server : definition.agent().mcpServers()) {
      if (server.name().equals(serverName)) {
        for (JsonNode t : state.path("mcp_tools").path(serverName)) {
          if (t.get("name").asText().equals(toolName)) {
            return new McpTool(server, toolName);
          }
        }
      }
    }
    return null;
  }

  /** The names the model knows the run's tools by: the agent's, then its MCP servers' as listed. */
  private List<String> toolNames() {
    List<String> names = new java.util.ArrayList<>();
    definition.agent().tools().forEach(t -> names.add(t.name()));
    state.path("mcp_tools").fields().forEachRemaining(server -> server.getValue().forEach(t ->
        names.add(server.getKey() + AgentDefinition.MCP_SEPARATOR + t.get("name").asText())));
    return names;
  }

  // ---- model calls ----

  /** Whether the run's call in progress is a model call (else a tool call). */
  public boolean callingModel() {
    return callingModel(state);
  }

  /** As {@link #callingModel()}, of a run's progress document. */
  public static boolean callingModel(JsonNode progress) {
    return progress.path("phase").asText().equals("model");
  }

  public int modelAttempt() {
    return state.get("model_attempt").asInt();
  }

  /** Whether the model is asked to stream its answers ({@code "stream": true} at the start). */
  public boolean streams() {
    return streams(state);
  }

  /** As {@link #streams()}, of a run's progress document. */
  public static boolean streams(JsonNode progress) {
    return progress.path("stream").asBoolean(false);
  }

  /**
   * The {@code run.message.delta} event of a piece of the answer of the model call in progress: its
   * turn and attempt (a retried call streams its answer again, from the start, under the next
   * attempt), and the piece's place among the call's pieces, from 0. Stored apart from the run's
   * saves, as the pieces arrive (see AgentRunner).
   */
  public Event messageDelta(int index, String text, Instant at) {
    return event(base, MESSAGE_DELTA, ENGINE, null, modelAttempt(),
        data("turn", state.get("turns").asInt() + 1, "index", index, "delta", text), at);
  }

  /**
   * Records a model call to {@code endpoint} as started, before it goes out (it counts even if its
   * answer is never recorded).
   */
  public void startModelCall(String endpoint) {
    int attempt = modelAttempt() + 1;
    state.put("model_attempt", attempt).put("model_calling", true).put("model_endpoint", endpoint);
    ObjectNode usage = state.with("usage");
    if (attempt == 1) {
      usage.put("model_calls", usage.get("model_calls").asInt() + 1);
    }
    record("model_call.started", ENGINE, null, attempt, data("model", definition.model(), "turn",
        state.get("turns").asInt() + 1));
  }

  /**
   * Before a model call goes out: the run fails with model_not_allowed when its model is no longer
   * in agents.model.allowed (the list changed since it started), and with token_quota_exceeded when
   * the call would pass the workspace's tokens of the day, {@code used} of them used so far. A call
   * sends the whole transcript again, the last answer included, so it costs at least what the last
   * call did: with fewer tokens left than that it would pass the quota, and is not made. As
   * OpenAI's insufficient_quota, this is not retried: the run fails rather than waits for the next
   * day, past most runs' timeout_s. Returns whether the call may go out.
   */
  public boolean mayCallModel(AllowedModels allowed, TokenQuota quota, long used) {
    if (!allowed.allows(definition.model())) {
      fail("model_not_allowed", "the run's model '" + definition.model() + "' is no longer allowed on this server "
          + "(agents.model.allowed)", null);
      return false;
    }
    if (quota.unlimited()) {
      return true;
    }
    long lastCall = state.path("last_call_tokens").asLong(0);
    if (used < quota.perDay() && used + lastCall <= quota.perDay()) {
      return true;
    }
    Instant resets = TokenQuota.resetsAt(now);
    String message = used >= quota.perDay() ? quota.exhausted(used, resets)
        : "the next model call would pass the workspace's tokens for today: " + (quota.perDay() - used)
            + " are left of " + quota.perDay() + " (agents.workspace_tokens_per_day) and this run's last call "
            + "used " + lastCall + "; agent runs may call the model again after " + Json.time(resets);
    ObjectNode details = Json.MAPPER.createObjectNode().put("tokens_used", used).put("tokens_per_day", quota.perDay())
        .put("resets_at", Json.time(resets));
    fail(TokenQuota.EXCEEDED, message, details);
    return false;
  }

  /** The Chat Completions request of the next turn, from the transcript so far. */
  public ObjectNode modelRequest(List<RunMessage> transcript) {
    return modelRequest(transcript, List.of());
  }

  /**
   * The Chat Completions request of the next turn: the run's own system message (its instructions),
   * then {@code context} (what the run was given from its thread, see {@link Threads}), then the rest
   * of its transcript so far.
   */
  public ObjectNode modelRequest(List<RunMessage> transcript, List<RunMessage> context) {
    ObjectNode request = Json.MAPPER.createObjectNode().put("model", definition.model());
    ArrayNode messages = request.putArray("messages");
    int leading = 0;
    while (leading < transcript.size() && transcript.get(leading).role().equals("system")) {
      leading++;
    }
    List<RunMessage> ordered = new java.util.ArrayList<>(transcript.subList(0, leading));
    ordered.addAll(context);
    ordered.addAll(transcript.subList(leading, transcript.size()));
    for (RunMessage m : ordered) {
      ObjectNode message = messages.addObject().put("role", m.role());
      message.put("content", m.content());
      if (m.toolCalls() != null) {
        message.set("tool_calls", Json.tree(m.toolCalls()));
      }
      if (m.toolCallId() != null) {
        message.put("tool_call_id", m.toolCallId());
      }
    }
    if (!toolNames().isEmpty()) {
      ArrayNode tools = request.putArray("tools");
      for (AgentDefinition.Tool t : definition.agent().tools()) {
        ObjectNode function = tools.addObject().put("type", "function").putObject("function")
            .put("name", t.name()).put("description", t.description());
        function.set("parameters", t.parameters());
      }
      state.path("mcp_tools").fields().forEachRemaining(server -> server.getValue().forEach(t -> {
        ObjectNode function = tools.addObject().put("type", "function").putObject("function")
            .put("name", server.getKey() + AgentDefinition.MCP_SEPARATOR + t.get("name").asText())
            .put("description", t.path("description").asText(""));
        function.set("parameters", t.get("input_schema"));
      }));
    }
    JsonNode outputSchema = definition.agent().outputSchema();
    if (outputSchema != null) {
      // Not strict: OpenAI's strict mode takes only a subset of JSON Schema (every property required,
      // additionalProperties false, ...) and answers 400 to the rest; Runway checks the answer itself.
      request.putObject("response_format").put("type", "json_schema").putObject("json_schema")
          .put("name", RESPONSE_FORMAT_NAME).set("schema", outputSchema);
    }
    return request;
  }

  /** The model answered: the answer is stored, then the run succeeds or works through its tool calls. */
  public void modelAnswered(ModelOutcome.Answer answer) {
    int attempt = modelAttempt();
    int turn = state.get("turns").asInt() + 1;
    state.put("model_calling", false).put("model_attempt", 0).put("turns", turn);
    ObjectNode usage = state.with("usage");
    usage.put("prompt_tokens", usage.get("prompt_tokens").asLong() + answer.promptTokens());
    usage.put("completion_tokens", usage.get("completion_tokens").asLong() + answer.completionTokens());
    usage.put("total_tokens", usage.get("total_tokens").asLong() + answer.totalTokens());
    state.put("last_call_tokens", Math.max(0, answer.totalTokens()));
    newTokens += Math.max(0, answer.totalTokens());
    ArrayNode calls = Json.MAPPER.createArrayNode();
    for (ModelOutcome.ToolCall c : answer.toolCalls()) {
      calls.addObject().put("id", c.id()).put("type", "function").putObject("function").put("name", c.name())
          .put("arguments", c.arguments());
    }
    addMessage("assistant", answer.content(), calls.isEmpty() ? null : Json.string(calls), null);
    boolean textOutput = definition.agent().outputSchema() == null;
    if (textOutput && answer.content() != null && !answer.content().isBlank()) {
      state.put("output", answer.content());
    }
    record("model_call.finished", ENGINE, null, attempt, data("outcome", "succeeded", "turn", turn,
        "finish_reason", answer.finishReason(), "tool_calls", answer.toolCalls().size(),
        "usage", Map.of("prompt_tokens", answer.promptTokens(), "completion_tokens", answer.completionTokens(),
            "total_tokens", answer.totalTokens())));
    if (usage.get("total_tokens").asLong() > limits().maxTotalTokens()) {
      fail("token_budget_exceeded", "the run used " + usage.get("total_tokens").asLong() + " tokens, over its "
          + "limit of " + limits().maxTotalTokens() + " (limits.max_total_tokens)", null);
      return;
    }
    if (answer.toolCalls().isEmpty()) {
      if (textOutput) {
        succeed();
      } else {
        finalAnswer(answer.content());
      }
      return;
    }
    ArrayNode pending = state.putArray("tool_calls");
    for (ModelOutcome.ToolCall c : answer.toolCalls()) {
      pending.addObject().put("id", c.id()).put("name", c.name()).put("arguments", c.arguments())
          .put("status", "pending").put("attempts", 0);
    }
    state.put("phase", "tools");
    dueAt = now;
  }

  /**
   * The answer without tool calls of an agent with an output_schema: JSON matching the schema ends
   * the run with it as output. Else what is wrong goes back to the model as a user message, stored
   * with the answer (so a restart sends the same next request), and the model is called once more;
   * the second time the run fails with output_invalid.
   */
  private void finalAnswer(String content) {
    String wrong = "it is empty";
    JsonNode value = null;
    if (content != null && !content.isBlank()) {
      try {
        value = Json.parseUntrusted(content.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      } catch (Json.InvalidJson e) {
        wrong = "the text " + e.getMessage(); // "is not valid JSON at line 1, column 2", …
      }
    }
    if (value != null) {
      List<String> violations;
      try {
        violations = ToolSchemas.violations(definition.agent().outputSchema(), value);
      } catch (ToolSchemas.TooSlow e) {
        fail("schema_budget_exceeded", "checking the answer against output_schema " + e.why()
            + ": make output_schema simpler", null);
        return;
      }
      if (violations.isEmpty()) {
        state.set("output", value);
        succeed();
        return;
      }
      wrong = "it does not match the JSON Schema: " + String.join("; ", violations);
    }
    wrong = abbreviate(wrong, MAX_MISMATCH_CHARS);
    if (state.has("output_sent_back")) {
      fail("output_invalid", "the model's answer did not match output_schema a second time (the first was sent "
          + "back): " + wrong, null);
      return;
    }
    state.put("output_sent_back", state.get("turns").asInt());
    addMessage("user", "Your answer cannot be used: " + wrong + ". Answer again with only a JSON value that "
        + "matches the JSON Schema of the response format, without any other text.", null, null);
    dueAt = now;
  }

  /** Whether the last answer did not match output_schema and was sent back, so the next model call is its retry. */
  private boolean outputSentBack() {
    return state.path("output_sent_back").asInt(-1) == state.get("turns").asInt();
  }

  /** A model call failed: it is tried again at {@code retryAt}, or (null) the run fails with model_error. */
  public void modelFailed(ModelOutcome.Failure failure, Instant retryAt) {
    int attempt = modelAttempt();
    state.put("model_calling", false);
    record("model_call.finished", ENGINE, null, attempt, data("outcome", "failed",
        "http_status", failure.httpStatus(), "message", failure.message()));
    if (retryAt != null) {
      Instant deadline = deadline();
      dueAt = retryAt.isBefore(deadline) ? retryAt : deadline;
      return;
    }
    ObjectNode details = Json.MAPPER.createObjectNode();
    if (failure.httpStatus() == null) {
      details.putNull("http_status");
    } else {
      details.put("http_status", failure.httpStatus());
    }
    details.put("attempts", attempt);
    fail("model_error", failure.message() + (attempt > 1 ? " (after " + attempt + " attempts)" : ""), details);
  }

  private void modelCallCutOff(int maxModelAttempts) {
    ModelOutcome.Failure cutOff = new ModelOutcome.Failure(null,
        "the model call was cut off before its answer was recorded (the server stopped)", true, null);
    modelFailed(cutOff, modelAttempt() < maxModelAttempts ? now : null);
  }

  // ---- tool calls ----

  /** The tool call of this id in the last answer, or null. */
  public ObjectNode toolCall(String id) {
    for (JsonNode c : state.withArray("tool_calls")) {
      if (c.get("id").asText().equals(id)) {
        return (ObjectNode) c;
      }
    }
    return null;
  }

  /** The last answer's tool calls now being made (started and not answered). */
  public List<ObjectNode> callingTools() {
    List<ObjectNode> calling = new java.util.ArrayList<>();
    for (JsonNode c : state.withArray("tool_calls")) {
      if (c.get("status").asText().equals("calling")) {
        calling.add((ObjectNode) c);
      }
    }
    return calling;
  }

  private boolean hasCalling() {
    return !callingTools().isEmpty();
  }

  public AgentDefinition.Tool tool(String name) {
    for (AgentDefinition.Tool t : definition.agent().tools()) {
      if (t.name().equals(name)) {
        return t;
      }
    }
    return null;
  }

  /** The call's arguments as a JSON object, or null when the model sent something else. */
  public static JsonNode arguments(ObjectNode call) {
    try {
      JsonNode parsed = Json.parseUntrusted(call.get("arguments").asText().getBytes(java.nio.charset.StandardCharsets.UTF_8));
      return parsed.isObject() ? parsed : null;
    } catch (Json.InvalidJson e) {
      return null;
    }
  }

  /**
   * Records tool calls as started, before they go out, so that at most {@code cap} are made at once
   * and no more than limits.max_tool_calls in all: with {@code resume} (no call in flight: a claim,
   * or a batch that ended) the calls cut off first (sent again with their Idempotency-Key), then
   * new ones in the model's order; else new ones beside those in flight. Returns the calls started.
   */
  public List<ObjectNode> startToolCalls(int cap, boolean resume) {
    List<ObjectNode> started = new java.util.ArrayList<>();
    int inFlight = 0;
    for (ObjectNode call : callingTools()) {
      if (resume) {
        started.add(call);
        startToolCall(call);
      }
      inFlight++;
    }
    ObjectNode usage = state.with("usage");
    for (JsonNode c : state.withArray("tool_calls")) {
      String callStatus = c.get("status").asText();
      if (inFlight >= cap || usage.get("tool_calls").asInt() >= limits().maxToolCalls()) {
        break;
      }
      if (callStatus.equals("ready") || callStatus.equals("approved")) {
        startToolCall((ObjectNode) c);
        started.add((ObjectNode) c);
        inFlight++;
      }
    }
    return started;
  }

  private void startToolCall(ObjectNode call) {
    int attempt = call.get("attempts").asInt() + 1;
    call.put("status", "calling").put("attempts", attempt);
    if (attempt == 1) {
      ObjectNode usage = state.with("usage");
      usage.put("tool_calls", usage.get("tool_calls").asInt() + 1);
    }
    Map<String, Object> data = data("tool_call_id", call.get("id").asText(), "name", call.get("name").asText());
    withMcp(data, call.get("name").asText());
    record("tool_call.started", ENGINE, null, attempt, data);
  }

  /**
   * The tool call {@code id} ended: its result is kept, and goes to the transcript (for the next
   * model call) once the calls before it in the model's order have theirs. Nothing when the call is
   * no longer being made (the run ended meanwhile).
   */
  public void toolAnswered(String id, boolean ok, Integer httpStatus, String content, String message) {
    ObjectNode call = toolCall(id);
    if (ended() || call == null || !call.get("status").asText().equals("calling")) {
      return;
    }
    toolResult(call, ok, httpStatus, ok ? content : message, ok ? "succeeded" : "failed");
  }

  /** An MCP tool's call event also names its server and its name there ({@code mcp_server}, {@code mcp_tool}). */
  private void withMcp(Map<String, Object> data, String name) {
    McpTool mcp = tool(name) == null ? mcpTool(name) : null;
    if (mcp != null) {
      data.put("mcp_server", mcp.server().name());
      data.put("mcp_tool", mcp.name());
    }
  }

  /** Writes the results of the calls answered, in the model's order, up to the first call without one. */
  private void flushAnswered() {
    for (JsonNode c : state.withArray("tool_calls")) {
      String callStatus = c.get("status").asText();
      if (callStatus.equals("answered")) {
        ObjectNode call = (ObjectNode) c;
        addMessage("tool", call.get("result").asText(), null, call.get("id").asText());
        call.put("status", "done").remove("result");
      } else if (!callStatus.equals("done")) {
        return;
      }
    }
  }

  /**
   * Stores the call's result as a tool message (an error as {"error": …}) and counts bad calls in a
   * row: the third ends the run with invalid_tool_calls.
   */
  private void toolResult(ObjectNode call, boolean ok, Integer httpStatus, String contentOrError, String outcome) {
    String content = ok ? contentOrError : Json.string(Map.of("error", contentOrError));
    call.put("status", "answered").put("outcome", outcome).put("result", content);
    flushAnswered();
    Map<String, Object> data = data("tool_call_id", call.get("id").asText(), "name", call.get("name").asText(),
        "outcome", outcome, "http_status", httpStatus, "message", ok ? null : contentOrError);
    withMcp(data, call.get("name").asText());
    record("tool_call.finished", ENGINE, null, call.get("attempts").asInt(), data);
    boolean bad = !ok && !outcome.equals("rejected");
    int inARow = bad ? state.get("bad_in_a_row").asInt() + 1 : 0;
    state.put("bad_in_a_row", inARow);
    if (inARow >= BAD_CALLS_IN_A_ROW) {
      fail("invalid_tool_calls", BAD_CALLS_IN_A_ROW + " tool calls in a row failed; the last: " + contentOrError,
          null);
    }
  }

  // ---- approvals and cancel ----

  @Override
  protected void approved(String actor, String comment) {
    extendDeadline();
    if (currentStep < 0) {
      currentStep = 0; // the start's gate
      return;
    }
    for (String id : asked()) {
      toolCall(id).put("status", "approved");
    }
  }

  @Override
  protected boolean rejected(String actor, String comment) {
    if (currentStep < 0) {
      return false;
    }
    extendDeadline();
    for (String id : asked()) {
      reject(toolCall(id), comment);
    }
    return true;
  }

  /**
   * Approves or rejects some of the tool calls the approval asks about: they leave its tool_calls,
   * and the run waits for the others. True when others remain; false when these are all that
   * remain (the whole approval is then decided as one).
   */
  @Override
  protected boolean decidePart(boolean approve, String comment, List<String> toolCallIds) {
    List<String> asked = currentStep < 0 ? List.of() : asked();
    if (toolCallIds.isEmpty()) {
      throw DomainException.invalid("tool_call_ids", "tool_call_ids must name at least one tool call: leave it "
          + "out to decide them all");
    }
    for (String id : toolCallIds) {
      if (!asked.contains(id)) {
        throw DomainException.invalid("tool_call_ids", "tool call '" + abbreviate(id, 100) + "' is not awaiting "
            + "approval" + (asked.isEmpty() ? "" : "; these are: " + String.join(", ", asked)));
      }
    }
    if (new java.util.HashSet<>(toolCallIds).containsAll(asked)) {
      return false;
    }
    ArrayNode remaining = Json.MAPPER.createArrayNode();
    for (JsonNode c : approval.withArray("tool_calls")) {
      String id = c.get("id").asText();
      if (!toolCallIds.contains(id)) {
        remaining.add(c);
      } else if (approve) {
        toolCall(id).put("status", "approved");
      } else {
        reject(toolCall(id), comment);
      }
    }
    approval.set("tool_calls", remaining);
    return true;
  }

  private void reject(ObjectNode call, String comment) {
    toolResult(call, false, null, "the call was rejected by the approver"
        + (comment == null || comment.isBlank() ? "" : ": " + comment), "rejected");
  }

  /**
   * The ids of the tool calls the approval asks about and not decided yet (an approval stored before
   * several calls could be asked at once has only tool_call).
   */
  private List<String> asked() {
    List<String> ids = new java.util.ArrayList<>();
    if (approval == null) {
      return ids;
    }
    if (approval.has("tool_calls")) {
      approval.get("tool_calls").forEach(c -> ids.add(c.get("id").asText()));
    } else if (approval.path("tool_call").has("id")) {
      ids.add(approval.get("tool_call").get("id").asText());
    }
    return ids;
  }

  /** Time spent waiting for a person does not count against the run's timeout_s. */
  private void extendDeadline() {
    Duration waited = Duration.between(Instant.parse(approval.get("requested_at").asText()), now);
    state.put("deadline", Json.time(deadline().plus(waited)));
  }

  @Override
  protected void canceled() {
    state.put("model_calling", false);
  }

  private void addMessage(String role, String content, String toolCalls, String toolCallId) {
    int index = state.get("messages").asInt();
    messages.add(new RunMessage(base.id(), index, role, content, toolCalls, toolCallId, now));
    long chars = (content == null ? 0 : content.length()) + (toolCalls == null ? 0 : toolCalls.length()) + 64;
    state.put("messages", index + 1).put("transcript_chars", state.path("transcript_chars").asLong() + chars);
  }


  private static String abbreviate(String text, int max) {
    return text.length() <= max ? text : text.substring(0, max) + "…";
  }

  /** Whether the run has ended (its moves made so far). */
  public boolean hasEnded() {
    return ended();
  }

  /** How long the run has left before its timeout_s. */
  public Duration timeLeft() {
    return Duration.between(now, deadline());
  }
}
