package dev.runway.webhook;

import java.time.Instant;

/** One event to one endpoint: pending (due at nextAttemptAt), succeeded or failed. */
public record WebhookDelivery(
    String id,
    String workspaceId,
    String endpointId,
    String eventId,
    String eventType,
    String status,
    int attempts,
    Instant nextAttemptAt,
    Instant giveUpAt,
    String leaseOwner,
    Instant leaseUntil,
    Integer lastResponseStatus,
    String lastError,
    Instant createdAt,
    Instant updatedAt) {
  static final String PENDING = "pending";
  static final String SUCCEEDED = "succeeded";
  static final String FAILED = "failed";
}
