package dev.runway.workflow;

import dev.runway.core.DefinitionFiles;
import java.nio.file.Path;
import java.util.List;

/** Loads workflow definitions from {@code <dir>/<workflow-id>.json} into a workspace at start. */
public final class WorkflowFiles {
  private final WorkflowService workflows;

  public WorkflowFiles(WorkflowService workflows) {
    this.workflows = workflows;
  }

  /** Applies every file; a bad file stops start-up with an exception naming it. Returns the ids loaded. */
  public List<String> load(Path dir, String workspaceId) {
    return new DefinitionFiles<>("workflow", WorkflowDefinition::parse,
        (String id, WorkflowDefinition definition) -> workflows.put(workspaceId, id, definition)).load(dir);
  }
}
