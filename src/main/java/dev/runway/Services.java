package dev.runway;

import dev.runway.auth.ApiKeyService;
import dev.runway.config.ServerSettings;
import dev.runway.db.Database;
import dev.runway.run.RunService;
import dev.runway.workflow.WorkflowService;

/** Runway's services over one database, wired with plain constructors. */
public record Services(Database database, ApiKeyService keys, WorkflowService workflows, RunService runs) {

  public static Services over(Database database, ServerSettings settings) {
    return new Services(
        database,
        new ApiKeyService(database.jdbi()),
        new WorkflowService(database.jdbi()),
        new RunService(database.jdbi(), settings.idempotencyTtl()));
  }
}
