package dev.runway.secret;

import java.util.Map;
import java.util.Set;

/** Where a call gets the values of the secrets it refers to, and the hosts each may be sent to. */
public interface SecretSource {
  /** A secret's value and the hosts it may be sent to. */
  record Usable(String value, AllowedHosts allowedHosts) {}

  /** The named secrets of the workspace, every one of them, or {@link Unavailable}. */
  Map<String, Usable> values(String workspaceId, Set<String> names) throws Unavailable;

  /** A secret that is not set, or cannot be decrypted; the message names it, never a value. */
  final class Unavailable extends Exception {
    public Unavailable(String message) {
      super(message, null, false, false);
    }
  }
}
