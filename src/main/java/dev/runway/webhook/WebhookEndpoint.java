package dev.runway.webhook;

import java.time.Instant;

/** A stored webhook endpoint. {@code eventTypes} is a JSON array; the secrets are encrypted (SecretBox). */
public record WebhookEndpoint(
    String id,
    String workspaceId,
    String url,
    String description,
    String eventTypes,
    boolean enabled,
    String disabledReason,
    String secret,
    String previousSecret,
    Instant previousSecretUntil,
    Instant failingSince,
    Instant createdAt,
    Instant updatedAt) {}
