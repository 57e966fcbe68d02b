package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.ToolSchemas;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.workflow.Concurrency;
import dev.runway.workflow.Expression;
import dev.runway.workflow.ExpressionFailed;
import dev.runway.workflow.JsonTemplate;
import dev.runway.workflow.Step;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A workflow run's progress and the moves it may make (see the state diagram in docs/api.md): its steps,
 * one after another, on top of what every run shares ({@link RunMachine}). Each move changes the
 * state in memory and records its event; they are then saved together.
 */
public final class WorkflowRunMachine extends RunMachine {
  /**
   * The most characters a run's steps and output may take together: a run whose output would take
   * it past this fails with {@code output_too_large} (its step outputs are bounded on their own).
   */
  static final int MAX_RUN_CHARS = 512 * 1024;
  /** What makes the run's output when it succeeds; null: it has none. */
  private final JsonTemplate outputTemplate;
  /** How deep runs nest: a run at this depth starts no child run (its workflow step fails). */
  public static final int MAX_DEPTH = 5;
  /**
   * The most steps a run executes, counting those of its foreach and parallel iterations (see
   * {@link #executions}); a run past it fails with {@code too_many_steps}.
   */
  public static final int MAX_STEP_EXECUTIONS = 10_000;
  private final List<Step> definition;
  private final int depth;
  /**
   * The most steps this run may execute: {@link #MAX_STEP_EXECUTIONS}, or for an iteration the share
   * its parent gave it when it fanned out.
   */
  private final int budget;
  /**
   * Of an iteration (a child run of a foreach or parallel step): its {@code item}, {@code index},
   * the enclosing run's {@code run} and the outer {@code steps} its own steps name; else null.
   */
  private final JsonNode iteration;
  /** What the run's progress takes, in characters, as iterations that ended add their outputs to it; -1 until one does. */
  private int keptChars = -1;
  /** The current step's iterations as they stand, once read (see {@link Fan}); else null. */
  private Fan fan;
  /** Of an iteration: what its calls' Idempotency-Keys start with ({@code run_…:each[17].}); else null. */
  private final String keyPrefix;
  private final ArrayNode steps;
  private String output;
  /** The child runs the moves started, stored in the same commit as the moves (see {@link ChildRuns}). */
  private final List<ChildStart> childStarts = new ArrayList<>();
  /** The child runs to cancel with this run, in the same commit. */
  private final List<String> childrenToCancel = new ArrayList<>();
  /** The workflow's concurrency setting as the run started with it; null: none. */
  private final Concurrency concurrency;
  /** The key that setting gave the run at start (see {@link #start}); null until then, or without one. */
  private String concurrencyKey;
  /** The records the current crm step writes in the commit that saves this move (see {@link CrmSteps}); else null. */
  private CrmWrite crmWrite;
  /** The signal a wait step this move reached waits for: a kept one is taken in the commit that saves it (see {@link SignalWaits}); else null. */
  private String signalWait;
  /** The signals whose waits ended in these moves (taken, timed out): their URLs end in the same commit. */
  private final java.util.Set<String> endedWaits = new java.util.LinkedHashSet<>();
  /** Makes the run's signal URLs for its templates; set by {@link RunMachines}. */
  SignalUrls signalUrls = SignalUrls.NONE;

  /**
   * A run's stored definition, parsed: its steps, what makes its output (null: none), how deep it
   * nests, its workflow's concurrency setting (null: none).
   */
  record Definition(List<Step> steps, JsonTemplate output, int depth, int budget, JsonNode iteration,
      String keyPrefix, Concurrency concurrency) {}

  /**
   * A child run that the step {@code step} starts, with the id {@code runId}: of workflow
   * {@code workflow} with {@code input} (an object), of agent {@code agent} with {@code input}
   * (text or an object) asking for {@code model} (null: the agent's own), or an iteration of a
   * foreach or parallel step whose definition is {@code definition} (JSON) with {@code input} (the
   * inputs). Only one of workflow, agent and definition is set.
   */
  record ChildStart(int step, String runId, String workflow, String agent, String model, String definition,
      JsonNode input) {}

  /** What crm step {@code step} writes: {@code records}, evaluated, as its definition {@code crm} says. */
  record CrmWrite(int step, Step.Crm crm, JsonNode records) {}

  /** The machine of {@code run}, its definition parsed now (see {@link RunMachines}, which keeps them parsed). */
  public WorkflowRunMachine(Run run, Instant now) {
    this(run, now, parse(run.definition()));
  }

  /** The machine of {@code run}, whose definition parsed is {@code definition}. */
  WorkflowRunMachine(Run run, Instant now, Definition definition) {
    super(run, now);
    this.definition = definition.steps();
    this.outputTemplate = definition.output();
    this.depth = definition.depth();
    this.budget = definition.budget();
    this.iteration = definition.iteration();
    this.keyPrefix = definition.keyPrefix();
    this.concurrency = definition.concurrency();
    this.concurrencyKey = run.concurrencyKey();
    this.steps = (ArrayNode) Json.tree(run.steps());
    this.output = run.output();
  }

  @Override
  protected String progress() {
    return Json.string(steps);
  }

  @Override
  public Run toRun(String leaseOwner, Instant leaseUntil) {
    return super.toRun(leaseOwner, leaseUntil).withOutput(output).withConcurrencyKey(concurrencyKey);
  }

  /** A run's stored definition, parsed. */
  static Definition parse(String definition) {
    JsonNode tree = Json.tree(definition);
    JsonNode output = tree.get("output");
    return new Definition(List.copyOf(Step.parseAll(tree.path("steps"))),
        output == null || output.isNull() ? null : JsonTemplate.compile(output, "output"), tree.path("depth").asInt(1),
        tree.path("budget").asInt(MAX_STEP_EXECUTIONS), tree.get("iteration"), tree.path("key_prefix").asText(null),
        Concurrency.parse(tree.get("concurrency")));
  }

  /** The progress JSON of a new run: every step pending. */
  public static ArrayNode initialSteps(List<Step> definition) {
    ArrayNode steps = Json.MAPPER.createArrayNode();
    for (int i = 0; i < definition.size(); i++) {
      steps.addObject().put("index", i).put("id", definition.get(i).flow().id()).put("type", definition.get(i).type())
          .put("status", "pending")
          .putNull("started_at").putNull("finished_at").putNull("output").putArray("attempts");
    }
    return steps;
  }

  public int currentStep() {
    return currentStep;
  }

  public List<Step> definition() {
    return definition;
  }

  public ObjectNode step(int index) {
    return (ObjectNode) steps.get(index);
  }

  /**
   * Makes every move that needs no waiting (pass a gate, start or finish a delay, expire an
   * approval, finish the run) and stops where the run must wait. Returns true when it stands at an
   * http step whose call is due now; approval gates without a time-out of their own use
   * {@code approvalTimeoutSeconds}.
   */
  public boolean moveUntilWaiting(long approvalTimeoutSeconds) {
    while (true) {
      if (!mayAdvance(approvalTimeoutSeconds)) {
        return false;
      }
      if (currentStep >= definition.size()) {
        succeed();
        return false;
      }
      Step step = definition.get(currentStep);
      boolean starts = step(currentStep).path("status").asText().equals("pending");
      if (starts && step.flow().when() != null) {
        Boolean runs = holds(step.flow().when());
        if (runs == null) {
          continue; // the expression failed: so did the step, and the run unless the step goes on
        }
        if (!runs) {
          skipStep();
          continue;
        }
      }
      if (starts && executions(steps) >= budget) {
        refuseStep();
        return false;
      }
      if (step instanceof Step.Approval gate) {
        awaitApproval(gate.timeoutSeconds());
        return false;
      }
      if (step instanceof Step.Foreach || step instanceof Step.Parallel) {
        if (!step(currentStep).has("iterations") && !fanOut(step)) {
          continue; // it failed, or had nothing to do
        }
        dueAt = null; // each iteration's end moves the run on
        return false;
      }
      if (step instanceof Step.Workflow || step instanceof Step.Agent) {
        if (!step(currentStep).hasNonNull("child_run_id") && !startChild(step)) {
          continue; // the child could not start: the step failed, and the run unless the step goes on
        }
        dueAt = null; // the child's end moves the run on
        return false;
      }
      if (step instanceof Step.Crm crm) {
        if (!writeRecords(crm)) {
          continue; // its records could not be made: the step failed, and the run unless the step goes on
        }
        // Written in the commit that saves this move, which then moves on (CrmSteps). Due meanwhile,
        // so that a save that did not write them (none does) would leave the engine to come back.
        dueAt = now;
        return false;
      }
      if (step instanceof Step.Wait wait) {
        if (!step(currentStep).hasNonNull("expires_at")) {
          startWait(wait);
        }
        Instant expires = Instant.parse(step(currentStep).get("expires_at").asText());
        if (now.isBefore(expires)) {
          dueAt = expires; // only to time it out: a signal moves the run on in the commit that brings it
          return false;
        }
        endedWaits.add(wait.signal());
        failStep("signal_timeout", null, "no signal '" + wait.signal() + "' came before " + Json.time(expires)
            + " (timeout_s " + wait.timeoutSeconds() + ")");
        continue;
      }
      if (step instanceof Step.Delay delay) {
        if (!step(currentStep).hasNonNull("wake_at")) {
          startDelay(delay.seconds());
        }
        Instant wake = Instant.parse(step(currentStep).get("wake_at").asText());
        if (now.isBefore(wake)) {
          dueAt = wake;
          return false;
        }
        completeStep(null);
        continue;
      }
      if (closeCutOffAttempt((Step.Http) step)) {
        continue; // no attempts left: the step (and the run) failed
      }
      return dueAt == null || !now.isBefore(dueAt); // an http step: due now, or waiting for its retry time
    }
  }

  /**
   * How many steps the run whose progress is {@code steps} executed: once each step that started
   * (not pending, not skipped), however many attempts it made, plus for a foreach or parallel step
   * the steps its iterations executed ({@code executions}, added as each ends). A workflow or agent
   * step's child run is a run of its own, with its own budget: it counts once here.
   */
  static int executions(JsonNode steps) {
    int count = 0;
    for (JsonNode step : steps) {
      String status = step.path("status").asText();
      if (!status.equals("pending") && !status.equals("skipped")) {
        count += 1 + step.path("executions").asInt(0);
      }
    }
    return count;
  }

  /** The run has executed all the steps its budget allows: it fails with too_many_steps, the step not started. */
  private void refuseStep() {
    fail("too_many_steps", "step " + currentStep + " ('" + definition.get(currentStep).flow().id() + "') was not "
        + "started: " + (iteration == null ? "the run" : "this iteration") + " has made " + budget
        + " step executions, " + budgetText(), Json.MAPPER.createObjectNode().put("step", currentStep));
  }

  /** What this run's budget is, for the messages of too_many_steps. */
  private String budgetText() {
    return iteration == null ? "the most a run makes (counting those of its foreach and parallel iterations)"
        : "its share of its run's " + MAX_STEP_EXECUTIONS;
  }

  /**
   * An attempt is recorded when it starts, before its call goes out: one whose outcome was never
   * recorded was cut off (the server stopped, or could not save what came of it). It counts, so that
   * a call whose answer cannot be saved is not made for ever: past max_attempts the step fails.
   * Returns true when the step failed.
   */
  private boolean closeCutOffAttempt(Step.Http step) {
    ObjectNode open = openAttempt();
    if (open == null) {
      return false;
    }
    int attempt = open.get("attempt").asInt();
    finishAttempt(open, attempt, "interrupted", null,
        "cut off before its answer was recorded (the server stopped, or could not save the answer)");
    if (attempt < step.maxAttempts()) {
      return false;
    }
    failStep(null, "attempt " + attempt + " was cut off before its answer was recorded (after " + attempt
        + " attempts)");
    return true;
  }

  /** The current step's attempt that has started and not finished, if any. */
  private ObjectNode openAttempt() {
    if (currentStep < 0 || currentStep >= steps.size()) {
      return null;
    }
    JsonNode attempts = step(currentStep).path("attempts");
    ObjectNode last = attempts.isEmpty() ? null : (ObjectNode) attempts.get(attempts.size() - 1);
    return last != null && last.path("finished_at").isNull() ? last : null;
  }

  /** The number of the current step's attempt in progress (the one {@link #startAttempt} recorded). */
  public int currentAttempt() {
    ObjectNode open = openAttempt();
    return open == null ? 0 : open.get("attempt").asInt();
  }

  /**
   * What the step's expressions see: {@code inputs}, {@code steps.<id>.output} and {@code .status}
   * of every step (null and pending for those not reached), {@code run} (id, project, workflow,
   * created_at, and {@code signal_url.<name>} for each signal its wait steps wait for), and
   * {@code signal}: the body of the signal the latest wait step that got one took (else null).
   */
  public Map<String, JsonNode> expressionVariables() {
    ObjectNode byId = Json.MAPPER.createObjectNode();
    if (iteration != null) {
      byId.setAll((ObjectNode) iteration.path("steps")); // the outer steps it names; its own shadow them
    }
    JsonNode signal = NullNode.getInstance();
    for (int i = 0; i < definition.size(); i++) {
      ObjectNode progress = step(i);
      byId.putObject(definition.get(i).flow().id()).put("status", progress.path("status").asText())
          .set("output", progress.path("output").isMissingNode() ? null : progress.get("output"));
      if (definition.get(i) instanceof Step.Wait && progress.path("status").asText().equals("succeeded")) {
        signal = progress.path("output").isMissingNode() ? NullNode.getInstance() : progress.get("output");
      }
    }
    ObjectNode run;
    if (iteration != null) {
      run = (ObjectNode) iteration.get("run");
    } else {
      run = Json.MAPPER.createObjectNode().put("id", base.id()).put("project", base.project())
          .put("workflow", base.workflowId()).put("created_at", Json.time(base.createdAt()));
    }
    List<String> names = signalNames();
    if (!names.isEmpty() && signalUrls.enabled()) {
      run = run.deepCopy(); // an iteration's run is shared by the parsed definition: not to be changed
      ObjectNode urls = run.putObject("signal_url"); // this run's own: an iteration's go to the iteration
      names.forEach(name -> urls.put(name, signalUrls.url(base.id(), name)));
    }
    if (iteration != null) {
      return Map.of("inputs", Json.tree(base.inputs()), "steps", byId, "run", run,
          "item", iteration.path("item"), "index", iteration.path("index"), "signal", signal);
    }
    return Map.of("inputs", Json.tree(base.inputs()), "steps", byId, "run", run, "signal", signal);
  }

  /** The signals this run's own wait steps wait for (those in its iterations wait in the iterations). */
  List<String> signalNames() {
    List<String> names = new ArrayList<>();
    for (Step step : definition) {
      if (step instanceof Step.Wait wait && !names.contains(wait.signal())) {
        names.add(wait.signal());
      }
    }
    return names;
  }

  /**
   * The Idempotency-Key of step {@code index}'s calls: {@code <run_id>:<index>}, or in an iteration
   * its path from the run the caller started, {@code run_…:each[17].notify}.
   */
  public String idempotencyKey(int index) {
    return keyPrefix != null ? keyPrefix + definition.get(index).flow().id() : base.id() + ":" + index;
  }

  /**
   * A new run's first moves, as far as they go without waiting, its start event (by {@code actor})
   * first in {@code events}, then theirs; a run whose inputs are {@code broken} (null: they are not)
   * fails at once. A queued run makes them when its turn comes. Returns whether it then stands at a call due now.
   */
  boolean start(String actor, ToolSchemas.Violation broken, long approvalTimeoutSeconds, List<Event> events) {
    // First, so that its id sorts before those of the moves that follow; at now, as a queued run starts late.
    events.add(event(base, "run.started", actor, Map.of("status", RunStatus.RUNNING.wireName()), now));
    boolean callDue = false;
    if (broken != null) {
      refuseInputs(broken.field(), broken.message());
    } else if (takeConcurrencyKey()) { // else it failed: its key could not be evaluated
      callDue = moveUntilWaiting(approvalTimeoutSeconds);
    }
    events.addAll(events());
    return callDue;
  }

  /**
   * Evaluates the run's concurrency key (once: a queued run keeps the key it was given). A key that
   * cannot be evaluated fails the run at once with {@code expression_failed}, as a broken input of a
   * step does; false then.
   */
  private boolean takeConcurrencyKey() {
    if (concurrency == null || concurrencyKey != null) {
      return true;
    }
    try {
      concurrencyKey = concurrency.keyOf(expressionVariables());
      return true;
    } catch (ExpressionFailed e) {
      fail("expression_failed", "concurrency.key: " + e.getMessage(), null);
      return false;
    }
  }

  /** The workflow's concurrency setting as the run started with it; null: none. */
  Concurrency concurrency() {
    return concurrency;
  }

  /**
   * Every place of the run's concurrency key is taken and its setting says {@code skip}: the new
   * run ends at once, canceled with {@code concurrency_skipped}, none of its steps run.
   */
  void skipForConcurrency(String actor) {
    error = Json.MAPPER.createObjectNode().put("code", "concurrency_skipped").put("message", "the "
        + concurrency.limit() + " place(s) of concurrency key '" + concurrencyKey + "' were taken (on_limit: skip)");
    finish(RunStatus.CANCELED, actor, Map.of("error", "concurrency_skipped"));
  }

  /**
   * The run's inputs break its workflow's inputs_schema (a start the API would have refused, made by
   * a trigger): it fails at once with {@code inputs_invalid}, naming the field.
   */
  public void refuseInputs(String field, String message) {
    ObjectNode details = Json.MAPPER.createObjectNode().put("field", field);
    fail("inputs_invalid", message, details);
  }

  /**
   * The last step is done: the run succeeds with the output its workflow's {@code output} makes. An
   * output that fails to evaluate fails the run ({@code expression_failed}), as does one that would
   * take the run past {@link #MAX_RUN_CHARS} ({@code output_too_large}).
   */
  @Override
  protected void succeed() {
    if (outputTemplate != null) {
      String made;
      try {
        made = Json.string(outputTemplate.evaluate(expressionVariables()));
      } catch (ExpressionFailed e) {
        fail("expression_failed", "output: " + e.getMessage(), null);
        return;
      }
      if (made.length() + progress().length() > MAX_RUN_CHARS) {
        fail("output_too_large", "output: it takes " + made.length() + " characters, and with the steps' outputs "
            + "the run would take over " + MAX_RUN_CHARS, null);
        return;
      }
      output = made;
    }
    super.succeed();
  }

  /** Whether the current step's {@code if} holds; null when it could not be evaluated (the step then failed). */
  private Boolean holds(String when) {
    try {
      return Expression.compile(when, "if").test(expressionVariables());
    } catch (ExpressionFailed e) {
      failStep("expression_failed", null, "if: " + e.getMessage());
      return null;
    }
  }

  /**
   * Starts a child run for a workflow or agent step: makes its input, names it in the step and keeps it for
   * {@link ChildRuns} to store in this move's commit. False when it cannot (its inputs fail, or the
   * run is nested {@link #MAX_DEPTH} deep): the step failed.
   */
  private boolean startChild(Step step) {
    String workflow = step instanceof Step.Workflow call ? call.workflow() : null;
    String agent = step instanceof Step.Agent call ? call.agent() : null;
    if (depth >= MAX_DEPTH) {
      failStep("max_depth_exceeded", null, (workflow != null ? "workflow '" + workflow : "agent '" + agent)
          + "' was not started: runs nest at most " + MAX_DEPTH + " deep (a child run's child's …)");
      return false;
    }
    JsonNode input;
    try {
      input = workflow != null ? ((Step.Workflow) step).inputs(expressionVariables())
          : ((Step.Agent) step).input(expressionVariables());
    } catch (ExpressionFailed e) {
      failStep("expression_failed", null, (workflow != null ? "inputs: " : "input: ") + e.getMessage());
      return false;
    }
    String childId = Ids.newId("run", now.toEpochMilli());
    step(currentStep).put("status", "running").put("started_at", Json.time(now)).put("child_run_id", childId);
    String model = step instanceof Step.Agent call ? call.model() : null;
    childStarts.add(new ChildStart(currentStep, childId, workflow, agent, model, null, input));
    record("step.waiting", ENGINE, currentStep, null, Map.of("child_run_id", childId));
    return true;
  }

  /**
   * Makes a crm step's records and keeps them for {@link CrmSteps} to write in this move's commit;
   * the step is running until then. False when they cannot be made: the step failed.
   */
  private boolean writeRecords(Step.Crm crm) {
    JsonNode records;
    try {
      records = crm.records(expressionVariables());
    } catch (ExpressionFailed e) {
      failStep("expression_failed", null, "records: " + e.getMessage());
      return false;
    }
    step(currentStep).put("status", "running").put("started_at", Json.time(now));
    crmWrite = new CrmWrite(currentStep, crm, records);
    return true;
  }

  /** The records this move's crm step writes in its commit, or null. */
  CrmWrite crmWrite() {
    return crmWrite;
  }

  /**
   * The current crm step wrote its records (in this commit): it succeeds with the sync's answer. A
   * step that wrote nothing ({@code code}, e.g. crm_invalid, with {@code message}) fails instead.
   */
  void crmWritten(JsonNode answer, String code, String message) {
    if (answer != null) {
      completeStep(answer);
    } else {
      failStep(code, null, message);
    }
  }

  /** How many characters a step's output may take so that the run stays within {@link #MAX_RUN_CHARS}. */
  int outputRoom() {
    return MAX_RUN_CHARS - progress().length();
  }

  /**
   * Starts a foreach step's iterations (one per item) or a parallel step's (one per branch): the
   * first {@code concurrency} as child runs now, the rest as those end. False when there is nothing
   * to wait for: its items could not be made (the step failed) or there are none (it succeeded).
   */
  private boolean fanOut(Step step) {
    ObjectNode progress = step(currentStep);
    int count;
    if (step instanceof Step.Foreach each) {
      JsonNode items;
      try {
        items = Expression.compile(each.items(), "items").evaluate(expressionVariables());
      } catch (ExpressionFailed e) {
        failStep("expression_failed", null, "items: " + e.getMessage());
        return false;
      }
      if (!items.isArray()) {
        failStep("expression_failed", null, "items: expression '" + each.items() + "' gave " + Json.kindOf(items)
            + ", not an array");
        return false;
      }
      if (items.size() > Step.MAX_ITEMS) {
        failStep("too_many_items", null, "items: " + items.size() + " items, more than the " + Step.MAX_ITEMS
            + " a foreach runs");
        return false;
      }
      progress.set("items", items);
      count = items.size();
    } else {
      count = ((Step.Parallel) step).branches().size();
    }
    if (depth >= MAX_DEPTH) {
      failStep("max_depth_exceeded", null, "its iterations were not started: runs nest at most " + MAX_DEPTH + " deep");
      return false;
    }
    if (count == 0) {
      completeStep(Json.MAPPER.createArrayNode());
      return false;
    }
    int share = iterationBudget(step, count);
    if (share < 0) {
      return false;
    }
    progress.put("iteration_budget", share).put("executions", 0);
    ArrayNode iterations = progress.putArray("iterations");
    for (int i = 0; i < count; i++) {
      iterations.addObject().put("index", i).put("status", "pending").putNull("child_run_id").putNull("output");
    }
    progress.put("status", "running").put("started_at", Json.time(now));
    record("step.waiting", ENGINE, currentStep, null, Map.of("iterations", count));
    startIterations(step);
    return true;
  }

  /**
   * How many steps each of the current step's {@code count} iterations may execute: what the run's
   * budget leaves, less this step and one for each step after it (each may start once), shared out
   * evenly. So the run with its iterations, nested ones included, never passes its budget. -1 when an
   * iteration would get fewer than its own steps: the step failed with too_many_steps.
   */
  private int iterationBudget(Step step, int count) {
    int left = Math.max(0, budget - executions(steps) - 1 - (definition.size() - currentStep - 1));
    int needed = 0;
    if (step instanceof Step.Foreach each) {
      needed = each.steps().size();
    } else {
      for (List<Step> branch : ((Step.Parallel) step).branches()) {
        needed = Math.max(needed, branch.size());
      }
    }
    if (left / count >= needed) {
      return left / count;
    }
    String perIteration = needed + (needed == 1 ? " step" : " steps");
    String what = step instanceof Step.Foreach ? count + " items × " + perIteration
        : count + " branches × up to " + perIteration;
    failStep("too_many_steps", null, what + " would take " + (iteration == null ? "the run" : "this iteration")
        + " past " + budget + " step executions, " + budgetText() + ": " + left + " are left for its iterations");
    return -1;
  }

  /** Starts pending iterations of the current step while fewer than its concurrency run. */
  private void startIterations(Step step) {
    int concurrency = step instanceof Step.Foreach each ? each.concurrency() : Integer.MAX_VALUE;
    Fan fan = fan();
    Map<String, JsonNode> vars = null; // made once, for all the iterations this move starts
    while (fan.active.size() < concurrency && fan.nextPending < fan.iterations.size()) {
      ObjectNode it = (ObjectNode) fan.iterations.get(fan.nextPending++);
      int i = it.get("index").asInt();
      String childId = Ids.newId("run", now.toEpochMilli());
      it.put("status", "running").put("child_run_id", childId);
      fan.active.put(childId, it);
      vars = vars == null ? expressionVariables() : vars;
      childStarts.add(new ChildStart(currentStep, childId, null, null, null, iterationDefinition(step, i, vars),
          vars.get("inputs")));
    }
  }

  /**
   * The current foreach or parallel step's iterations as they stand: those started and not ended
   * (running or waiting) by child run, and the first not started. Iterations start in item order,
   * so those not started follow it. Read from the progress once per machine: a group commit tells
   * one machine of dozens of ends, and each would otherwise read all 1,000 entries.
   */
  private static final class Fan {
    final ArrayNode iterations;
    final Map<String, ObjectNode> active = new HashMap<>();
    int nextPending;
    int succeeded;

    Fan(ArrayNode iterations) {
      this.iterations = iterations;
      nextPending = iterations.size();
      for (JsonNode node : iterations) {
        String status = node.path("status").asText();
        if (status.equals("running") || status.equals("waiting")) {
          active.put(node.path("child_run_id").asText(), (ObjectNode) node);
        } else if (status.equals("pending")) {
          nextPending = Math.min(nextPending, node.path("index").asInt());
        } else if (status.equals("succeeded")) {
          succeeded++;
        }
      }
    }
  }

  /** The current step's {@link Fan}, read now if it was not yet (or was of another step). */
  private Fan fan() {
    JsonNode iterations = step(currentStep).path("iterations");
    if (fan == null || fan.iterations != iterations) {
      fan = new Fan((ArrayNode) iterations);
    }
    return fan;
  }

  /**
   * The definition of iteration {@code i} of the current step ({@code vars}: what this run's
   * expressions see now): its steps, their last one's output as
   * its output, one level deeper, and what its expressions see of this run (item, index, run, and
   * the outer steps its own steps name: only those, so that 1,000 iterations do not each copy
   * every earlier output).
   */
  private String iterationDefinition(Step step, int i, Map<String, JsonNode> vars) {
    List<Step> inner = step instanceof Step.Foreach each ? each.steps() : ((Step.Parallel) step).branches().get(i);
    ObjectNode definition = Json.MAPPER.createObjectNode().put("requires_approval", false);
    ArrayNode steps = Step.toJson(inner, definition.putArray("steps"));
    String innerText = Json.string(steps);
    if (!inner.isEmpty()) {
      definition.put("output", "{{ steps['" + inner.get(inner.size() - 1).flow().id() + "'].output }}");
    }
    definition.put("depth", depth + 1).put("budget",
        step(currentStep).path("iteration_budget").asInt(MAX_STEP_EXECUTIONS)); // absent: started before budgets
    String name = step.flow().id() + "[" + i + "].";
    definition.put("key_prefix", (keyPrefix != null ? keyPrefix : base.id() + ":") + name);
    ObjectNode it = definition.putObject("iteration");
    if (step instanceof Step.Foreach) {
      it.set("item", step(currentStep).get("items").get(i));
    }
    it.put("index", i).set("run", ((ObjectNode) vars.get("run")).deepCopy().without("signal_url"));
    ObjectNode outer = it.putObject("steps");
    vars.get("steps").fields().forEachRemaining(e -> {
      if (innerText.contains(e.getKey())) {
        outer.set(e.getKey(), e.getValue());
      }
    });
    return Json.string(definition);
  }

  /** The child runs this machine's moves started, not yet stored. */
  List<ChildStart> childStarts() {
    return childStarts;
  }

  /** The child runs to cancel with this run. */
  List<String> childrenToCancel() {
    return childrenToCancel;
  }

  int depth() {
    return depth;
  }

  /**
   * The current step's child run {@code childId} ended: the step succeeds with {@code output} or
   * fails ({@code child_failed}), and the run moves on. An iteration's {@code childExecutions} (the
   * steps it executed, see {@link #executions}) count as this run's. False when the run does not wait for it.
   */
  boolean childEnded(String childId, String childStatus, JsonNode output, JsonNode childError, int childExecutions) {
    ObjectNode it = iterationOf(childId);
    if (it != null) {
      addExecutions(childExecutions);
      iterationEnded(it, childId, childStatus, output, childError);
      return true;
    }
    if (!waitsFor(childId)) {
      return false;
    }
    if (childStatus.equals(RunStatus.SUCCEEDED.wireName())) {
      JsonNode kept = output == null ? NullNode.getInstance() : output;
      int chars = Json.string(kept).length();
      if (chars + progress().length() > MAX_RUN_CHARS) {
        failStep("output_too_large", null, "child run " + childId + " succeeded, but its output (" + chars
            + " characters) cannot be kept: with it, the run's steps would take over " + MAX_RUN_CHARS + " characters");
      } else {
        completeStep(kept);
      }
    } else {
      failStep("child_failed", null, "child run " + childId + endedHow(childStatus, childError));
    }
    return true;
  }

  /** How a child run that did not succeed ended, for the message of the step it fails: " ended failed: code: message". */
  private static String endedHow(String childStatus, JsonNode childError) {
    String why = childError != null && childError.hasNonNull("message")
        ? ": " + childError.path("code").asText() + ": " + childError.path("message").asText() : "";
    return " ended " + childStatus + why;
  }

  /** The current step's iteration whose child run is {@code childId}, if it runs (or waits); else null. */
  private ObjectNode iterationOf(String childId) {
    if (ended() || currentStep < 0 || currentStep >= steps.size() || isDone(step(currentStep))) {
      return null;
    }
    return step(currentStep).has("iterations") ? fan().active.get(childId) : null;
  }

  /**
   * An iteration's child run ended: its output is kept; a failed (rejected, canceled) one fails the
   * step and cancels the others; else the next pending iteration starts, and the last one to end
   * completes the step with the outputs in item order.
   */
  private void iterationEnded(ObjectNode it, String childId, String childStatus, JsonNode output, JsonNode childError) {
    Step step = definition.get(currentStep);
    ObjectNode progress = step(currentStep);
    Fan fan = fan();
    fan.active.remove(childId);
    if (!childStatus.equals(RunStatus.SUCCEEDED.wireName())) {
      it.put("status", childStatus.equals("canceled") ? "canceled" : "failed");
      cancelIterations();
      failStep("iteration_failed", null, "iteration " + it.get("index").asInt() + " (child run " + childId + ")"
          + endedHow(childStatus, childError));
      return;
    }
    JsonNode kept = output == null ? NullNode.getInstance() : output;
    it.put("status", "succeeded").set("output", kept);
    // Counted, not measured: a group commit tells a parent of dozens of ends, and measuring writes
    // its whole progress each time (a status word that grows by a few characters is not counted).
    keptChars = (keptChars < 0 ? base.steps().length() : keptChars) + Json.string(kept).length();
    if (keptChars > MAX_RUN_CHARS) {
      it.putNull("output");
      cancelIterations();
      failStep("output_too_large", null, "iteration " + it.get("index").asInt() + " succeeded, but with its output "
          + "the run's steps would take over " + MAX_RUN_CHARS + " characters");
      return;
    }
    startIterations(step);
    if (++fan.succeeded < fan.iterations.size()) {
      return; // some still to run
    }
    ArrayNode outputs = Json.MAPPER.createArrayNode();
    fan.iterations.forEach(each -> outputs.add(each.get("output")));
    progress.remove("items");
    // The step's output holds them now, in item order: kept once, so the run stays within its bound.
    progress.get("iterations").forEach(each -> ((ObjectNode) each).remove("output"));
    completeStep(outputs);
  }

  /** Adds {@code count} to the steps the current foreach or parallel step's iterations executed. */
  private void addExecutions(int count) {
    step(currentStep).put("executions", step(currentStep).path("executions").asInt() + count);
  }

  /**
   * Cancels the current step's running iterations (in this commit, see ChildRuns). Each counts as
   * having executed its whole share: it may have, and will not tell.
   */
  private void cancelIterations() {
    if (!step(currentStep).has("iterations")) {
      return;
    }
    Fan fan = fan();
    addExecutions(fan.active.size() * step(currentStep).path("iteration_budget").asInt());
    for (Map.Entry<String, ObjectNode> each : fan.active.entrySet()) {
      childrenToCancel.add(each.getKey());
      each.getValue().put("status", "canceled");
    }
    fan.active.clear();
  }

  /** The current step's child run {@code childId} could not be started ({@code code}, e.g. workflow_not_found). */
  boolean childNotStarted(String childId, String code, String message) {
    if (!waitsFor(childId)) {
      return false;
    }
    failStep(code, null, message);
    return true;
  }

  /**
   * The current step's child run {@code childId} waits for a person's approval (or no longer does):
   * the step shows {@code waiting} (or {@code running}). False when nothing changed.
   */
  boolean childAwaitsApproval(String childId, boolean awaits) {
    String shown = awaits ? "waiting" : "running";
    ObjectNode it = iterationOf(childId);
    if (it != null) {
      if (it.path("status").asText().equals(shown)) {
        return false;
      }
      it.put("status", shown);
      boolean anyWaits = false;
      for (ObjectNode each : fan().active.values()) {
        anyWaits |= each.path("status").asText().equals("waiting");
      }
      step(currentStep).put("status", anyWaits ? "waiting" : "running");
      return true;
    }
    if (!waitsFor(childId) || step(currentStep).path("status").asText().equals(shown)) {
      return false;
    }
    step(currentStep).put("status", shown);
    return true;
  }

  /** Whether the run stands at a step that waits for child run {@code childId}. */
  private boolean waitsFor(String childId) {
    return !ended() && currentStep >= 0 && currentStep < steps.size() && !isDone(step(currentStep))
        && childId.equals(step(currentStep).path("child_run_id").asText(null));
  }

  /** The current step's {@code if} is false: it is skipped (its output null), and the run goes on. */
  private void skipStep() {
    finishStep(currentStep, "skipped", null);
    record("step.skipped", ENGINE, currentStep, null, Map.of());
    currentStep++;
    dueAt = now;
  }

  // ---- moves made by callers (approve, reject, cancel) ----

  @Override
  protected void approved(String actor, String comment) {
    if (currentStep >= 0) {
      finishStep(currentStep, "succeeded", null);
    }
    currentStep++;
    while (currentStep < steps.size() && step(currentStep).path("reused").asBoolean()) {
      currentStep++; // a rerun's steps that keep what they did in the run it reruns
    }
  }

  @Override
  protected boolean rejected(String actor, String comment) {
    if (currentStep >= 0) {
      finishStep(currentStep, "failed", null);
    }
    return false;
  }

  @Override
  protected void canceled() {
    if (status == RunStatus.QUEUED) {
      return; // it never started: its steps stay pending
    }
    if (currentStep >= 0 && currentStep < steps.size() && !isDone(step(currentStep))) {
      if (step(currentStep).hasNonNull("child_run_id")) {
        childrenToCancel.add(step(currentStep).get("child_run_id").asText());
      }
      cancelIterations();
    }
    ObjectNode open = openAttempt();
    if (open != null) {
      finishAttempt(open, open.get("attempt").asInt(), "canceled", null, "the run was canceled during the call");
    }
    if (currentStep >= 0 && currentStep < steps.size() && !isDone(step(currentStep))) {
      finishStep(currentStep, "canceled", null);
    }
  }

  // ---- signals ----

  /** Whether the run stands at a wait step for signal {@code name} whose time has not run out. */
  public boolean waitsForSignal(String name) {
    if (ended() || status != RunStatus.RUNNING || currentStep < 0 || currentStep >= steps.size()
        || !(definition.get(currentStep) instanceof Step.Wait wait) || !wait.signal().equals(name)) {
      return false;
    }
    ObjectNode progress = step(currentStep);
    return progress.path("status").asText().equals("waiting") && progress.hasNonNull("expires_at")
        && now.isBefore(Instant.parse(progress.get("expires_at").asText()));
  }

  /**
   * The wait step the run stands at takes signal {@code signalId} ({@code body}, sent {@code via} api
   * or url, by {@code actor}: the caller's key or account, {@code signal_url}, or the engine for a kept
   * one): it succeeds with the body as its output, and the run moves on. A body that would take the
   * run past {@link #MAX_RUN_CHARS} fails the step with output_too_large instead.
   */
  public void signalReceived(String signalId, String name, JsonNode body, String via, String actor) {
    endedWaits.add(name);
    step(currentStep).put("signal_id", signalId);
    record("run.signal_received", actor, currentStep, null,
        data("signal", name, "step", definition.get(currentStep).flow().id(), "via", via, "signal_id", signalId));
    int chars = Json.string(body).length();
    if (chars + progress().length() > MAX_RUN_CHARS) {
      failStep("output_too_large", null, "signal '" + name + "' came, but its body (" + chars + " characters) cannot "
          + "be kept: with it, the run's steps would take over " + MAX_RUN_CHARS + " characters");
      return;
    }
    completeStep(body);
  }

  /** The signal a wait step reached by these moves waits for, to take a kept one in their commit; else null. */
  String signalWait() {
    return signalWait;
  }

  /** The signals whose waits ended in these moves. */
  java.util.Set<String> endedWaits() {
    return endedWaits;
  }

  /** Starts a wait step: it waits for its signal until its time-out. */
  private void startWait(Step.Wait wait) {
    Instant expires = now.plusSeconds(wait.timeoutSeconds());
    step(currentStep).put("status", "waiting").put("started_at", Json.time(now)).put("signal", wait.signal())
        .put("expires_at", Json.time(expires));
    signalWait = wait.signal();
    record("step.waiting", ENGINE, currentStep, null, Map.of("signal", wait.signal(),
        "expires_at", Json.time(expires)));
  }

  // ---- moves made by the engine ----

  /** Pauses at an approval (the workflow's gate when currentStep is -1, else an approval step). */
  private void awaitApproval(long timeoutSeconds) {
    ObjectNode pending = awaitApproval(timeoutSeconds, currentStep >= 0 ? currentStep : null);
    if (currentStep >= 0) {
      step(currentStep).put("status", "waiting").put("started_at", Json.time(now));
      pending.put("step", currentStep);
    }
  }

  @Override
  protected void approvalExpired() {
    if (currentStep >= 0) {
      finishStep(currentStep, "failed", null);
    }
  }

  /** Starts the timer of a delay step. */
  private void startDelay(long seconds) {
    Instant wake = now.plusSeconds(seconds);
    step(currentStep).put("status", "waiting").put("started_at", Json.time(now))
        .put("wake_at", Json.time(wake));
    dueAt = wake;
    record("step.waiting", ENGINE, currentStep, null, Map.of("wake_at", Json.time(wake)));
  }

  /** Marks an http step as being called and records its next attempt as started, before the call goes out. */
  public void startAttempt() {
    ObjectNode step = step(currentStep);
    if (step.path("started_at").isNull()) {
      step.put("started_at", Json.time(now));
    }
    step.put("status", "running");
    ArrayNode attempts = (ArrayNode) step.get("attempts");
    int attempt = attempts.size() + 1;
    attempts.addObject().put("attempt", attempt).put("started_at", Json.time(now)).putNull("finished_at")
        .putNull("outcome").putNull("http_status").putNull("message");
    record("step.attempt_started", ENGINE, currentStep, attempt, Map.of());
  }

  /** Records how the attempt in progress ended. */
  public void recordAttempt(String outcome, Integer httpStatus, String message) {
    ObjectNode open = openAttempt();
    if (open == null) {
      throw new IllegalStateException("run " + base.id() + " has no attempt in progress");
    }
    finishAttempt(open, open.get("attempt").asInt(), outcome, httpStatus, message);
  }

  private void finishAttempt(ObjectNode a, int attempt, String outcome, Integer httpStatus, String message) {
    a.put("finished_at", Json.time(now)).put("outcome", outcome);
    if (httpStatus == null) {
      a.putNull("http_status");
    } else {
      a.put("http_status", httpStatus);
    }
    a.put("message", message);
    record("step.attempt_finished", ENGINE, currentStep, attempt,
        data("outcome", outcome, "http_status", httpStatus, "message", message));
  }

  /** The current step is done; the next one is due now. */
  public void completeStep(JsonNode output) {
    finishStep(currentStep, "succeeded", output);
    record("step.succeeded", ENGINE, currentStep, null, Map.of());
    currentStep++;
    dueAt = now;
  }

  /** An attempt failed and will be retried at {@code retryAt}. */
  public void retryAt(Instant retryAt) {
    step(currentStep).put("status", "retrying");
    dueAt = retryAt;
  }

  /** The current step failed for good; so does the run, unless the step says on_failure: continue. */
  public void failStep(Integer httpStatus, String message) {
    failStep("step_failed", httpStatus, message);
  }

  /**
   * The current step failed for good, for the reason {@code code} (step_failed, expression_failed);
   * so does the run (with that code), unless the step says on_failure: continue: then the run goes on
   * to the next step, whose expressions see this one's status {@code failed}.
   */
  public void failStep(String code, Integer httpStatus, String message) {
    finishStep(currentStep, "failed", null);
    step(currentStep).set("error", Json.MAPPER.createObjectNode().put("code", code).put("message", message));
    record("step.failed", ENGINE, currentStep, null, Map.of("message", message));
    if (definition.get(currentStep).flow().continueOnFailure()) {
      currentStep++;
      dueAt = now;
      return;
    }
    ObjectNode details = Json.MAPPER.createObjectNode().put("step", currentStep);
    if (httpStatus == null) {
      details.putNull("http_status");
    } else {
      details.put("http_status", httpStatus);
    }
    fail(code, message, details);
  }

  // ---- helpers ----

  private void finishStep(int index, String stepStatus, JsonNode output) {
    ObjectNode step = step(index);
    step.put("status", stepStatus).put("finished_at", Json.time(now));
    if (step.path("started_at").isNull()) {
      step.put("started_at", Json.time(now));
    }
    if (output != null) {
      step.set("output", output);
    }
  }

  private static boolean isDone(ObjectNode step) {
    String s = step.path("status").asText();
    return s.equals("succeeded") || s.equals("failed") || s.equals("canceled") || s.equals("skipped");
  }
}
