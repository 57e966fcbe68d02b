package dev.runway.idempotency;

import java.time.Instant;

/** The stored first response to a request with an Idempotency-Key, kept per workspace and API key. */
public record IdempotencyRecord(
    String workspaceId,
    String apiKeyId,
    String idemKey,
    String requestHash,
    int responseStatus,
    String responseBody,
    Instant createdAt,
    Instant expiresAt) {}
