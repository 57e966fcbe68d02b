package dev.runway.quota;

import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/** What a workspace has of each counted quota, read in the transaction that would add one. */
public interface QuotaDao {
  @SqlQuery("SELECT COUNT(*) FROM api_key WHERE workspace_id = :ws AND revoked_at IS NULL")
  long keys(String ws);

  @SqlQuery("SELECT COUNT(*) FROM webhook_endpoint WHERE workspace_id = :ws")
  long webhookEndpoints(String ws);

  @SqlQuery("SELECT COUNT(*) FROM workflow WHERE workspace_id = :ws AND archived_at IS NULL")
  long workflows(String ws);

  @SqlQuery("SELECT COUNT(*) FROM agent WHERE workspace_id = :ws AND archived_at IS NULL")
  long agents(String ws);

  @SqlQuery("SELECT COUNT(*) FROM secret WHERE workspace_id = :ws")
  long secrets(String ws);

  @SqlQuery("SELECT COALESCE(SUM(live_records), 0) FROM crm_object_type WHERE workspace_id = :ws")
  long crmRecords(String ws);

  /** Characters of properties JSON the workspace's live CRM records hold (kept by each sync, see V17). */
  @SqlQuery("SELECT COALESCE(SUM(live_chars), 0) FROM crm_object_type WHERE workspace_id = :ws")
  long crmChars(String ws);

  @SqlUpdate("UPDATE crm_object_type SET live_chars = live_chars + :delta WHERE workspace_id = :ws AND object_type = :type")
  void addCrmChars(String ws, String type, long delta);
}
