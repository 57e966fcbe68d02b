package dev.runway.metrics;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.regex.Pattern;

/**
 * Who may scrape /metrics: a client on this machine (a loopback address, not through a proxy), and,
 * when metrics.token is set, any client that sends it as a bearer token. The metrics name no
 * workspace, key or run, but they tell how busy the server is and what its routes are: no API key
 * opens them.
 */
final class MetricsAccess {
  /** An IPv4 or IPv6 literal, as Jetty gives the remote address: never a name to resolve. */
  private static final Pattern ADDRESS_LITERAL = Pattern.compile("[0-9A-Fa-f.:%]+");

  private final byte[] tokenDigest;

  /** {@code token}: empty for none (loopback only). */
  MetricsAccess(String token) {
    this.tokenDigest = token.isEmpty() ? null : sha256(token);
  }

  /**
   * Whether a request may scrape. {@code forwarded}: it carries Forwarded or X-Forwarded-For, so a
   * proxy on this machine passed it on from elsewhere, and its loopback address says nothing.
   */
  boolean allows(String remoteAddress, boolean forwarded, String authorization) {
    if (!forwarded && isLoopback(remoteAddress)) {
      return true;
    }
    return tokenDigest != null && bearerMatches(authorization);
  }

  /** The token compared in constant time: digests of equal length, so neither content nor length leaks. */
  private boolean bearerMatches(String authorization) {
    if (authorization == null) {
      return false;
    }
    String[] parts = authorization.trim().split(" +", 2);
    if (parts.length != 2 || !parts[0].equalsIgnoreCase("Bearer")) {
      return false;
    }
    return MessageDigest.isEqual(sha256(parts[1].trim()), tokenDigest);
  }

  static boolean isLoopback(String address) {
    if (address == null) {
      return false;
    }
    String literal = address.startsWith("[") && address.endsWith("]") ? address.substring(1, address.length() - 1)
        : address;
    if (literal.isEmpty() || !ADDRESS_LITERAL.matcher(literal).matches()) {
      return false;
    }
    try {
      return InetAddress.getByName(literal).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }

  private static byte[] sha256(String text) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
