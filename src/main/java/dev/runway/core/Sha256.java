package dev.runway.core;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** SHA-256 of a text, as 64 lowercase hex characters or as bytes. */
public final class Sha256 {
  private Sha256() {}

  public static String hex(String text) {
    return HexFormat.of().formatHex(digest(text));
  }

  /** The 32 bytes of the text's SHA-256 (of its UTF-8). */
  public static byte[] digest(String text) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
