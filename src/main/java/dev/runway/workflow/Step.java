package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.JsonFields;
import dev.runway.outbound.CallTargets;
import dev.runway.secret.SecretReferences;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * One step of a workflow: an HTTP call to the caller's tool, an approval, a durable delay, a wait for
 * a signal, a run of another workflow or of an agent (a child run the step waits for), or a write of
 * CRM records. Every
 * step has an id (later steps read its output by it), may run only {@code if} an expression holds,
 * and may let the run go on when it fails ({@code on_failure: continue}); see {@link Flow}.
 */
public sealed interface Step permits Step.Http, Step.Approval, Step.Delay, Step.Workflow, Step.Agent, Step.Crm,
    Step.Foreach, Step.Parallel, Step.Wait {
  /** The most steps in one list of steps. */
  int MAX_STEPS = 100;
  /** The most steps in a definition, counting those inside foreach and parallel steps. */
  int MAX_ALL_STEPS = 200;
  /** How deep foreach and parallel steps nest (a top-level step is at depth 1). */
  int MAX_NESTING = 5;
  /** The most items a foreach runs its steps for. */
  int MAX_ITEMS = 1000;
  /** The most records a crm step writes at once: as many as one sync takes. */
  int MAX_RECORDS = 1000;
  /** The fields every type of step has. */
  Set<String> FLOW_FIELDS = Set.of("id", "if", "on_failure");

  String type();

  Flow flow();

  /**
   * What every step has: its {@code id} (a slug, unique in the workflow; {@code step-<index>} when
   * not given), the expression it runs on ({@code when}, from {@code if}; null: always), and whether
   * the run goes on when it fails ({@code on_failure: continue}; the default {@code fail} fails the run).
   */
  record Flow(String id, String when, boolean continueOnFailure) {
    static Flow standard(int index) {
      return new Flow("step-" + index, null, false);
    }
  }

  /**
   * Calls the caller's tool; 2xx completes the step, 5xx/time-outs/connection errors are retried.
   * {@code url} (in its query string) and header values may refer to workspace secrets as
   * {@code {{secrets.NAME}}}, resolved only when the call is made. The url, header values,
   * {@code body} (any JSON; null: the standard body with the run, its inputs and earlier outputs)
   * and {@code query} values are templates: {@code {{ expression }}} parts are evaluated when the
   * call is made (see {@link Template}).
   */
  record Http(String url, String method, Map<String, String> headers, int timeoutMs, int maxAttempts,
      JsonNode body, Map<String, String> query, Flow flow) implements Step {
    /** A call with the standard body, no query and the first step's flow. */
    public Http(String url, String method, Map<String, String> headers, int timeoutMs, int maxAttempts) {
      this(url, method, headers, timeoutMs, maxAttempts, null, Map.of(), Flow.standard(0));
    }

    public String type() {
      return "http";
    }

    /** The names of the secrets the call refers to. */
    public Set<String> secretNames() {
      Set<String> names = new LinkedHashSet<>(SecretReferences.names(url));
      headers.values().forEach(v -> names.addAll(SecretReferences.names(v)));
      return names;
    }
  }

  /** Pauses the run at awaiting_approval; past the time-out the run fails with approval_expired. */
  record Approval(long timeoutSeconds, Flow flow) implements Step {
    public String type() {
      return "approval";
    }
  }

  /** Waits, durably: the timer survives restarts. */
  record Delay(long seconds, Flow flow) implements Step {
    public String type() {
      return "delay";
    }
  }

  /** The time-out of a wait step that names none: a day. */
  long WAIT_TIMEOUT_SECONDS = 86_400;

  /**
   * Waits, durably, for the signal {@code signal} (a slug) sent to the run (by the API or its signal
   * URL): the step succeeds with the signal's body as its output; past {@code timeoutSeconds} it
   * fails with signal_timeout.
   */
  record Wait(String signal, long timeoutSeconds, Flow flow) implements Step {
    public String type() {
      return "wait";
    }
  }

  /**
   * Starts a run of another workflow of the workspace (a child run, same project) with
   * {@code inputs} (an object, its strings templates; null: {@code {}}) and waits for it: its output
   * becomes the step's, and its failure fails the step. The child is a run of its own
   * ({@code parent_run_id}), started in the commit that reaches the step.
   */
  record Workflow(String workflow, JsonNode inputs, Flow flow) implements Step {
    public String type() {
      return "workflow";
    }

    /** The child's inputs, made from the run's data; throws ExpressionFailed when they cannot be made or are not an object. */
    public ObjectNode inputs(Map<String, JsonNode> vars) {
      if (inputs == null) {
        return Json.MAPPER.createObjectNode();
      }
      JsonNode made = JsonTemplate.compile(inputs, "inputs").evaluate(vars);
      if (!made.isObject()) {
        throw new ExpressionFailed(inputs.toString(), "inputs must give a JSON object, not " + Json.kindOf(made));
      }
      return (ObjectNode) made;
    }
  }

  /**
   * Starts a run of an agent of the workspace (a child run, same project) with {@code input} (text
   * or an object, its strings templates) and waits for it: the agent's output becomes the step's,
   * and the run's failure fails the step. {@code model} (null: the agent's own) is the model the run
   * asks for, as a start through the API may name one.
   */
  record Agent(String agent, JsonNode input, String model, Flow flow) implements Step {
    public String type() {
      return "agent";
    }

    /**
     * The agent's input, made from the run's data: text or an object (a number or boolean becomes its
     * text); throws ExpressionFailed otherwise.
     */
    public JsonNode input(Map<String, JsonNode> vars) {
      JsonNode made = JsonTemplate.compile(input, "input").evaluate(vars);
      if (made.isNumber() || made.isBoolean()) {
        return TextNode.valueOf(made.asText());
      }
      if (!made.isObject() && !made.isTextual()) {
        throw new ExpressionFailed(input.toString(), "input must give text or a JSON object, not " + Json.kindOf(made));
      }
      return made;
    }
  }

  /**
   * Upserts CRM records of {@code objectType} as {@code POST /v1/crm/{object_type}/records/sync}
   * does, in {@code mode} (merge or replace), in the commit that completes the step; its output is
   * the sync's answer ({@code summary} and {@code results}). {@code records} is an array of records
   * or one {@code {{ expression }}} that gives one; its strings are templates.
   */
  record Crm(String objectType, String mode, JsonNode records, Flow flow) implements Step {
    public String type() {
      return "crm";
    }

    /** The records, made from the run's data; throws ExpressionFailed when they cannot be made. */
    public JsonNode records(Map<String, JsonNode> vars) {
      return JsonTemplate.compile(records, "records").evaluate(vars);
    }
  }

  /**
   * Runs its {@code steps} once per item of the array {@code items} (a CEL expression) gives, up to
   * {@code concurrency} at a time, each time as a child run (an iteration) whose expressions also see
   * {@code item} and {@code index}; its output is the array of each iteration's last output, in
   * item order. A failed iteration fails the step.
   */
  record Foreach(String items, int concurrency, List<Step> steps, Flow flow) implements Step {
    public String type() {
      return "foreach";
    }
  }

  /** Runs its {@code branches} (lists of steps) at once, each as a child run, and joins: its output has one entry per branch. */
  record Parallel(List<List<Step>> branches, Flow flow) implements Step {
    public String type() {
      return "parallel";
    }
  }

  /** Parses and checks a steps array; a bad step is a 400 naming steps[i].field (steps[i].steps[j].field inside). */
  static List<Step> parseAll(JsonNode steps) {
    return new Parsing().list(steps, "steps", 1);
  }

  /** What parsing a definition has seen: how many steps, counting nested ones. */
  final class Parsing {
    private int count;

    List<Step> list(JsonNode steps, String at, int depth) {
      if (!steps.isArray()) {
        throw DomainException.invalid(at, at + " must be an array of steps");
      }
      if (steps.size() > MAX_STEPS) {
        throw DomainException.invalid(at, "a list of steps has at most " + MAX_STEPS + " steps");
      }
      List<Step> parsed = new ArrayList<>();
      Set<String> ids = new HashSet<>();
      for (int i = 0; i < steps.size(); i++) {
        if (++count > MAX_ALL_STEPS) {
          throw DomainException.invalid(at + "[" + i + "]", "a workflow has at most " + MAX_ALL_STEPS
              + " steps, counting those inside foreach and parallel steps");
        }
        Step step = parse(steps.get(i), at + "[" + i + "]", i, depth, this);
        if (!ids.add(step.flow().id())) {
          throw DomainException.invalid(at + "[" + i + "].id", at + "[" + i + "].id '" + step.flow().id()
              + "' is the id of an earlier step: ids are unique in a list of steps");
        }
        parsed.add(step);
      }
      return parsed;
    }
  }

  /**
   * Calls {@code visit} with every step of {@code steps} and of the steps inside them, and the step's
   * place ({@code steps[2].steps[0]}).
   */
  static void walk(List<Step> steps, String at, java.util.function.BiConsumer<Step, String> visit) {
    for (int i = 0; i < steps.size(); i++) {
      Step step = steps.get(i);
      String here = at + "[" + i + "]";
      visit.accept(step, here);
      if (step instanceof Foreach each) {
        walk(each.steps(), here + ".steps", visit);
      } else if (step instanceof Parallel parallel) {
        for (int b = 0; b < parallel.branches().size(); b++) {
          walk(parallel.branches().get(b), here + ".branches[" + b + "]", visit);
        }
      }
    }
  }

  private static Step parse(JsonNode node, String at, int index, int depth, Parsing parsing) {
    if (!node.isObject()) {
      throw DomainException.invalid(at, at + " must be a JSON object with a type");
    }
    ObjectNode step = (ObjectNode) node;
    JsonNode type = step.get("type");
    if (type == null || !type.isTextual()) {
      throw DomainException.invalid(at + ".type", at + ".type is required: http, approval, delay, wait, workflow, "
          + "agent, crm, foreach or parallel");
    }
    String prefix = at + ".";
    return switch (type.textValue()) {
      case "http" -> {
        JsonFields f = JsonFields.of(step, fields("url", "method", "headers", "timeout_ms", "max_attempts", "body",
            "query"), prefix);
        Flow flow = flow(f, step, prefix, index);
        String url = url(step.get("url"), prefix + "url");
        Map<String, String> headers = headers(f.optionalObject("headers"), prefix + "headers");
        JsonNode body = step.hasNonNull("body") ? step.get("body") : null; // null: the standard body
        if (body != null) {
          JsonTemplate.compile(body, prefix + "body");
        }
        yield new Http(url, method(f.optionalString("method", "POST", 10), prefix), headers,
            (int) f.optionalLong("timeout_ms", 10_000, 1, 300_000),
            (int) f.optionalLong("max_attempts", 3, 1, 10), body, query(f.optionalObject("query"), prefix + "query"),
            flow);
      }
      case "approval" -> {
        JsonFields f = JsonFields.of(step, fields("timeout_s"), prefix);
        yield new Approval(f.optionalLong("timeout_s", 86_400, 1, 31_536_000), flow(f, step, prefix, index));
      }
      case "delay" -> {
        JsonFields f = JsonFields.of(step, fields("seconds"), prefix);
        if (step.get("seconds") == null || step.get("seconds").isNull()) {
          throw DomainException.invalid(prefix + "seconds", prefix + "seconds is required");
        }
        yield new Delay(f.optionalLong("seconds", 0, 0, 31_536_000), flow(f, step, prefix, index));
      }
      case "wait" -> {
        JsonFields f = JsonFields.of(step, fields("signal", "timeout_s"), prefix);
        String signal = f.requiredSlug("signal");
        yield new Wait(signal, f.optionalLong("timeout_s", WAIT_TIMEOUT_SECONDS, 1, 31_536_000),
            flow(f, step, prefix, index));
      }
      case "workflow" -> {
        JsonFields f = JsonFields.of(step, fields("workflow", "inputs"), prefix);
        String workflow = f.requiredSlug("workflow");
        JsonNode inputs = step.hasNonNull("inputs") ? step.get("inputs") : null;
        if (inputs != null && !inputs.isObject() && !inputs.isTextual()) {
          throw DomainException.invalid(prefix + "inputs", prefix + "inputs must be a JSON object (or one "
              + "{{ expression }} that gives one), not " + Json.kindOf(inputs));
        }
        if (inputs != null) {
          JsonTemplate.compile(inputs, prefix + "inputs");
        }
        yield new Workflow(workflow, inputs, flow(f, step, prefix, index));
      }
      case "agent" -> {
        JsonFields f = JsonFields.of(step, fields("agent", "input", "model"), prefix);
        String agent = f.requiredSlug("agent");
        String model = f.optionalString("model", null, 200);
        if (model != null && model.isBlank()) {
          throw DomainException.invalid(prefix + "model", prefix + "model must not be blank: leave it out to use the "
              + "agent's");
        }
        JsonNode input = step.get("input");
        if (input == null || !(input.isObject() || input.isTextual())) {
          throw DomainException.invalid(prefix + "input", prefix + "input is required: text or a JSON object (its "
              + "strings may hold {{ expressions }})");
        }
        JsonTemplate.compile(input, prefix + "input");
        yield new Agent(agent, input, model, flow(f, step, prefix, index));
      }
      case "crm" -> {
        JsonFields f = JsonFields.of(step, fields("object_type", "mode", "records"), prefix);
        String objectType = f.requiredSlug("object_type");
        String mode = f.optionalString("mode", "merge", 20);
        if (!mode.equals("merge") && !mode.equals("replace")) {
          throw DomainException.invalid(prefix + "mode", prefix + "mode must be merge (keep properties not sent) or "
              + "replace, not '" + mode + "'");
        }
        yield new Crm(objectType, mode, records(required(step, "records", prefix), prefix + "records"),
            flow(f, step, prefix, index));
      }
      case "foreach", "parallel" -> {
        if (depth >= MAX_NESTING) {
          throw DomainException.invalid(at + ".type", at + ": foreach and parallel steps nest at most " + MAX_NESTING
              + " deep");
        }
        if (type.textValue().equals("foreach")) {
          JsonFields f = JsonFields.of(step, fields("items", "concurrency", "steps"), prefix);
          String items = f.optionalString("items", null, Expression.MAX_LENGTH);
          if (items == null) {
            throw DomainException.invalid(prefix + "items", prefix + "items is required: an expression that gives an "
                + "array, e.g. steps.lookup.output.orders");
          }
          Expression.compile(items, prefix + "items");
          int concurrency = (int) f.optionalLong("concurrency", 10, 1, 100);
          List<Step> inner = parsing.list(required(step, "steps", prefix), prefix + "steps", depth + 1);
          yield new Foreach(items, concurrency, inner, flow(f, step, prefix, index));
        }
        JsonFields f = JsonFields.of(step, fields("branches"), prefix);
        JsonNode branches = required(step, "branches", prefix);
        if (!branches.isArray() || branches.size() < 2 || branches.size() > 20) {
          throw DomainException.invalid(prefix + "branches", prefix + "branches must be an array of 2 to 20 "
              + "arrays of steps");
        }
        List<List<Step>> parsed = new ArrayList<>();
        for (int b = 0; b < branches.size(); b++) {
          parsed.add(parsing.list(branches.get(b), prefix + "branches[" + b + "]", depth + 1));
        }
        yield new Parallel(parsed, flow(f, step, prefix, index));
      }
      default -> throw DomainException.invalid(at + ".type",
          at + ".type must be http, approval, delay, wait, workflow, agent, crm, foreach or parallel, not '" + type.textValue()
              + "'");
    };
  }

  /**
   * A crm step's records, checked as a sync checks its batch where that can be told before the run:
   * an array of 1 to {@link #MAX_RECORDS} objects (or expressions), or one expression that gives
   * the array; each record's fields are checked when the step runs, as a sync checks them.
   */
  private static JsonNode records(JsonNode records, String at) {
    if (records.isArray()) {
      if (records.isEmpty() || records.size() > MAX_RECORDS) {
        throw DomainException.invalid(at, at + " must hold 1 to " + MAX_RECORDS + " records, not " + records.size());
      }
      for (int i = 0; i < records.size(); i++) {
        if (!records.get(i).isObject() && !records.get(i).isTextual()) {
          throw DomainException.invalid(at + "[" + i + "]", at + "[" + i + "] must be an object with an external_id "
              + "(or an {{ expression }} that gives one), not " + Json.kindOf(records.get(i)));
        }
      }
    } else if (!records.isTextual() || Template.compile(records.textValue(), at).constant()) {
      throw DomainException.invalid(at, at + " must be an array of records or one {{ expression }} that gives one, "
          + "not " + (records.isTextual() ? "text" : Json.kindOf(records)));
    }
    JsonTemplate.compile(records, at);
    return records;
  }

  private static JsonNode required(ObjectNode step, String field, String prefix) {
    JsonNode value = step.get(field);
    if (value == null || value.isNull()) {
      throw DomainException.invalid(prefix + field, prefix + field + " is required");
    }
    return value;
  }

  /** A type's own fields, its type and the fields every step has. */
  private static Set<String> fields(String... own) {
    Set<String> all = new HashSet<>(FLOW_FIELDS);
    all.add("type");
    all.addAll(List.of(own));
    return all;
  }

  private static Flow flow(JsonFields f, ObjectNode step, String prefix, int index) {
    String id = step.hasNonNull("id") ? f.requiredSlug("id") : "step-" + index;
    String when = f.optionalString("if", null, Expression.MAX_LENGTH);
    if (when != null) {
      Expression.compile(when, prefix + "if");
    }
    String onFailure = f.optionalString("on_failure", "fail", 20);
    if (!onFailure.equals("fail") && !onFailure.equals("continue")) {
      throw DomainException.invalid(prefix + "on_failure", prefix + "on_failure must be fail or continue, not '"
          + onFailure + "'");
    }
    return new Flow(id, when, onFailure.equals("continue"));
  }

  /**
   * The url, checked as a URL with each expression standing in for a value ({@link CallTargets#url}),
   * and as a template; the value it takes is checked again when the call is made.
   */
  private static String url(JsonNode node, String param) {
    if (node != null && node.isTextual()) {
      CallTargets.url(TextNode.valueOf(Template.compile(node.textValue(), param).withStandIns()), param);
      return node.textValue();
    }
    return CallTargets.url(node, param);
  }

  /** The headers, checked as {@link CallTargets#headers} does with each expression standing in for a value, and as templates. */
  private static Map<String, String> headers(ObjectNode headers, String param) {
    ObjectNode standIns = headers.objectNode();
    headers.fields().forEachRemaining(e -> standIns.set(e.getKey(),
        e.getValue().isTextual() ? TextNode.valueOf(Template.compile(e.getValue().textValue(),
            param + "." + e.getKey()).withStandIns()) : e.getValue()));
    CallTargets.headers(standIns, param);
    Map<String, String> out = new LinkedHashMap<>();
    headers.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().textValue()));
    return out;
  }

  /** Query parameters added to the url: names and templates of their values. */
  private static Map<String, String> query(ObjectNode query, String param) {
    Map<String, String> out = new LinkedHashMap<>();
    query.fields().forEachRemaining(e -> {
      String at = param + "." + e.getKey();
      if (!e.getValue().isTextual()) {
        throw DomainException.invalid(at, at + " must be a string (a template), not " + Json.kindOf(e.getValue()));
      }
      if (e.getKey().isEmpty() || SecretReferences.refersToSecrets(e.getValue().textValue())) {
        throw DomainException.invalid(at, at + ": a query parameter has a name, and its value no secret (put "
            + "secrets in the url's query)");
      }
      Template.compile(e.getValue().textValue(), at);
      out.put(e.getKey(), e.getValue().textValue());
    });
    return out;
  }

  private static String method(String method, String prefix) {
    String upper = method.toUpperCase(Locale.ROOT);
    if (!Set.of("GET", "POST", "PUT", "PATCH", "DELETE").contains(upper)) {
      throw DomainException.invalid(prefix + "method", prefix + "method must be GET, POST, PUT, PATCH or DELETE");
    }
    return upper;
  }

  /** The step as JSON, with every default filled in: what a run stores as its definition. */
  static ObjectNode toJson(Step step, int index, ObjectNode target) {
    target.put("type", step.type());
    if (step instanceof Http h) {
      target.put("url", h.url()).put("method", h.method());
      ObjectNode headers = target.putObject("headers");
      h.headers().forEach(headers::put);
      target.put("timeout_ms", h.timeoutMs()).put("max_attempts", h.maxAttempts());
      if (h.body() != null) {
        target.set("body", h.body());
      }
      if (!h.query().isEmpty()) {
        ObjectNode query = target.putObject("query");
        h.query().forEach(query::put);
      }
    } else if (step instanceof Approval a) {
      target.put("timeout_s", a.timeoutSeconds());
    } else if (step instanceof Delay d) {
      target.put("seconds", d.seconds());
    } else if (step instanceof Wait w) {
      target.put("signal", w.signal()).put("timeout_s", w.timeoutSeconds());
    } else if (step instanceof Workflow w) {
      target.put("workflow", w.workflow());
      if (w.inputs() != null) {
        target.set("inputs", w.inputs());
      }
    } else if (step instanceof Agent a) {
      target.put("agent", a.agent()).set("input", a.input());
      if (a.model() != null) {
        target.put("model", a.model());
      }
    } else if (step instanceof Crm c) {
      target.put("object_type", c.objectType()).put("mode", c.mode()).set("records", c.records());
    } else if (step instanceof Foreach each) {
      target.put("items", each.items()).put("concurrency", each.concurrency());
      toJson(each.steps(), target.putArray("steps"));
    } else if (step instanceof Parallel parallel) {
      ArrayNode branches = target.putArray("branches");
      parallel.branches().forEach(branch -> toJson(branch, branches.addArray()));
    }
    // The flow's fields only when given, so that a definition without them is stored as before.
    Flow flow = step.flow();
    if (!flow.id().equals(Flow.standard(index).id())) {
      target.put("id", flow.id());
    }
    if (flow.when() != null) {
      target.put("if", flow.when());
    }
    if (flow.continueOnFailure()) {
      target.put("on_failure", "continue");
    }
    return target;
  }

  static ArrayNode toJson(List<Step> steps, ArrayNode target) {
    for (int i = 0; i < steps.size(); i++) {
      toJson(steps.get(i), i, target.addObject());
    }
    return target;
  }
}
