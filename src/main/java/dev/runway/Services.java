package dev.runway;

import dev.runway.agent.AgentService;
import dev.runway.auth.ApiKeyService;
import dev.runway.console.AccountService;
import dev.runway.console.SessionService;
import dev.runway.crm.CrmService;
import dev.runway.crm.CrmStepWriter;
import dev.runway.db.Database;
import dev.runway.idempotency.IdempotencyStore;
import dev.runway.metrics.Metrics;
import dev.runway.quota.Quotas;
import dev.runway.events.EventReads;
import dev.runway.run.CallPlaces;
import dev.runway.run.CrmWriter;
import dev.runway.run.RunMachines;
import dev.runway.run.RunService;
import dev.runway.run.RunSignals;
import dev.runway.run.SignalUrls;
import dev.runway.http.PublicUrl;
import dev.runway.run.RunStarts;
import dev.runway.run.ThreadService;
import dev.runway.secret.SecretBox;
import dev.runway.secret.SecretService;
import dev.runway.trigger.HookReceiver;
import dev.runway.usage.TokenQuota;
import dev.runway.webhook.WebhookService;
import dev.runway.workflow.WorkflowService;

/**
 * Runway's services over one database, wired with plain constructors; {@code publicUrl} is the
 * server's address as callers reach it, for the URLs it hands out (signal URLs, hook URLs).
 */
public record Services(Database database, ApiKeyService keys, WorkflowService workflows, RunStarts starts,
    RunService runs, EventReads events, SecretService secrets, AgentService agents, IdempotencyStore idempotency,
    CrmService crm, CrmWriter crmSteps, WebhookService webhooks, AccountService accounts, SessionService sessions,
    Metrics metrics, Quotas quotas, HookReceiver hooks, RunSignals signals, SignalUrls signalUrls,
    PublicUrl publicUrl, ThreadService threads) {

  /** Services without metrics (the keys and accounts commands, some tests): no /metrics, nothing counted. */
  public static Services over(Database database, ServerSettings settings, Runnable runDue) {
    return over(database, settings, Metrics.off(), runDue);
  }

  /**
   * {@code runDue} is called when a run became due now, to wake the engine; what the services do is
   * counted in {@code metrics}, the same the database counts its group commit in.
   */
  public static Services over(Database database, ServerSettings settings, Metrics metrics, Runnable runDue) {
    return over(database, settings, metrics, runDue, CallPlaces.NONE);
  }

  /**
   * As {@link #over(Database, ServerSettings, Metrics, Runnable)}; a run that a start or a parent
   * stores standing at a due call goes to this process's engine through {@code places} when it has room.
   */
  public static Services over(Database database, ServerSettings settings, Metrics metrics, Runnable runDue,
      CallPlaces places) {
    return over(database, settings, metrics, runDue, places, settings.publicUrl(settings::httpPort));
  }

  /** As above; the URLs handed out (signal and hook URLs) start with {@code publicUrl}. */
  public static Services over(Database database, ServerSettings settings, Metrics metrics, Runnable runDue,
      CallPlaces places, PublicUrl publicUrl) {
    Quotas quotas = new Quotas(settings.quotas(), !settings.isH2());
    SecretService secrets = new SecretService(database.jdbi(),
        () -> SecretBox.load(settings.secretsKey(), settings.secretsKeyFile()), quotas);
    WorkflowService workflows = new WorkflowService(database.jdbi(), quotas, settings.model().allowed(), secrets::box,
        publicUrl);
    AgentService agents = new AgentService(database.jdbi(), settings.model().allowed(),
        new TokenQuota(database.jdbi(), settings.model().tokensPerWorkspacePerDay()), quotas);
    IdempotencyStore idempotency = new IdempotencyStore(database.jdbi(), settings.idempotencyTtl());
    CrmService crm = new CrmService(database.jdbi(), database.committer(), runDue, idempotency,
        settings.crm().changesRetention(), metrics, !database.isSingleProcess(), quotas);
    CrmWriter crmSteps = new CrmStepWriter(crm, settings.crm());
    SignalUrls signalUrls = new SignalUrls(publicUrl::base, (purpose, message) -> secrets.box().mac(purpose, message));
    RunMachines machines = new RunMachines(settings.engine().approvalTimeoutSeconds(), settings.model().allowed(), runDue, crmSteps,
        places, signalUrls, settings.model().threadWindow());
    ThreadService threads = new ThreadService(database.jdbi());
    RunStarts starts = new RunStarts(database.committer(), workflows, agents, idempotency,
        settings.engine().approvalTimeoutSeconds(), runDue, quotas, machines, threads);
    RunService runs = new RunService(database.jdbi(), database.committer(), machines, runDue);
    RunSignals signals = new RunSignals(database.jdbi(), database.committer(), machines, idempotency,
        settings.engine().approvalTimeoutSeconds(), runDue);
    return new Services(
        database,
        new ApiKeyService(database.jdbi(), settings.keyCache(), quotas),
        workflows,
        starts,
        runs,
        new EventReads(database.jdbi(), runs),
        secrets,
        agents,
        idempotency,
        crm,
        crmSteps,
        new WebhookService(database.jdbi(), database.committer(), secrets::box, settings.webhooks(), metrics, quotas),
        new AccountService(database.jdbi(), settings.console()),
        new SessionService(database.jdbi(), settings.console()),
        metrics,
        quotas,
        new HookReceiver(database.jdbi(), database.committer(), workflows, starts, secrets, quotas, settings.hooks()),
        signals,
        signalUrls,
        publicUrl,
        threads);
  }
}
