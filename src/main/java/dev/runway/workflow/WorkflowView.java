package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.secret.SecretReferences;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/** A workflow as the API shows it. */
public record WorkflowView(
    String id,
    String name,
    String description,
    boolean requiresApproval,
    JsonNode steps,
    JsonNode triggers,
    Instant createdAt,
    Instant updatedAt,
    Instant archivedAt,
    JsonNode inputsSchema,
    JsonNode output,
    JsonNode concurrency) {

  public static WorkflowView of(Workflow w) {
    return new WorkflowView(w.id(), w.name(), w.description(), w.requiresApproval(), masked(Json.tree(w.steps())),
        Json.tree(w.triggers()), w.createdAt(), w.updatedAt(), w.archivedAt(), tree(w.inputsSchema()),
        tree(w.output()), tree(w.concurrency()));
  }

  /**
   * The workflow with each schedule's {@code next_run_at} from its stored row ({@code schedules}),
   * null for a schedule without one (the workflow is archived), and each webhook trigger's
   * {@code hook_url} from {@code hookUrls} (by trigger index; null when it has none).
   */
  public static WorkflowView of(Workflow w, List<ScheduleDao.Row> schedules, Map<Integer, String> hookUrls) {
    WorkflowView view = of(w);
    for (int i = 0; i < view.triggers().size(); i++) {
      JsonNode trigger = view.triggers().get(i);
      if (trigger.has("schedule")) {
        ((ObjectNode) trigger).putNull("next_run_at");
      }
      if (trigger.has("webhook")) {
        ((ObjectNode) trigger).put("hook_url", hookUrls.get(i));
      }
    }
    for (ScheduleDao.Row row : schedules) {
      if (view.triggers().get(row.triggerIndex()) instanceof ObjectNode trigger && trigger.has("schedule")) {
        trigger.put("next_run_at", Json.time(row.nextRunAt()));
      }
    }
    return view;
  }

  private static JsonNode tree(String json) {
    return json == null ? null : Json.tree(json);
  }

  /** The steps with every header value given literally masked (see SecretReferences.maskLiteral). */
  private static JsonNode masked(JsonNode steps) {
    steps.forEach(step -> SecretReferences.maskLiteral(step.path("headers")));
    return steps;
  }
}
