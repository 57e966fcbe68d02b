package dev.runway.secret;

import java.time.Instant;

/**
 * A workspace secret as stored: its value only encrypted (see SecretBox), and the hosts it may be
 * sent to ({@code allowedHosts}: a JSON array, null for any host; see AllowedHosts).
 */
public record Secret(String workspaceId, String name, String valueEncrypted, String allowedHosts, Instant createdAt,
    Instant updatedAt) {
  public AllowedHosts hosts() {
    return AllowedHosts.fromStored(allowedHosts);
  }
}
