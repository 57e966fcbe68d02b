package dev.runway.console;

import java.time.Instant;

/** A person who signs in to the console, and the workspace the account belongs to. */
public record Account(
    String id,
    String email,
    String passwordHash,
    String workspaceId,
    Instant createdAt) {}
