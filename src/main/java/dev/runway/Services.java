package dev.runway;

import dev.runway.agent.AgentService;
import dev.runway.auth.ApiKeyService;
import dev.runway.config.ServerSettings;
import dev.runway.db.Database;
import dev.runway.run.RunService;
import dev.runway.secret.SecretBox;
import dev.runway.secret.SecretService;
import dev.runway.workflow.WorkflowService;

/** Runway's services over one database, wired with plain constructors. */
public record Services(Database database, ApiKeyService keys, WorkflowService workflows, RunService runs,
    SecretService secrets, AgentService agents) {

  /** {@code runDue} is called when a run became due now, to wake the engine. */
  public static Services over(Database database, ServerSettings settings, Runnable runDue) {
    WorkflowService workflows = new WorkflowService(database.jdbi());
    AgentService agents = new AgentService(database.jdbi());
    return new Services(
        database,
        new ApiKeyService(database.jdbi(), settings.keyCache()),
        workflows,
        new RunService(database.jdbi(), database.committer(), workflows, agents, settings.idempotencyTtl(),
            settings.engine().approvalTimeoutSeconds(), runDue),
        new SecretService(database.jdbi(), () -> SecretBox.load(settings.secretsKey(), settings.secretsKeyFile())),
        agents);
  }
}
