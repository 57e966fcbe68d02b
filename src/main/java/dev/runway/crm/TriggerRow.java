package dev.runway.crm;

import dev.runway.workflow.Trigger;

/** A workflow's trigger on one object type, as stored beside the workflow. */
public record TriggerRow(String workflowId, String objectType, boolean onCreated, boolean onUpdated,
    boolean onDeleted, String project) {

  public Trigger trigger() {
    return new Trigger(objectType, onCreated, onUpdated, onDeleted, project);
  }
}
