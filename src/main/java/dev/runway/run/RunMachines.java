package dev.runway.run;

import dev.runway.agent.AllowedModels;
import dev.runway.core.WeighedCache;
import dev.runway.db.Tx;
import java.time.Instant;

/**
 * Makes the machine of a run. A definition is shared by every run of its version, so each is parsed
 * once (an agent's schemas too) and kept here, keyed by its text: about 3 MB of each kind.
 */
public final class RunMachines {
  private final ChildRuns children;
  private final CrmSteps crmSteps;
  private final CallPlaces places;
  private final SignalWaits signalWaits;
  private final ConcurrencyKeys concurrency;
  private final Threads threads;
  private final WeighedCache<String, WorkflowRunMachine.Definition> workflows =
      new WeighedCache<>(3_000_000, (text, definition) -> 3L * text.length());
  private final WeighedCache<String, AgentRunMachine.Definition> agents =
      new WeighedCache<>(3_000_000, (text, definition) -> 4L * text.length());

  /**
   * Machines whose moves start, cancel and settle child runs in their commits: child approval gates
   * without a time-out of their own get {@code approvalTimeoutSeconds}; child agent runs may ask only
   * for the models {@code allowedModels} names; {@code runDue} is told when such a commit made a run
   * due now; crm steps write their records through {@code crm}. A child run stored standing at a due
   * call goes to an engine of this process through {@code places} when it has room.
   */
  public RunMachines(long approvalTimeoutSeconds, AllowedModels allowedModels, Runnable runDue, CrmWriter crm,
      CallPlaces places) {
    this(approvalTimeoutSeconds, allowedModels, runDue, crm, places, SignalUrls.NONE);
  }

  /** As above; workflow runs' templates see their signal URLs as {@code signalUrls} makes them. */
  public RunMachines(long approvalTimeoutSeconds, AllowedModels allowedModels, Runnable runDue, CrmWriter crm,
      CallPlaces places, SignalUrls signalUrls) {
    this(approvalTimeoutSeconds, allowedModels, runDue, crm, places, signalUrls, ThreadWindow.DEFAULT);
  }

  /** As above; a run that continues a thread is given its earlier messages within {@code threadWindow}. */
  public RunMachines(long approvalTimeoutSeconds, AllowedModels allowedModels, Runnable runDue, CrmWriter crm,
      CallPlaces places, SignalUrls signalUrls, ThreadWindow threadWindow) {
    this.places = places;
    this.signalWaits = new SignalWaits(this, approvalTimeoutSeconds, runDue, signalUrls);
    this.children = new ChildRuns(this, approvalTimeoutSeconds, allowedModels, runDue, places);
    this.crmSteps = new CrmSteps(crm, this, approvalTimeoutSeconds, runDue);
    this.concurrency = new ConcurrencyKeys(this, approvalTimeoutSeconds, runDue);
    this.threads = new Threads(this, approvalTimeoutSeconds, runDue, threadWindow);
  }

  Threads threads() {
    return threads;
  }

  ConcurrencyKeys concurrency() {
    return concurrency;
  }

  ChildRuns children() {
    return children;
  }

  CrmSteps crmSteps() {
    return crmSteps;
  }

  SignalWaits signalWaits() {
    return signalWaits;
  }

  CallPlaces places() {
    return places;
  }

  /**
   * Saves {@code ended} in {@code tx}, a run that ended without its machine (see
   * {@link RunMachine#failedUnreadable}), and tells its parent run, if it has one, that it ended.
   */
  public boolean saveEnded(Tx tx, RunMachine.Moved ended) {
    return children.saveEnded(tx, ended);
  }

  /** The machine of the run's kind. */
  public RunMachine of(Run run, Instant now) {
    return run.isAgent() ? agent(run, now) : workflow(run, now);
  }

  public WorkflowRunMachine workflow(Run run, Instant now) {
    WorkflowRunMachine.Definition definition = workflows.get(run.definition());
    if (definition == null) {
      definition = WorkflowRunMachine.parse(run.definition());
      workflows.put(run.definition(), definition);
    }
    WorkflowRunMachine machine = new WorkflowRunMachine(run, now, definition);
    machine.children = children;
    machine.signalUrls = signalWaits.urls();
    machine.concurrencyKeys = concurrency;
    return machine;
  }

  public AgentRunMachine agent(Run run, Instant now) {
    AgentRunMachine.Definition definition = agents.get(run.definition());
    if (definition == null) {
      definition = AgentRunMachine.parse(run.definition(), run.agentId());
      agents.put(run.definition(), definition);
    }
    AgentRunMachine machine = new AgentRunMachine(run, now, definition);
    machine.children = children;
    machine.concurrencyKeys = concurrency; // hands on its thread's place when it ends
    return machine;
  }
}
