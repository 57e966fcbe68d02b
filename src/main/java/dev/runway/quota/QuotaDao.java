package dev.runway.quota;

import org.jdbi.v3.sqlobject.statement.SqlQuery;

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
}
