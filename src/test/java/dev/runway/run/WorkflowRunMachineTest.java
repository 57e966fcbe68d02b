package dev.runway.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.workflow.Step;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A workflow run's moves, without a database or HTTP: what each move makes of the run and which events it records. */
class WorkflowRunMachineTest {
  private static final Instant NOW = Instant.parse("2026-03-01T12:00:00Z");
  private static final long APPROVAL_TIMEOUT_SECONDS = 3600;

  @Test
  void a_run_without_steps_succeeds_at_once() {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun("[]", false), NOW);

    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    Run run = machine.toRun(null, null);
    assertEquals("succeeded", run.status());
    assertEquals(NOW, run.finishedAt());
    assertNull(run.dueAt());
    assertEquals(List.of("run.succeeded"), eventTypes(machine));
  }

  @Test
  void a_run_that_requires_approval_waits_at_its_gate_until_the_approval_expires() {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun("[]", true), NOW);

    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    Run run = machine.toRun(null, null);
    assertEquals("awaiting_approval", run.status());
    assertEquals(-1, run.currentStep());
    assertEquals(NOW.plusSeconds(APPROVAL_TIMEOUT_SECONDS), run.dueAt());
    assertNull(run.finishedAt());
    JsonNode approval = Json.tree(run.approval());
    assertEquals("pending", approval.get("status").asText());
    assertEquals(NOW.plusSeconds(APPROVAL_TIMEOUT_SECONDS), Instant.parse(approval.get("expires_at").asText()));
    assertEquals(List.of("run.awaiting_approval"), eventTypes(machine));
  }

  @Test
  void an_approved_run_is_running_and_due_now_then_goes_on_to_its_steps() {
    Run waiting = waitingAtGate();
    Instant later = NOW.plusSeconds(60);
    WorkflowRunMachine machine = new WorkflowRunMachine(waiting, later);

    machine.approve("key_1", "looks good");

    Run approved = machine.toRun(null, null);
    assertEquals("running", approved.status());
    assertEquals(later, approved.dueAt());
    assertEquals(0, approved.currentStep());
    JsonNode approval = Json.tree(approved.approval());
    assertEquals("approved", approval.get("status").asText());
    assertEquals("key_1", approval.get("decided_by").asText());
    assertEquals("looks good", approval.get("comment").asText());
    assertEquals(List.of("run.approved"), eventTypes(machine));
    assertEquals("key_1", machine.events().get(0).actor());

    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));
    assertEquals("succeeded", machine.toRun(null, null).status());
    assertEquals(List.of("run.approved", "run.succeeded"), eventTypes(machine));
  }

  @Test
  void a_rejected_run_ends_rejected() {
    WorkflowRunMachine machine = new WorkflowRunMachine(waitingAtGate(), NOW.plusSeconds(60));

    machine.reject("key_1", null);

    Run rejected = machine.toRun(null, null);
    assertEquals("rejected", rejected.status());
    assertEquals(NOW.plusSeconds(60), rejected.finishedAt());
    assertNull(rejected.dueAt());
    assertEquals("rejected", Json.tree(rejected.approval()).get("status").asText());
    assertEquals(List.of("run.rejected"), eventTypes(machine));
  }

  @Test
  void a_run_whose_approval_expired_fails_with_approval_expired() {
    Instant expiry = NOW.plusSeconds(APPROVAL_TIMEOUT_SECONDS);
    WorkflowRunMachine machine = new WorkflowRunMachine(waitingAtGate(), expiry);

    assertTrue(machine.approvalTimedOut());
    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    Run failed = machine.toRun(null, null);
    assertEquals("failed", failed.status());
    assertEquals(expiry, failed.finishedAt());
    assertNull(failed.dueAt());
    assertEquals("approval_expired", Json.tree(failed.error()).get("code").asText());
    assertEquals("expired", Json.tree(failed.approval()).get("status").asText());
    assertEquals(List.of("run.failed"), eventTypes(machine));
    assertEquals("approval_expired", Json.tree(machine.events().get(0).data()).get("error").asText());
  }

  @Test
  void a_run_at_its_gate_before_the_expiry_stays_due_at_the_expiry() {
    WorkflowRunMachine machine = new WorkflowRunMachine(waitingAtGate(), NOW.plusSeconds(APPROVAL_TIMEOUT_SECONDS - 1));

    assertFalse(machine.approvalTimedOut());
    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    Run run = machine.toRun(null, null);
    assertEquals("awaiting_approval", run.status());
    assertEquals(NOW.plusSeconds(APPROVAL_TIMEOUT_SECONDS), run.dueAt());
    assertEquals(List.of(), eventTypes(machine));
  }

  @Test
  void an_approval_step_uses_its_own_time_out_and_approving_it_moves_to_the_next_step() {
    WorkflowRunMachine machine = new WorkflowRunMachine(
        newRun("[{\"type\":\"approval\",\"timeout_s\":120},{\"type\":\"delay\",\"seconds\":5}]", false), NOW);

    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    Run waiting = machine.toRun(null, null);
    assertEquals("awaiting_approval", waiting.status());
    assertEquals(0, waiting.currentStep());
    assertEquals(NOW.plusSeconds(120), waiting.dueAt());
    assertEquals(0, Json.tree(waiting.approval()).get("step").asInt());
    assertEquals("waiting", machine.step(0).get("status").asText());
    assertEquals(0, machine.events().get(0).stepIndex());

    WorkflowRunMachine later = new WorkflowRunMachine(waiting, NOW.plusSeconds(10));
    later.approve("key_1", null);
    assertEquals("succeeded", later.step(0).get("status").asText());
    assertEquals(1, later.currentStep());
    assertFalse(later.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));
    assertEquals(NOW.plusSeconds(15), later.toRun(null, null).dueAt());
    assertEquals(List.of("run.approved", "step.waiting"), eventTypes(later));
  }

  @Test
  void a_delay_step_makes_the_run_due_when_the_delay_ends() {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun("[{\"type\":\"delay\",\"seconds\":30}]", false), NOW);

    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    Run waiting = machine.toRun(null, null);
    assertEquals("running", waiting.status());
    assertEquals(0, waiting.currentStep());
    assertEquals(NOW.plusSeconds(30), waiting.dueAt());
    assertEquals("waiting", machine.step(0).get("status").asText());
    assertEquals(List.of("step.waiting"), eventTypes(machine));
  }

  @Test
  void a_machine_before_the_delay_ends_keeps_waiting_without_events() {
    Run waiting = afterFirstMoves("[{\"type\":\"delay\",\"seconds\":30}]");
    WorkflowRunMachine machine = new WorkflowRunMachine(waiting, NOW.plusSeconds(29));

    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    assertEquals(NOW.plusSeconds(30), machine.toRun(null, null).dueAt());
    assertEquals("running", machine.toRun(null, null).status());
    assertEquals(List.of(), eventTypes(machine));
  }

  @Test
  void a_machine_at_the_end_of_the_delay_moves_past_it() {
    Run waiting = afterFirstMoves("[{\"type\":\"delay\",\"seconds\":30}]");
    Instant wake = NOW.plusSeconds(30);
    WorkflowRunMachine machine = new WorkflowRunMachine(waiting, wake);

    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    Run done = machine.toRun(null, null);
    assertEquals("succeeded", done.status());
    assertEquals(1, done.currentStep());
    assertEquals(wake, done.finishedAt());
    assertEquals("succeeded", machine.step(0).get("status").asText());
    assertEquals(List.of("step.succeeded", "run.succeeded"), eventTypes(machine));
  }

  @Test
  void an_http_step_makes_its_call_due_now() {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun(HTTP_STEP, false), NOW);

    assertTrue(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    Run run = machine.toRun(null, null);
    assertEquals("running", run.status());
    assertEquals(0, run.currentStep());
    assertEquals(NOW, run.dueAt());
    assertEquals(List.of(), eventTypes(machine));
  }

  @Test
  void an_http_step_whose_call_succeeded_completes_and_the_run_succeeds() {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun(HTTP_STEP, false), NOW);
    assertTrue(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    machine.startAttempt();
    assertEquals(1, machine.currentAttempt());
    machine.recordAttempt("succeeded", 200, null);
    machine.completeStep(Json.tree("{\"ok\":true}"));
    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    assertEquals("succeeded", machine.toRun(null, null).status());
    assertTrue(machine.step(0).get("output").get("ok").asBoolean());
    assertEquals(List.of("step.attempt_started", "step.attempt_finished", "step.succeeded", "run.succeeded"),
        eventTypes(machine));
  }

  @Test
  void an_http_step_waiting_for_its_retry_is_not_due_before_the_retry_time() {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun(HTTP_STEP, false), NOW);
    assertTrue(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));
    machine.startAttempt();
    machine.recordAttempt("failed", 503, "unavailable");
    machine.retryAt(NOW.plusSeconds(2));
    Run retrying = machine.toRun(null, null);

    assertFalse(new WorkflowRunMachine(retrying, NOW.plusSeconds(1)).moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));
    assertTrue(new WorkflowRunMachine(retrying, NOW.plusSeconds(2)).moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));
  }

  @Test
  void an_attempt_cut_off_on_the_last_allowed_attempt_fails_the_step_and_the_run() {
    WorkflowRunMachine machine = new WorkflowRunMachine(
        newRun("[{\"type\":\"http\",\"url\":\"https://tools.example/hook\",\"max_attempts\":1}]", false), NOW);
    assertTrue(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));
    machine.startAttempt();
    Run cutOff = machine.toRun(null, null);

    WorkflowRunMachine after = new WorkflowRunMachine(cutOff, NOW.plusSeconds(5));
    assertFalse(after.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    Run failed = after.toRun(null, null);
    assertEquals("failed", failed.status());
    JsonNode error = Json.tree(failed.error());
    assertEquals("step_failed", error.get("code").asText());
    assertEquals(0, error.get("step").asInt());
    assertEquals("interrupted", after.step(0).get("attempts").get(0).get("outcome").asText());
    assertEquals(List.of("step.attempt_finished", "step.failed", "run.failed"), eventTypes(after));
  }

  @Test
  void canceling_a_running_run_ends_it_canceled() {
    Run waiting = afterFirstMoves("[{\"type\":\"delay\",\"seconds\":30}]");
    WorkflowRunMachine machine = new WorkflowRunMachine(waiting, NOW.plusSeconds(10));

    machine.cancel("key_1");

    Run canceled = machine.toRun(null, null);
    assertEquals("canceled", canceled.status());
    assertEquals(NOW.plusSeconds(10), canceled.finishedAt());
    assertNull(canceled.dueAt());
    assertEquals("canceled", machine.step(0).get("status").asText());
    assertEquals(List.of("run.canceled"), eventTypes(machine));
    assertEquals("key_1", machine.events().get(0).actor());
  }

  @Test
  void canceling_a_run_during_its_call_closes_the_attempt() {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun(HTTP_STEP, false), NOW);
    assertTrue(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));
    machine.startAttempt();

    machine.cancel("key_1");

    assertEquals("canceled", machine.toRun(null, null).status());
    assertEquals("canceled", machine.step(0).get("attempts").get(0).get("outcome").asText());
    assertEquals(List.of("step.attempt_started", "step.attempt_finished", "run.canceled"), eventTypes(machine));
  }

  @Test
  void canceling_a_run_at_its_gate_cancels_the_pending_approval() {
    WorkflowRunMachine machine = new WorkflowRunMachine(waitingAtGate(), NOW.plusSeconds(10));

    machine.cancel("key_1");

    Run canceled = machine.toRun(null, null);
    assertEquals("canceled", canceled.status());
    assertEquals("canceled", Json.tree(canceled.approval()).get("status").asText());
  }

  @Test
  void canceling_an_ended_run_is_a_conflict_naming_its_status() {
    Run succeeded = afterFirstMoves("[]");
    WorkflowRunMachine machine = new WorkflowRunMachine(succeeded, NOW.plusSeconds(1));

    DomainException refused = assertThrows(DomainException.class, () -> machine.cancel("key_1"));

    assertEquals(DomainException.Kind.CONFLICT, refused.kind());
    assertEquals("run_state_conflict", refused.code());
    assertEquals(Map.of("current_status", "succeeded"), refused.extensions());
    assertEquals(List.of(), eventTypes(machine));
  }

  @Test
  void approving_a_run_that_is_not_awaiting_approval_is_a_conflict() {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun(HTTP_STEP, false), NOW);

    DomainException refused = assertThrows(DomainException.class, () -> machine.approve("key_1", null));

    assertEquals(DomainException.Kind.CONFLICT, refused.kind());
    assertEquals("run_state_conflict", refused.code());
    assertEquals(Map.of("current_status", "running"), refused.extensions());
  }

  @Test
  void each_save_is_the_next_version_of_the_run() {
    Run run = newRun("[]", false);
    WorkflowRunMachine machine = new WorkflowRunMachine(run, NOW);
    machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS);

    Run next = machine.toRun("instance-a", NOW.plusSeconds(30));

    assertEquals(run.version() + 1, next.version());
    assertEquals("instance-a", next.leaseOwner());
    assertEquals(NOW.plusSeconds(30), next.leaseUntil());
    assertEquals(run.id(), machine.events().get(0).runId());
    assertEquals("wf", machine.events().get(0).workflowId());
  }

  @Test
  void executions_count_each_started_step_once_and_what_its_iterations_executed() {
    JsonNode progress = Json.tree("""
        [{"status":"succeeded","attempts":[{"attempt":1},{"attempt":2},{"attempt":3}]},{"status":"skipped"},
         {"status":"failed"},{"status":"retrying"},{"status":"waiting"},{"status":"canceled"},
         {"status":"running","executions":40},{"status":"succeeded","executions":7},{"status":"pending"}]""");

    assertEquals(5 + 41 + 8, WorkflowRunMachine.executions(progress));
  }

  @Test
  void a_run_at_its_budget_fails_with_too_many_steps_before_the_next_step_starts() {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun("""
        [{"type":"delay","seconds":0},{"type":"delay","seconds":0,"if":"false"},{"type":"delay","seconds":0},
         {"id":"last","type":"delay","seconds":0}]""", false, 2), NOW);

    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    Run run = machine.toRun(null, null);
    assertEquals("failed", run.status());
    JsonNode error = Json.tree(run.error());
    assertEquals("too_many_steps", error.get("code").asText());
    assertEquals(3, error.get("step").asInt());
    assertTrue(error.get("message").asText().contains("step 3 ('last') was not started"), error::toString);
    assertTrue(error.get("message").asText().contains("made 2 step executions"), error::toString);
    assertEquals(List.of("succeeded", "skipped", "succeeded", "pending"),
        List.of(0, 1, 2, 3).stream().map(i -> machine.step(i).get("status").asText()).toList());
  }

  @Test
  void a_foreach_gives_each_iteration_an_even_share_of_what_its_run_has_left() {
    // 30, less the foreach and the step after it: 28 for 3 items, 9 each.
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun(FOREACH_THEN_DELAY, false, 30), NOW);

    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    assertEquals(9, machine.step(0).get("iteration_budget").asInt());
    assertEquals(3, machine.childStarts().size());
    for (WorkflowRunMachine.ChildStart start : machine.childStarts()) {
      assertEquals(9, Json.tree(start.definition()).get("budget").asInt());
      assertEquals(9, WorkflowRunMachine.parse(start.definition()).budget());
    }
    machine.childEnded(machine.childStarts().get(0).runId(), "succeeded", null, null, 2);
    machine.childEnded(machine.childStarts().get(1).runId(), "succeeded", null, null, 5);
    assertEquals(7, machine.step(0).get("executions").asInt());
    assertEquals(8, WorkflowRunMachine.executions(Json.tree(machine.toRun(null, null).steps())));
  }

  @Test
  void a_failed_iteration_counts_what_it_executed_and_each_canceled_one_its_whole_share() {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun(FOREACH_THEN_DELAY, false, 30), NOW);
    machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS);

    machine.childEnded(machine.childStarts().get(0).runId(), "failed", null, null, 1);

    assertEquals(1 + 2 * 9, machine.step(0).get("executions").asInt());
    assertEquals("iteration_failed", Json.tree(machine.toRun(null, null).error()).get("code").asText());
  }

  @Test
  void a_foreach_whose_iterations_would_pass_the_budget_fails_before_any_starts() {
    // 7, less the foreach and the step after it: 5 for 3 items of 2 steps, fewer than 2 each.
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun(FOREACH_THEN_DELAY, false, 7), NOW);

    assertFalse(machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS));

    Run run = machine.toRun(null, null);
    assertEquals("failed", run.status());
    JsonNode error = Json.tree(run.error());
    assertEquals("too_many_steps", error.get("code").asText());
    assertEquals("3 items × 2 steps would take this iteration past 7 step executions, its share of its run's 10000: "
        + "5 are left for its iterations", error.get("message").asText());
    assertEquals(List.of(), machine.childStarts());
    assertFalse(machine.step(0).has("iterations"), machine.step(0)::toString);
    assertEquals("failed", machine.step(0).get("status").asText());
  }

  private static final String FOREACH_THEN_DELAY = """
      [{"id":"each","type":"foreach","items":"[1, 2, 3]",
        "steps":[{"type":"delay","seconds":0},{"type":"delay","seconds":0}]},
       {"type":"delay","seconds":0}]""";

  private static final String HTTP_STEP = "[{\"type\":\"http\",\"url\":\"https://tools.example/hook\"}]";

  /**
   * A new run of a workflow with these steps, its definition and progress made as RunStarts makes
   * them for a workflow version.
   */
  private static Run newRun(String stepsJson, boolean requiresApproval) {
    return newRun(stepsJson, requiresApproval, null);
  }

  /** As above, or (budget not null) an iteration of run_0 whose share is {@code budget} step executions. */
  private static Run newRun(String stepsJson, boolean requiresApproval, Integer budget) {
    List<Step> steps = Step.parseAll(Json.tree(stepsJson));
    ObjectNode definition = Json.MAPPER.createObjectNode().put("requires_approval", requiresApproval);
    if (budget != null) {
      ObjectNode iteration = definition.put("depth", 2).put("budget", budget).putObject("iteration").put("index", 0);
      iteration.putObject("run").put("id", "run_0");
      iteration.putObject("steps");
    }
    Step.toJson(steps, definition.putArray("steps"));
    return Run.newWorkflowRun("run_1", "ws", "wf", "p", requiresApproval, "{}", NOW, Json.string(definition),
        Json.string(WorkflowRunMachine.initialSteps(steps)));
  }

  /** The run as its start stores it: moved at NOW as far as it goes without waiting. */
  private static Run afterFirstMoves(String stepsJson) {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun(stepsJson, false), NOW);
    machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS);
    return machine.toRun(null, null);
  }

  /** A run without steps that requires approval, stored waiting at its start's gate. */
  private static Run waitingAtGate() {
    WorkflowRunMachine machine = new WorkflowRunMachine(newRun("[]", true), NOW);
    machine.moveUntilWaiting(APPROVAL_TIMEOUT_SECONDS);
    return machine.toRun(null, null);
  }

  private static List<String> eventTypes(RunMachine machine) {
    return machine.events().stream().map(Event::type).toList();
  }
}
