package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.JsonFields;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What starts a workflow besides a caller: {@code {"crm": "contacts", "on": ["created", "updated"],
 * "project": "crm"}} starts one run for each such change of a contacts record, in the change's commit.
 * {@code project} (default {@value #DEFAULT_PROJECT}) is the project of those runs. The other kind
 * of trigger are a {@link Schedule} and a {@link Hook} (an inbound webhook).
 */
public record Trigger(String objectType, boolean onCreated, boolean onUpdated, boolean onDeleted, String project) {
  public static final String DEFAULT_PROJECT = "crm";
  public static final int MAX_TRIGGERS = 20;
  /** The most characters the triggers may take as JSON (the column holds 65,536). */
  static final int MAX_JSON_CHARS = 60_000;
  private static final Set<String> FIELDS = Set.of("crm", "on", "project");
  private static final List<String> CHANGES = List.of("created", "updated", "deleted");

  /** Whether a change of this kind ({@code created}, {@code updated}, {@code deleted}) starts a run. */
  public boolean startsOn(String change) {
    return switch (change) {
      case "created" -> onCreated;
      case "updated" -> onUpdated;
      case "deleted" -> onDeleted;
      default -> false;
    };
  }

  /**
   * Checks a definition's {@code triggers} array of CRM triggers, schedules ({@link Schedule}) and
   * inbound webhooks ({@link Hook});
   * each fault is a 400 naming {@code triggers[i].field}.
   */
  public static Triggers parseAll(JsonNode triggers) {
    if (triggers.size() > MAX_TRIGGERS) {
      throw DomainException.invalid("triggers", "a workflow may have at most " + MAX_TRIGGERS + " triggers");
    }
    List<Trigger> parsed = new ArrayList<>();
    List<Schedule> schedules = new ArrayList<>();
    List<Hook> hooks = new ArrayList<>();
    ArrayNode json = Json.MAPPER.createArrayNode();
    Set<String> types = new HashSet<>();
    for (int i = 0; i < triggers.size(); i++) {
      String at = "triggers[" + i + "]";
      JsonNode node = triggers.get(i);
      if (!node.isObject()) {
        throw DomainException.invalid(at, at
            + " must be an object such as {\"crm\": \"contacts\", \"on\": [\"created\"]} or {\"schedule\": "
            + "{\"cron\": \"0 9 * * MON-FRI\", \"timezone\": \"Europe/Paris\"}} or {\"webhook\": {\"verify\": "
            + "\"github\", \"secret\": \"NAME\"}}");
      }
      if (node.has("schedule")) {
        Schedule schedule = Schedule.parse(i, (ObjectNode) node, at);
        schedules.add(schedule);
        json.add(schedule.toJson());
        continue;
      }
      if (node.has("webhook")) {
        Hook hook = Hook.parse(i, (ObjectNode) node, at);
        hooks.add(hook);
        json.add(hook.toJson());
        continue;
      }
      JsonFields fields = JsonFields.of((ObjectNode) node, FIELDS, at + ".");
      String type = fields.requiredSlug("crm");
      if (!types.add(type)) {
        throw DomainException.invalid(at + ".crm", "the workflow has another trigger for '" + type
            + "': list every change in one trigger's \"on\"");
      }
      Set<String> on = changes(node.get("on"), at + ".on");
      String project = node.hasNonNull("project") ? fields.requiredSlug("project") : DEFAULT_PROJECT;
      Trigger trigger = new Trigger(type, on.contains("created"), on.contains("updated"), on.contains("deleted"), project);
      parsed.add(trigger);
      json.add(trigger.toJson());
    }
    String text = Json.string(json);
    if (text.length() > MAX_JSON_CHARS) {
      throw DomainException.invalid("triggers", "the triggers take " + text.length() + " characters as JSON, more "
          + "than the " + MAX_JSON_CHARS + " a workflow may have (a schedule's inputs count)");
    }
    return new Triggers(parsed, schedules, hooks, text);
  }

  private static Set<String> changes(JsonNode on, String at) {
    String rule = at + " must be a non-empty array of \"created\", \"updated\" and \"deleted\"";
    if (on == null || on.isNull()) {
      throw DomainException.invalid(at, at + " is required: " + rule);
    }
    if (!on.isArray() || on.isEmpty()) {
      throw DomainException.invalid(at, rule + ", not " + Json.kindOf(on));
    }
    Set<String> changes = new HashSet<>();
    for (JsonNode change : on) {
      if (!change.isTextual() || !CHANGES.contains(change.textValue()) || !changes.add(change.textValue())) {
        throw DomainException.invalid(at, rule + ", each once");
      }
    }
    return changes;
  }

  /** The trigger as stored and shown: complete, with its project. */
  private ObjectNode toJson() {
    ObjectNode node = Json.MAPPER.createObjectNode().put("crm", objectType);
    ArrayNode on = node.putArray("on");
    CHANGES.stream().filter(this::startsOn).forEach(on::add);
    return node.put("project", project);
  }

  /**
   * A workflow's triggers: those on CRM changes, the schedules and the inbound webhooks, and all of
   * them in their order as stored and shown ({@code json}).
   */
  public record Triggers(List<Trigger> crm, List<Schedule> schedules, List<Hook> hooks, String json) {
    public static final Triggers NONE = new Triggers(List.of(), List.of(), List.of(), "[]");
  }
}
