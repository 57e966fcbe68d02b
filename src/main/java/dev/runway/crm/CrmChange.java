package dev.runway.crm;

import java.time.Instant;

/**
 * One change of a record in the feed: {@code change} is created, updated or deleted, and the other
 * fields are the record as it was right after it. {@code seq} orders changes as they committed.
 */
public record CrmChange(
    long seq,
    String workspaceId,
    String objectType,
    String externalId,
    String change,
    int version,
    boolean deleted,
    String properties,
    Instant sourceUpdatedAt,
    Instant createdAt,
    Instant changedAt) {

  public CrmRecord record() {
    return new CrmRecord(workspaceId, objectType, externalId, properties, version, deleted, sourceUpdatedAt, createdAt,
        changedAt);
  }
}
