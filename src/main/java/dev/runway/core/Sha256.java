package dev.runway.core;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** SHA-256 of a text, as 64 lowercase hex characters. */
public final class Sha256 {
  private Sha256() {}

  /** One digest per thread: getting a new one looks the algorithm up among the security providers each time. */
  private static final ThreadLocal<MessageDigest> DIGEST = ThreadLocal.withInitial(() -> {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  });
  private static final HexFormat HEX = HexFormat.of();

  public static String hex(String text) {
    return HEX.formatHex(DIGEST.get().digest(text.getBytes(StandardCharsets.UTF_8))); // digest() resets it
  }
}
