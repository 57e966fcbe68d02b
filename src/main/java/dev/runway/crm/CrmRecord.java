package dev.runway.crm;

import java.time.Instant;

/** A CRM record as stored: {@code properties} is JSON object text; a deleted record is a tombstone. */
public record CrmRecord(
    String workspaceId,
    String objectType,
    String externalId,
    String properties,
    int version,
    boolean deleted,
    Instant sourceUpdatedAt,
    Instant createdAt,
    Instant updatedAt) {}
