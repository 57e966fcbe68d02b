package dev.runway.secret;

import java.time.Instant;

/** A workspace secret as stored: its value only encrypted (see SecretBox). */
public record Secret(String workspaceId, String name, String valueEncrypted, Instant createdAt, Instant updatedAt) {}
