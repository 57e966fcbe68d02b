package dev.runway.core;

import java.security.SecureRandom;

/**
 * Ids for records Runway creates: a type prefix and 26 Crockford base-32 characters holding a
 * 48-bit millisecond time and 80 random bits, so ids sort by creation time (like ULIDs).
 *
 * <p>Within one millisecond, an id takes the previous one's random bits plus one (ULID's
 * monotonic mode), so the ids one process makes sort in the order it made them: runs a client
 * starts one after another are listed in exactly that order, not shuffled within a millisecond,
 * and a run's events (made in the order they happen) sort in that order.
 *
 * <p>The order holds per process: instances sharing a database draw their own random bits in each
 * millisecond, so ids two instances make in the same millisecond sort in no particular order.
 */
public final class Ids {
  private static final char[] ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz".toCharArray();
  private static final SecureRandom RANDOM = new SecureRandom();
  public static final int BODY_LENGTH = 26;

  private static final Sequence SEQUENCE = new Sequence();

  private Ids() {}

  public static String newId(String prefix, long epochMillis) {
    return SEQUENCE.next(prefix, epochMillis);
  }

  public static String newId(String prefix) {
    return newId(prefix, System.currentTimeMillis());
  }

  /**
   * The first id with this prefix that a millisecond can have: ids made before it sort below it,
   * so that {@code id < firstOf(prefix, t)} finds rows made before {@code t} through their primary
   * key. (An id made just after a clock stepped back holds the later time it continues from.)
   */
  public static String firstOf(String prefix, long epochMillis) {
    return encode(prefix, epochMillis << 16, 0);
  }

  /** The ids of one process, in the order it makes them (tests make sequences of their own). */
  static final class Sequence {
    /** The last id made: its millisecond and its 80 random bits (16 high, 64 low). */
    private long lastMillis = -1;
    private long lastRandomHigh;
    private long lastRandomLow;

    synchronized String next(String prefix, long epochMillis) {
      if (epochMillis > lastMillis) {
        byte[] random = new byte[10];
        RANDOM.nextBytes(random);
        lastRandomHigh = ((random[0] & 0xffL) << 8) | (random[1] & 0xffL);
        lastRandomLow = 0;
        for (int i = 2; i < 10; i++) {
          lastRandomLow = (lastRandomLow << 8) | (random[i] & 0xffL);
        }
        lastMillis = epochMillis;
      } else {
        // The same millisecond, an earlier one (a clock that stepped back, or a time another thread
        // read a moment before the last id was made): one more than the last id, in its millisecond.
        lastRandomLow++;
        if (lastRandomLow == 0) {
          lastRandomHigh = (lastRandomHigh + 1) & 0xffff;
        }
      }
      return encode(prefix, (lastMillis << 16) | lastRandomHigh, lastRandomLow);
    }
  }

  /** A prefix and 128 bits as 26 five-bit groups, most significant first (the first holds 3). */
  private static String encode(String prefix, long hi, long lo) {
    char[] out = new char[BODY_LENGTH];
    for (int i = BODY_LENGTH - 1; i >= 0; i--) {
      out[i] = ALPHABET[(int) (lo & 31)];
      lo = (lo >>> 5) | ((hi & 31) << 59);
      hi >>>= 5;
    }
    return prefix + "_" + new String(out);
  }

  /**
   * The id a record made for {@code index} (0-65535) of another record {@code fromId} gets: always
   * the same, so that making it twice collides on a unique key instead of making two. It has the
   * time and the low 64 random bits of {@code fromId}, then the index: ids derived from one id sort
   * by index, and those of ids made one after another in one millisecond sort as those do.
   */
  public static String derived(String prefix, String fromId, int index) {
    if (index < 0 || index > 0xffff) {
      throw new IllegalArgumentException("index " + index + " is outside 0-65535");
    }
    String body = fromId.substring(fromId.indexOf('_') + 1);
    if (body.length() != BODY_LENGTH) {
      throw new IllegalArgumentException("not an id: " + fromId);
    }
    long hi = 0;
    long lo = 0;
    for (int i = 0; i < BODY_LENGTH; i++) {
      int v = indexOf(body.charAt(i));
      if (v < 0) {
        throw new IllegalArgumentException("not an id: " + fromId);
      }
      hi = (hi << 5) | (lo >>> 59);
      lo = (lo << 5) | v;
    }
    long millis = hi >>> 16;
    return encode(prefix, (millis << 16) | (lo >>> 48), (lo << 16) | index);
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
