package dev.runway.auth;

import java.time.Instant;

/** A stored API key: never the key itself, only its SHA-256 hash. */
public record ApiKey(
    String id,
    String workspaceId,
    String name,
    String keyHash,
    String scopes,
    String projects,
    Instant createdAt,
    Instant expiresAt,
    Instant revokedAt,
    String prefix,
    Instant lastUsedAt) {

  /** How many characters of a key its record keeps to show ("wsk_" and four more). */
  public static final int PREFIX_LENGTH = 8;
}
