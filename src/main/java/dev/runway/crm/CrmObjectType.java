package dev.runway.crm;

import java.time.Instant;

/** An object type of a workspace with its record counts; changes up to {@code prunedThrough} were pruned. */
public record CrmObjectType(
    String workspaceId,
    String objectType,
    long liveRecords,
    long deletedRecords,
    long prunedThrough,
    Instant createdAt,
    Instant updatedAt) {}
