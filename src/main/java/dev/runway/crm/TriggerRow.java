package dev.runway.crm;

/** A workflow's trigger on one object type, as stored beside the workflow (see workflow.Trigger). */
public record TriggerRow(String workflowId, String objectType, boolean onCreated, boolean onUpdated,
    boolean onDeleted, String project) {

  public boolean startsOn(String change) {
    return switch (change) {
      case "created" -> onCreated;
      case "updated" -> onUpdated;
      default -> onDeleted;
    };
  }
}
