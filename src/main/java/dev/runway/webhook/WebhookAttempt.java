package dev.runway.webhook;

import java.time.Instant;

/** One attempt of a delivery: what the endpoint answered (the first 2 KB of it), or why it did not. */
public record WebhookAttempt(
    String deliveryId,
    int attempt,
    Instant startedAt,
    int durationMs,
    Integer responseStatus,
    String responseBody,
    String error) {}
