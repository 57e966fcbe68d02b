package dev.runway.crm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.Json;
import dev.runway.db.Tx;
import dev.runway.run.CrmWriter;
import dev.runway.run.Run;
import java.util.Set;

/**
 * The records of workflows' crm steps, written as a sync writes them: the same checks and limits
 * (1,000 records, a 1 MiB body, the sync's size bound, the workspace's quotas), the same per-record
 * outcomes, changes, webhook event and triggered runs. The run stands in for the caller: its id is
 * named by the runs its changes trigger, and triggers of every project fire (a workflow is the whole
 * workspace's, saved by a key with crm:write for the whole workspace).
 */
public final class CrmStepWriter implements CrmWriter {
  private final CrmService crm;
  private final CrmSettings limits;

  public CrmStepWriter(CrmService crm, CrmSettings limits) {
    this.crm = crm;
    this.limits = limits;
  }

  @Override
  public JsonNode sync(Tx tx, Run run, int depth, String objectType, String mode, JsonNode records,
      int maxAnswerChars) {
    ObjectNode body = Json.MAPPER.createObjectNode().put("mode", mode);
    body.set("records", records);
    if (Json.bytes(body).length > CrmSettings.MAX_SYNC_BODY_BYTES) {
      throw new DomainException(Kind.TOO_LARGE, "body_too_large", "the records take more than "
          + CrmSettings.MAX_SYNC_BODY_BYTES + " bytes of JSON, the most one sync takes", "records");
    }
    SyncRequest request = SyncRequest.parse(body, limits);
    Principal writer = new Principal(run.id(), run.workspaceId(), Set.of(), null);
    return Json.tree(crm.syncInTransaction(tx, writer, objectType, request, limits, depth + 1, maxAnswerChars));
  }
}
