package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.db.Tx;

/**
 * Writes the records of a workflow's {@code crm} step, as {@code POST /v1/crm/{object_type}/records/sync}
 * does, in the transaction that completes the step. The CRM lives above runs (it starts runs by its
 * triggers), so runs reach it through this, which the root wires to it.
 */
public interface CrmWriter {
  /**
   * Upserts {@code records} (the step's records, evaluated) of {@code objectType} in {@code mode}
   * (merge or replace) within {@code tx} for {@code run}, whose runs nest {@code depth} deep: the
   * runs its changes trigger are one deeper, and none starts past {@link WorkflowRunMachine#MAX_DEPTH}.
   * Returns the sync's answer ({@code summary} and {@code results}). Throws a DomainException, having
   * written nothing, when the sync would refuse the batch (records not an array, too many, too large,
   * a quota), or when its answer would take more than {@code maxAnswerChars}.
   */
  JsonNode sync(Tx tx, Run run, int depth, String objectType, String mode, JsonNode records, int maxAnswerChars);
}
