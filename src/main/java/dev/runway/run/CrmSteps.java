package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.DomainException;
import dev.runway.db.Tx;

/**
 * Writes the records of workflows' {@code crm} steps in the commit of the move that reaches them: the
 * machine stops at the step with its records made ({@link WorkflowRunMachine#crmWrite}); once that
 * move is saved, this writes them in the same transaction, completes the step with the sync's answer
 * (or fails it with why the sync refused the records), moves the run on and saves it again. The
 * records and the step's end commit together or not at all: after a crash the step is done with
 * its records written, or the run still stands before it and writes them then. No engine call, no
 * lease: a run whose crm step comes first writes its records in the commit that starts it.
 */
final class CrmSteps {
  /** What a crm step's error says when the sync refused its records as a 400 validation_failed. */
  static final String INVALID = "crm_invalid";

  private final CrmWriter writer;
  private final RunMachines machines;
  private final long approvalTimeoutSeconds;
  private final Runnable runDue;

  CrmSteps(CrmWriter writer, RunMachines machines, long approvalTimeoutSeconds, Runnable runDue) {
    this.writer = writer;
    this.machines = machines;
    this.approvalTimeoutSeconds = approvalTimeoutSeconds;
    this.runDue = runDue;
  }

  /** After {@code saved} (the run as {@code m}'s moves left it, at a crm step) was saved in {@code tx}: writes the step's records and moves on. */
  void write(Tx tx, WorkflowRunMachine m, Run saved) {
    WorkflowRunMachine.CrmWrite write = m.crmWrite();
    tx.flush(); // the run may have been inserted by a batch not yet executed
    JsonNode answer = null;
    String code = null;
    String message = null;
    try {
      answer = writer.sync(tx, saved, m.depth(), write.crm().objectType(), write.crm().mode(), write.records(),
          m.outputRoom());
    } catch (DomainException e) {
      code = e.code().equals("validation_failed") ? INVALID : e.code();
      message = e.param() == null || e.getMessage().startsWith(e.param()) ? e.getMessage()
          : e.param() + ": " + e.getMessage();
    }
    WorkflowRunMachine after = machines.workflow(saved, m.now());
    after.crmWritten(answer, code, message);
    if (after.moveUntilWaiting(approvalTimeoutSeconds)) {
      tx.afterCommit(runDue); // it stands at an http step: the engine makes the call
    }
    ChildRuns.save(tx, after, after.toRun(saved.leaseOwner(), saved.leaseUntil()));
  }
}
