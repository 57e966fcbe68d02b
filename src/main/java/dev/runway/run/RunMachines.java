package dev.runway.run;

import dev.runway.core.WeighedCache;
import dev.runway.workflow.Step;
import java.time.Instant;
import java.util.List;

/**
 * Makes the machine of a run. A definition is shared by every run of its version, so each is parsed
 * once (an agent's schemas too) and kept here, keyed by its text: about 3 MB of each kind.
 */
public final class RunMachines {
  private final WeighedCache<String, List<Step>> workflows =
      new WeighedCache<>(3_000_000, (text, steps) -> 3L * text.length());
  private final WeighedCache<String, AgentRunMachine.Definition> agents =
      new WeighedCache<>(3_000_000, (text, definition) -> 4L * text.length());

  /** The machine of the run's kind. */
  public RunMachine of(Run run, Instant now) {
    return run.isAgent() ? agent(run, now) : workflow(run, now);
  }

  public WorkflowRunMachine workflow(Run run, Instant now) {
    List<Step> steps = workflows.get(run.definition());
    if (steps == null) {
      steps = WorkflowRunMachine.parse(run.definition());
      workflows.put(run.definition(), steps);
    }
    return new WorkflowRunMachine(run, now, steps);
  }

  public AgentRunMachine agent(Run run, Instant now) {
    AgentRunMachine.Definition definition = agents.get(run.definition());
    if (definition == null) {
      definition = AgentRunMachine.parse(run.definition(), run.agentId());
      agents.put(run.definition(), definition);
    }
    return new AgentRunMachine(run, now, definition);
  }
}
