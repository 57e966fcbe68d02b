package dev.runway.console;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.bouncycastle.crypto.generators.Argon2BytesGenerator;
import org.bouncycastle.crypto.params.Argon2Parameters;

/**
 * Console passwords, hashed with Argon2id at OWASP's parameters (19 MiB, 2 passes, 1 lane) and
 * stored as PHC strings ({@code $argon2id$v=19$m=19456,t=2,p=1$salt$hash}), which carry their
 * parameters so that stronger ones later still verify older hashes. A hash takes tens of
 * milliseconds of a core and 19 MiB: at most {@code maxConcurrent} run at once, and a caller that
 * waits longer than {@code patience} for a place is told the console is busy, so a flood of
 * sign-ins cannot take the cores from the API.
 */
final class PasswordHasher {
  private static final int MEMORY_KIB = 19 * 1024;
  private static final int ITERATIONS = 2;
  private static final int PARALLELISM = 1;
  private static final int SALT_BYTES = 16;
  private static final int HASH_BYTES = 32;
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Base64.Encoder B64 = Base64.getEncoder().withoutPadding();
  private static final Base64.Decoder B64_DECODE = Base64.getDecoder();

  private final Semaphore places;
  private final Duration patience;
  /** Hashed once: what an unknown email's sign-in is checked against, to take as long as a known one's. */
  private volatile String decoy;

  /** Thrown when no place frees up within the patience. */
  static final class Busy extends RuntimeException {
    Busy() {
      super("too many password checks at once", null, false, false);
    }
  }

  PasswordHasher(int maxConcurrent, Duration patience) {
    this.places = new Semaphore(maxConcurrent, true);
    this.patience = patience;
  }

  String hash(String password) {
    byte[] salt = new byte[SALT_BYTES];
    RANDOM.nextBytes(salt);
    byte[] hash = withPlace(() -> argon2(password, salt, MEMORY_KIB, ITERATIONS, PARALLELISM, HASH_BYTES));
    return "$argon2id$v=19$m=" + MEMORY_KIB + ",t=" + ITERATIONS + ",p=" + PARALLELISM + "$" + B64.encodeToString(salt)
        + "$" + B64.encodeToString(hash);
  }

  /** Whether the password matches the stored PHC string (compared in constant time); false for a malformed one. */
  boolean verify(String password, String stored) {
    String[] parts = stored.split("\\$");
    if (parts.length != 6 || !parts[1].equals("argon2id") || !parts[2].equals("v=19")) {
      return false;
    }
    int memory;
    int iterations;
    int parallelism;
    byte[] salt;
    byte[] expected;
    try {
      String[] params = parts[3].split(",");
      memory = Integer.parseInt(params[0].substring(2));
      iterations = Integer.parseInt(params[1].substring(2));
      parallelism = Integer.parseInt(params[2].substring(2));
      salt = B64_DECODE.decode(parts[4]);
      expected = B64_DECODE.decode(parts[5]);
    } catch (RuntimeException e) {
      return false;
    }
    byte[] actual = withPlace(() -> argon2(password, salt, memory, iterations, parallelism, expected.length));
    return MessageDigest.isEqual(actual, expected);
  }

  /** As much work as checking a password, for an email that has no account: the answer takes as long. */
  void verifyDecoy(String password) {
    String d = decoy;
    if (d == null) {
      d = hash("decoy password that no one has");
      decoy = d;
    }
    verify(password, d);
  }

  private byte[] withPlace(java.util.function.Supplier<byte[]> work) {
    try {
      if (!places.tryAcquire(patience.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new Busy();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Busy();
    }
    try {
      return work.get();
    } finally {
      places.release();
    }
  }

  private static byte[] argon2(String password, byte[] salt, int memoryKib, int iterations, int parallelism,
      int length) {
    Argon2Parameters params = new Argon2Parameters.Builder(Argon2Parameters.ARGON2_id)
        .withVersion(Argon2Parameters.ARGON2_VERSION_13)
        .withMemoryAsKB(memoryKib)
        .withIterations(iterations)
        .withParallelism(parallelism)
        .withSalt(salt)
        .build();
    Argon2BytesGenerator generator = new Argon2BytesGenerator();
    generator.init(params);
    byte[] out = new byte[length];
    generator.generateBytes(password.getBytes(StandardCharsets.UTF_8), out);
    return out;
  }
}
