package dev.runway.core;

import java.security.SecureRandom;

/**
 * Ids for records Runway creates: a type prefix and 26 Crockford base-32 characters holding a
 * 48-bit millisecond time and 80 random bits, so ids sort by creation time (like ULIDs).
 */
public final class Ids {
  private static final char[] ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz".toCharArray();
  private static final SecureRandom RANDOM = new SecureRandom();
  public static final int BODY_LENGTH = 26;

  private Ids() {}

  public static String newId(String prefix, long epochMillis) {
    byte[] random = new byte[10];
    RANDOM.nextBytes(random);
    long hi = (epochMillis << 16) | ((random[0] & 0xffL) << 8) | (random[1] & 0xffL);
    long lo = 0;
    for (int i = 2; i < 10; i++) {
      lo = (lo << 8) | (random[i] & 0xffL);
    }
    char[] out = new char[BODY_LENGTH];
    // 128 bits as 26 five-bit groups, most significant first (the first group holds 3 bits).
    for (int i = BODY_LENGTH - 1; i >= 0; i--) {
      out[i] = ALPHABET[(int) (lo & 31)];
      lo = (lo >>> 5) | ((hi & 31) << 59);
      hi >>>= 5;
    }
    return prefix + "_" + new String(out);
  }

  public static String newId(String prefix) {
    return newId(prefix, System.currentTimeMillis());
  }

  /** Whether text has the shape of an id with this prefix. */
  public static boolean looksLike(String prefix, String text) {
    if (text == null || text.length() != prefix.length() + 1 + BODY_LENGTH || !text.startsWith(prefix + "_")) {
      return false;
    }
    for (int i = prefix.length() + 1; i < text.length(); i++) {
      if (indexOf(text.charAt(i)) < 0) {
        return false;
      }
    }
    return true;
  }

  private static int indexOf(char c) {
    for (int i = 0; i < ALPHABET.length; i++) {
      if (ALPHABET[i] == c) {
        return i;
      }
    }
    return -1;
  }
}
