package dev.runway.auth;

import dev.runway.core.Sha256;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;

/**
 * Makes API keys and their stored hashes. Keys carry 238 random bits, so a fast SHA-256 is the
 * right hash (as for GitHub and Stripe tokens): no salt or slow hash is needed against guessing.
 */
public final class KeyHasher {
  public static final String PREFIX = "wsk_";
  private static final int RANDOM_CHARS = 40;
  private static final char[] BASE62 =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".toCharArray();
  private static final SecureRandom RANDOM = new SecureRandom();

  private KeyHasher() {}

  public static String newKey() {
    StringBuilder key = new StringBuilder(PREFIX);
    for (int i = 0; i < RANDOM_CHARS; i++) {
      key.append(BASE62[RANDOM.nextInt(BASE62.length)]);
    }
    return key.toString();
  }

  /** Whether text could be a key at all; anything else is refused before hashing. */
  public static boolean wellFormed(String text) {
    if (!text.startsWith(PREFIX) || text.length() < PREFIX.length() + RANDOM_CHARS || text.length() > 200) {
      return false;
    }
    for (int i = PREFIX.length(); i < text.length(); i++) {
      char c = text.charAt(i);
      if (!(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z')) {
        return false;
      }
    }
    return true;
  }

  public static String hash(String key) {
    return Sha256.hex(key);
  }

  /** Compares two hashes without an early exit, so timing says nothing about where they differ. */
  public static boolean sameHash(String a, String b) {
    return MessageDigest.isEqual(a.getBytes(StandardCharsets.US_ASCII), b.getBytes(StandardCharsets.US_ASCII));
  }
}
