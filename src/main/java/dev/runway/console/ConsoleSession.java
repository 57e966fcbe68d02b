package dev.runway.console;

import java.time.Instant;

/** A browser's session: signed in (accountId set) or not yet; the cookie holds the id, this row its hash. */
public record ConsoleSession(
    String idHash,
    String accountId,
    String csrfToken,
    Instant createdAt,
    Instant lastSeenAt,
    Instant expiresAt) {

  public boolean signedIn() {
    return accountId != null;
  }
}
