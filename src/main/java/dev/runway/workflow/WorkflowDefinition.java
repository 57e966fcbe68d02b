package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.ToolSchemas;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.JsonFields;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a caller (or a file under config/workflows) gives for a workflow, checked field by field.
 * {@code steps} keeps the caller's JSON as given; {@code parsedSteps} is what the engine runs;
 * {@code triggers} say which CRM record changes and schedules start a run; {@code inputsSchema} (JSON Schema,
 * or null) is what a start's inputs must meet; {@code output} (JSON with expressions, or null)
 * makes a finished run's output; {@code concurrency} (or null) how many of its runs with one key may be
 * active at once.
 */
public record WorkflowDefinition(String name, String description, boolean requiresApproval, JsonNode steps,
    List<Step> parsedSteps, Trigger.Triggers triggers, JsonNode inputsSchema, JsonNode output,
    Concurrency concurrency) {
  private static final Set<String> FIELDS =
      Set.of("name", "description", "requires_approval", "steps", "triggers", "inputs_schema", "output", "concurrency");

  /** Reads a definition; a missing name defaults to the workflow id. Refuses bad fields with DomainException. */
  public static WorkflowDefinition parse(String workflowId, ObjectNode body) {
    JsonFields fields = JsonFields.of(body, FIELDS);
    JsonNode steps = fields.optionalArray("steps");
    Trigger.Triggers triggers = Trigger.parseAll(fields.optionalArray("triggers"));
    JsonNode inputsSchema = inputsSchema(body.get("inputs_schema"));
    if (inputsSchema != null) {
      triggers.schedules().forEach(s -> checkInputs(inputsSchema, s));
    }
    return new WorkflowDefinition(
        fields.optionalString("name", workflowId, 200),
        fields.optionalString("description", "", 2000),
        fields.optionalBoolean("requires_approval", false),
        steps,
        Step.parseAll(steps),
        triggers,
        inputsSchema,
        output(body.get("output")),
        Concurrency.parse(body.get("concurrency")));
  }

  /** A schedule's inputs must meet the inputs_schema, as a start's must: else a 400 naming the field. */
  private static void checkInputs(JsonNode inputsSchema, Schedule schedule) {
    ToolSchemas.Violation violation = ToolSchemas.firstViolationWithin(inputsSchema, schedule.inputs(),
        "triggers[" + schedule.position() + "].inputs", "the inputs_schema");
    if (violation != null) {
      throw DomainException.invalid(violation.field(), violation.message());
    }
  }

  private static JsonNode inputsSchema(JsonNode schema) {
    if (schema == null || schema.isNull()) {
      return null;
    }
    ToolSchemas.check(schema, "inputs_schema");
    return schema;
  }

  /** The run's output as written: any JSON, its strings templates (null and absent: no output). */
  private static JsonNode output(JsonNode output) {
    if (output == null || output.isNull()) {
      return null;
    }
    JsonTemplate.compile(output, "output");
    return output;
  }


  /**
   * Each field that may refer to secrets (steps[i].url, steps[i].headers.NAME, and those of the http
   * steps inside foreach and parallel steps) and its text, in order.
   */
  public Map<String, String> secretFields() {
    Map<String, String> fields = new LinkedHashMap<>();
    Step.walk(parsedSteps, "steps", (step, at) -> {
      if (step instanceof Step.Http http) {
        fields.put(at + ".url", http.url());
        http.headers().forEach((name, value) -> fields.put(at + ".headers." + name, value));
      }
    });
    return fields;
  }

  /** The concurrency setting as stored (every field given), null when there is none. */
  String concurrencyJson() {
    return concurrency == null ? null : Json.string(concurrency.toJson());
  }

  String stepsJson() {
    return Json.string(steps);
  }

  /** The JSON text of a document of the definition, null when it has none. */
  static String jsonOrNull(JsonNode document) {
    return document == null ? null : Json.string(document);
  }
}
