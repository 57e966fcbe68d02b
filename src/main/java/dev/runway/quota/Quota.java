package dev.runway.quota;

/** What a workspace may have (or do per minute), each with its setting (quotas.* in config/runway.properties). */
public enum Quota {
  KEYS("keys", "quotas.keys_per_workspace"),
  WEBHOOK_ENDPOINTS("webhook_endpoints", "quotas.webhook_endpoints_per_workspace"),
  WORKFLOWS("workflows", "quotas.workflows_per_workspace"),
  AGENTS("agents", "quotas.agents_per_workspace"),
  SECRETS("secrets", "quotas.secrets_per_workspace"),
  EVENT_STREAMS("event_streams", "quotas.event_streams_per_workspace"),
  RUNS_PER_MINUTE("runs_per_minute", "quotas.runs_per_minute_per_workspace"),
  CRM_RECORDS("crm_records", "quotas.crm_records_per_workspace"),
  CRM_MEGABYTES("crm_megabytes", "quotas.crm_megabytes_per_workspace");

  private final String wireName;
  private final String setting;

  Quota(String wireName, String setting) {
    this.wireName = wireName;
    this.setting = setting;
  }

  /** The name in a quota_exceeded problem's {@code quota} member. */
  public String wireName() {
    return wireName;
  }

  public String setting() {
    return setting;
  }
}
