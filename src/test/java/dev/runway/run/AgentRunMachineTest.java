package dev.runway.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.runway.agent.AgentDefinition;
import dev.runway.agent.ModelOutcome;
import dev.runway.core.Json;
import dev.runway.run.AgentRunMachine.Next;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * An agent run's moves, without a database or HTTP, in the order the engine makes them: each call
 * recorded as started (startModelCall, startToolCalls) and saved, then what came of it (modelAnswered,
 * toolAnswered) taken up by a new machine of the saved run.
 */
class AgentRunMachineTest {
  private static final Instant NOW = Instant.parse("2026-03-01T12:00:00Z");
  private static final long APPROVAL_TIMEOUT_SECONDS = 3600;
  private static final int MAX_MODEL_ATTEMPTS = 3;

  private static final String WEATHER_AGENT = """
      {"model": "gpt-test", "instructions": "You answer questions about the weather.",
       "tools": [{"name": "get_weather", "url": "https://tools.example/weather",
                  "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                 "required": ["city"]}},
                 {"name": "send_report", "url": "https://tools.example/report", "requires_approval": true}],
       "limits": {"max_turns": 3, "timeout_s": 600}}""";

  @Test
  void begin_adds_the_instructions_as_system_message_then_the_input_as_user_message() {
    AgentRunMachine machine = new AgentRunMachine(newRun(WEATHER_AGENT), NOW);

    machine.begin(TextNode.valueOf("Will it rain in Oslo?"));

    List<RunMessage> messages = machine.messages();
    assertEquals(List.of("system", "user"), messages.stream().map(RunMessage::role).toList());
    assertEquals("You answer questions about the weather.", messages.get(0).content());
    assertEquals("Will it rain in Oslo?", messages.get(1).content());
    assertEquals(List.of(0, 1), messages.stream().map(RunMessage::idx).toList());
    assertEquals("run_1", messages.get(1).runId());
    assertEquals(2, progress(machine).get("messages").asInt());
  }

  @Test
  void begin_without_instructions_adds_only_the_input_an_object_as_its_json() {
    AgentRunMachine machine = new AgentRunMachine(newRun("{\"model\": \"gpt-test\"}"), NOW);

    machine.begin(Json.tree("{\"city\":\"Oslo\"}"));

    assertEquals(1, machine.messages().size());
    assertEquals("user", machine.messages().get(0).role());
    assertEquals("{\"city\":\"Oslo\"}", machine.messages().get(0).content());
  }

  @Test
  void a_new_run_calls_the_model_first() {
    AgentRunMachine machine = begun(WEATHER_AGENT);

    assertEquals(Next.MODEL, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    Run run = machine.toRun(null, null);
    assertEquals("running", run.status());
    assertEquals(NOW, run.dueAt());
    assertTrue(machine.callingModel());
    assertEquals(List.of(), eventTypes(machine));
  }

  @Test
  void an_answer_without_tool_calls_ends_the_run_succeeded_with_the_answer_as_output() {
    Run calling = modelCallStarted(afterFirstMoves(WEATHER_AGENT), NOW);
    AgentRunMachine machine = new AgentRunMachine(calling, NOW.plusSeconds(2));

    machine.modelAnswered(answer("No rain in Oslo today.", List.of()));

    Run done = machine.toRun(null, null);
    assertEquals("succeeded", done.status());
    assertEquals(NOW.plusSeconds(2), done.finishedAt());
    assertNull(done.dueAt());
    JsonNode progress = Json.tree(done.steps());
    assertEquals("No rain in Oslo today.", progress.get("output").asText());
    assertEquals(1, progress.get("turns").asInt());
    assertEquals(1, progress.get("usage").get("model_calls").asInt());
    assertEquals(30, progress.get("usage").get("total_tokens").asInt());
    assertEquals(30, machine.newTokens());
    assertEquals(List.of("model_call.finished", "run.succeeded"), eventTypes(machine));
    assertEquals(List.of("assistant"), machine.messages().stream().map(RunMessage::role).toList());
    assertEquals(2, machine.messages().get(0).idx());
    assertEquals(Next.NOTHING, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));
  }

  @Test
  void starting_a_model_call_records_its_attempt() {
    AgentRunMachine machine = new AgentRunMachine(afterFirstMoves(WEATHER_AGENT), NOW);
    assertEquals(Next.MODEL, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    machine.startModelCall("https://models.example/v1");

    assertEquals(1, machine.modelAttempt());
    JsonNode progress = progress(machine);
    assertTrue(progress.get("model_calling").asBoolean());
    assertEquals("https://models.example/v1", progress.get("model_endpoint").asText());
    assertEquals(List.of("model_call.started"), eventTypes(machine));
    assertEquals(1, machine.events().get(0).attempt());
  }

  @Test
  void an_answer_with_a_tool_call_calls_the_tool_then_the_model_again() {
    Run calling = modelCallStarted(afterFirstMoves(WEATHER_AGENT), NOW);
    AgentRunMachine answered = new AgentRunMachine(calling, NOW.plusSeconds(2));

    answered.modelAnswered(answer(null, List.of(new ModelOutcome.ToolCall("call_1", "get_weather",
        "{\"city\":\"Oslo\"}"))));
    assertEquals(Next.TOOL, answered.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    assertEquals("running", answered.toRun(null, null).status());
    assertEquals("get_weather", answered.toolCall("call_1").get("name").asText());
    RunMessage assistant = answered.messages().get(0);
    assertEquals("assistant", assistant.role());
    assertNull(assistant.content());
    assertEquals("get_weather", Json.tree(assistant.toolCalls()).get(0).get("function").get("name").asText());

    answered.startToolCalls(8, true);
    Run toolCalling = answered.toRun("instance-a", NOW.plusSeconds(30));
    assertEquals(List.of("model_call.finished", "tool_call.started"), eventTypes(answered));

    AgentRunMachine toolDone = new AgentRunMachine(toolCalling, NOW.plusSeconds(3));
    toolDone.toolAnswered("call_1", true, 200, "{\"rain\":false}", null);
    assertEquals(Next.MODEL, toolDone.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    RunMessage tool = toolDone.messages().get(0);
    assertEquals("tool", tool.role());
    assertEquals("{\"rain\":false}", tool.content());
    assertEquals("call_1", tool.toolCallId());
    assertEquals(3, tool.idx());
    assertEquals(List.of("tool_call.finished"), eventTypes(toolDone));
    assertEquals("succeeded", Json.tree(toolDone.events().get(0).data()).get("outcome").asText());
    JsonNode progress = progress(toolDone);
    assertEquals("model", progress.get("phase").asText());
    assertEquals(1, progress.get("usage").get("tool_calls").asInt());
  }

  @Test
  void a_tool_that_answered_with_an_error_goes_to_the_model_as_an_error() {
    AgentRunMachine machine = toolCallStarted("get_weather", "{\"city\":\"Oslo\"}");

    machine.toolAnswered("call_1", false, 502, null, "the tool answered HTTP 502");
    assertEquals(Next.MODEL, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    assertEquals("{\"error\":\"the tool answered HTTP 502\"}", machine.messages().get(0).content());
    JsonNode finished = Json.tree(machine.events().get(0).data());
    assertEquals("failed", finished.get("outcome").asText());
    assertEquals(502, finished.get("http_status").asInt());
    assertEquals(1, progress(machine).get("bad_in_a_row").asInt());
  }

  @Test
  void a_call_of_an_unknown_tool_is_answered_as_invalid_and_the_model_is_called_again() {
    AgentRunMachine machine = answeredWith(new ModelOutcome.ToolCall("call_1", "get_forecast", "{}"));

    assertEquals(Next.MODEL, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    assertEquals("running", machine.toRun(null, null).status());
    RunMessage tool = machine.messages().get(1);
    assertEquals("tool", tool.role());
    assertEquals("call_1", tool.toolCallId());
    assertEquals("there is no tool named 'get_forecast'; the tools are: get_weather, send_report",
        Json.tree(tool.content()).get("error").asText());
    assertEquals(List.of("model_call.finished", "tool_call.finished"), eventTypes(machine));
    assertEquals("invalid", Json.tree(machine.events().get(1).data()).get("outcome").asText());
    assertEquals(0, progress(machine).get("usage").get("tool_calls").asInt());
  }

  @Test
  void arguments_that_do_not_match_the_tools_parameters_are_answered_as_invalid() {
    AgentRunMachine machine = answeredWith(new ModelOutcome.ToolCall("call_1", "get_weather", "{\"town\":\"Oslo\"}"));

    assertEquals(Next.MODEL, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    String error = Json.tree(machine.messages().get(1).content()).get("error").asText();
    assertTrue(error.startsWith("the arguments do not match the tool's parameters: "), error);
    assertEquals("invalid", Json.tree(machine.events().get(1).data()).get("outcome").asText());
  }

  @Test
  void arguments_that_are_not_a_json_object_are_answered_as_invalid() {
    AgentRunMachine machine = answeredWith(new ModelOutcome.ToolCall("call_1", "get_weather", "Oslo"));

    assertEquals(Next.MODEL, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    assertEquals("the arguments are not a JSON object: Oslo",
        Json.tree(machine.messages().get(1).content()).get("error").asText());
  }

  @Test
  void three_bad_tool_calls_in_a_row_end_the_run_with_invalid_tool_calls() {
    AgentRunMachine machine = answeredWith(new ModelOutcome.ToolCall("call_1", "nope", "{}"),
        new ModelOutcome.ToolCall("call_2", "nope", "{}"), new ModelOutcome.ToolCall("call_3", "nope", "{}"));

    assertEquals(Next.NOTHING, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    Run failed = machine.toRun(null, null);
    assertEquals("failed", failed.status());
    assertEquals("invalid_tool_calls", Json.tree(failed.error()).get("code").asText());
    assertEquals(List.of("model_call.finished", "tool_call.finished", "tool_call.finished", "tool_call.finished",
        "run.failed"), eventTypes(machine));
  }

  @Test
  void a_tool_that_requires_approval_makes_the_run_wait_for_it() {
    AgentRunMachine machine = answeredWith(new ModelOutcome.ToolCall("call_1", "send_report", "{}"));

    assertEquals(Next.NOTHING, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    Run waiting = machine.toRun(null, null);
    assertEquals("awaiting_approval", waiting.status());
    assertEquals(NOW.plusSeconds(2 + APPROVAL_TIMEOUT_SECONDS), waiting.dueAt());
    JsonNode approval = Json.tree(waiting.approval());
    assertEquals("pending", approval.get("status").asText());
    assertEquals("send_report", approval.get("tool_call").get("name").asText());
    assertEquals("call_1", approval.get("tool_call").get("id").asText());
    assertEquals(List.of("model_call.finished", "run.awaiting_approval"), eventTypes(machine));
  }

  @Test
  void an_approved_tool_call_is_made_and_the_time_waited_does_not_count_against_the_deadline() {
    Run waiting = waitingForToolApproval();
    String deadlineBefore = Json.tree(waiting.steps()).get("deadline").asText();
    AgentRunMachine machine = new AgentRunMachine(waiting, NOW.plusSeconds(102));

    machine.approve("key_1", null);
    assertEquals(Next.TOOL, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    Run approved = machine.toRun(null, null);
    assertEquals("running", approved.status());
    assertEquals(NOW.plusSeconds(102), approved.dueAt());
    assertEquals("approved", machine.toolCall("call_1").get("status").asText());
    assertEquals(Instant.parse(deadlineBefore).plusSeconds(100),
        Instant.parse(Json.tree(approved.steps()).get("deadline").asText()));
    assertEquals(List.of("run.approved"), eventTypes(machine));
  }

  @Test
  void a_rejected_tool_call_is_answered_to_the_model_and_the_run_goes_on() {
    AgentRunMachine machine = new AgentRunMachine(waitingForToolApproval(), NOW.plusSeconds(102));

    machine.reject("key_1", "not today");
    assertEquals(Next.MODEL, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    assertEquals("running", machine.toRun(null, null).status());
    assertEquals("the call was rejected by the approver: not today",
        Json.tree(machine.messages().get(0).content()).get("error").asText());
    assertEquals(List.of("tool_call.finished", "run.approval_rejected"), eventTypes(machine));
    assertEquals(0, progress(machine).get("bad_in_a_row").asInt());
  }

  @Test
  void an_agent_that_requires_approval_waits_at_its_start() {
    AgentRunMachine machine = new AgentRunMachine(
        newRun("{\"model\": \"gpt-test\", \"requires_approval\": true}"), NOW);
    machine.begin(TextNode.valueOf("hello"));

    assertEquals(Next.NOTHING, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    Run waiting = machine.toRun(null, null);
    assertEquals("awaiting_approval", waiting.status());
    assertEquals(-1, waiting.currentStep());
    assertEquals(NOW.plusSeconds(APPROVAL_TIMEOUT_SECONDS), waiting.dueAt());

    AgentRunMachine approved = new AgentRunMachine(waiting, NOW.plusSeconds(5));
    approved.approve("key_1", null);
    assertEquals(Next.MODEL, approved.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));
    assertEquals(0, approved.toRun(null, null).currentStep());
  }

  @Test
  void a_run_past_its_deadline_fails_with_timeout() {
    Run run = afterFirstMoves(WEATHER_AGENT);
    AgentRunMachine machine = new AgentRunMachine(run, NOW.plusSeconds(600));

    assertEquals(Next.NOTHING, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    Run failed = machine.toRun(null, null);
    assertEquals("failed", failed.status());
    assertEquals("timeout", Json.tree(failed.error()).get("code").asText());
    assertEquals(List.of("run.failed"), eventTypes(machine));
  }

  @Test
  void a_model_asking_for_tools_past_max_turns_fails_the_run() {
    Run run = afterFirstMoves(WEATHER_AGENT);
    Instant at = NOW;
    for (int turn = 1; turn <= 3; turn++) {
      AgentRunMachine answered = new AgentRunMachine(modelCallStarted(run, at), at);
      answered.modelAnswered(answer(null, List.of(new ModelOutcome.ToolCall("call_" + turn, "get_weather",
          "{\"city\":\"Oslo\"}"))));
      assertEquals(Next.TOOL, answered.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));
      answered.startToolCalls(8, true);
      AgentRunMachine toolDone = new AgentRunMachine(answered.toRun(null, null), at);
      toolDone.toolAnswered("call_" + turn, true, 200, "{}", null);
      Next next = toolDone.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS);
      run = toolDone.toRun(null, null);
      assertEquals(turn < 3 ? Next.MODEL : Next.NOTHING, next, "after turn " + turn);
      at = at.plusSeconds(1);
    }

    assertEquals("failed", run.status());
    assertEquals("max_turns_exceeded", Json.tree(run.error()).get("code").asText());
  }

  @Test
  void a_failed_model_call_is_tried_again_at_its_retry_time_or_fails_the_run() {
    Run calling = modelCallStarted(afterFirstMoves(WEATHER_AGENT), NOW);
    ModelOutcome.Failure unavailable = new ModelOutcome.Failure(503, "the model answered HTTP 503", true, null);

    AgentRunMachine retried = new AgentRunMachine(calling, NOW.plusSeconds(1));
    retried.modelFailed(unavailable, NOW.plusSeconds(5));
    assertEquals(Next.NOTHING, retried.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));
    assertEquals(NOW.plusSeconds(5), retried.toRun(null, null).dueAt());
    assertEquals("running", retried.toRun(null, null).status());

    AgentRunMachine failed = new AgentRunMachine(calling, NOW.plusSeconds(1));
    failed.modelFailed(unavailable, null);
    Run run = failed.toRun(null, null);
    assertEquals("failed", run.status());
    JsonNode error = Json.tree(run.error());
    assertEquals("model_error", error.get("code").asText());
    assertEquals(503, error.get("http_status").asInt());
    assertEquals(List.of("model_call.finished", "run.failed"), eventTypes(failed));
  }

  @Test
  void a_model_call_cut_off_before_its_answer_is_made_again() {
    Run calling = modelCallStarted(afterFirstMoves(WEATHER_AGENT), NOW);
    AgentRunMachine machine = new AgentRunMachine(calling, NOW.plusSeconds(60));

    assertEquals(Next.MODEL, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));

    assertEquals(List.of("model_call.finished"), eventTypes(machine));
    assertEquals("failed", Json.tree(machine.events().get(0).data()).get("outcome").asText());
    machine.startModelCall("https://models.example/v1");
    assertEquals(2, machine.modelAttempt());
    assertEquals(1, progress(machine).get("usage").get("model_calls").asInt());
  }

  @Test
  void canceling_a_run_during_its_model_call_ends_it_canceled() {
    AgentRunMachine machine = new AgentRunMachine(modelCallStarted(afterFirstMoves(WEATHER_AGENT), NOW),
        NOW.plusSeconds(1));

    machine.cancel("key_1");

    assertEquals("canceled", machine.toRun(null, null).status());
    assertFalse(progress(machine).get("model_calling").asBoolean());
    assertEquals(List.of("run.canceled"), eventTypes(machine));
  }

  // ---- runs at each point of their life ----

  /** A new run of the agent defined by {@code agentJson}, as RunStarts makes it (definition and progress). */
  private static Run newRun(String agentJson) {
    AgentDefinition definition = AgentDefinition.parse("agent_1", (ObjectNode) Json.tree(agentJson));
    return Run.newAgentRun("run_1", "ws", "agent_1", "p", definition.requiresApproval(), "\"hello\"", NOW,
        AgentRunMachine.definitionJson(definition, definition.model()),
        AgentRunMachine.initialProgress(NOW.plusSeconds(definition.limits().timeoutSeconds())));
  }

  private static AgentRunMachine begun(String agentJson) {
    AgentRunMachine machine = new AgentRunMachine(newRun(agentJson), NOW);
    machine.begin(TextNode.valueOf("Will it rain in Oslo?"));
    return machine;
  }

  /** The run as its start stores it: its first messages added, its first model call due. */
  private static Run afterFirstMoves(String agentJson) {
    AgentRunMachine machine = begun(agentJson);
    assertEquals(Next.MODEL, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));
    return machine.toRun(null, null);
  }

  /** {@code run} as the engine saves it at {@code at} when its model call goes out. */
  private static Run modelCallStarted(Run run, Instant at) {
    AgentRunMachine machine = new AgentRunMachine(run, at);
    assertEquals(Next.MODEL, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));
    machine.startModelCall("https://models.example/v1");
    return machine.toRun("instance-a", at.plusSeconds(60));
  }

  /** A machine, 2 s after its start, that has just recorded the model's answer with these tool calls. */
  private static AgentRunMachine answeredWith(ModelOutcome.ToolCall... calls) {
    Run calling = modelCallStarted(afterFirstMoves(WEATHER_AGENT), NOW);
    AgentRunMachine machine = new AgentRunMachine(calling, NOW.plusSeconds(2));
    machine.modelAnswered(answer(null, List.of(calls)));
    return machine;
  }

  /** A machine of the run whose call of {@code toolName} has gone out. */
  private static AgentRunMachine toolCallStarted(String toolName, String arguments) {
    AgentRunMachine answered = answeredWith(new ModelOutcome.ToolCall("call_1", toolName, arguments));
    assertEquals(Next.TOOL, answered.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));
    answered.startToolCalls(8, true);
    return new AgentRunMachine(answered.toRun("instance-a", NOW.plusSeconds(30)), NOW.plusSeconds(3));
  }

  /** The run, saved 2 s after its start, waiting for the approval of a send_report call. */
  private static Run waitingForToolApproval() {
    AgentRunMachine machine = answeredWith(new ModelOutcome.ToolCall("call_1", "send_report", "{}"));
    assertEquals(Next.NOTHING, machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS, MAX_MODEL_ATTEMPTS));
    return machine.toRun(null, null);
  }

  private static ModelOutcome.Answer answer(String content, List<ModelOutcome.ToolCall> toolCalls) {
    return new ModelOutcome.Answer(content, toolCalls, toolCalls.isEmpty() ? "stop" : "tool_calls", 20, 10, 30);
  }

  private static JsonNode progress(AgentRunMachine machine) {
    return Json.tree(machine.toRun(null, null).steps());
  }

  private static List<String> eventTypes(RunMachine machine) {
    return machine.events().stream().map(Event::type).toList();
  }
}
