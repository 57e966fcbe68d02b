package dev.runway.secret;

import dev.runway.config.SettingsException;
import dev.runway.core.Sha256;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Encrypts and decrypts secret values with AES-256-GCM under the server's secrets key. Each value
 * gets a random 96-bit nonce, and its workspace and name as associated data, so a stored value moved
 * to another row does not decrypt. A stored value reads {@code v1.<key id>.<base64 of nonce and
 * ciphertext>}: the key id (a fingerprint of the key, never the key) tells which key wrote it, so a
 * server with another key says so instead of failing obscurely.
 */
public final class SecretBox {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final int NONCE_BYTES = 12;
  private static final int TAG_BITS = 128;

  private final SecretKeySpec key;
  private final String keyId;

  SecretBox(byte[] key) {
    if (key.length != 32) {
      throw new IllegalArgumentException("a secrets key is 32 bytes");
    }
    this.key = new SecretKeySpec(key, "AES");
    this.keyId = Sha256.hex("runway secrets key " + HexFormat.of().formatHex(key)).substring(0, 12);
  }

  /**
   * The box for {@code configured} (secrets.key: 32 bytes in base64) when set; else for the key in
   * {@code file}, made on first use (32 random bytes, readable by its owner alone).
   */
  public static SecretBox load(String configured, Path file) {
    if (!configured.isEmpty()) {
      try {
        return new SecretBox(Base64.getDecoder().decode(configured));
      } catch (IllegalArgumentException e) {
        throw new SettingsException("invalid setting secrets.key: must be 32 bytes in base64 (e.g. `openssl rand "
            + "-base64 32`)");
      }
    }
    try {
      if (!Files.exists(file)) {
        create(file);
      }
      return new SecretBox(Base64.getDecoder().decode(Files.readString(file, StandardCharsets.US_ASCII).trim()));
    } catch (IOException | IllegalArgumentException e) {
      throw new IllegalStateException("cannot read the secrets key file " + file + ": " + e.getMessage(), e);
    }
  }

  private static void create(Path file) throws IOException {
    byte[] key = new byte[32];
    RANDOM.nextBytes(key);
    Path dir = file.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    Path temp = Files.createTempFile(dir, ".secrets-key", ".tmp");
    try {
      try {
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rw-------"));
      } catch (UnsupportedOperationException noPosix) {
        // a file system without POSIX permissions: the directory's protection applies
      }
      Files.writeString(temp, Base64.getEncoder().encodeToString(key) + "\n", StandardCharsets.US_ASCII);
      try {
        // Atomic and never over an existing key: two servers starting at once keep the first one's.
        Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE);
      } catch (FileAlreadyExistsException anotherWasFirst) {
        // the other's key stands
      }
    } finally {
      Files.deleteIfExists(temp);
    }
  }

  /** The fingerprint of the key, for messages and stored values. */
  public String keyId() {
    return keyId;
  }

  /**
   * A MAC of {@code message} under a key derived from the secrets key for {@code purpose} (e.g. the
   * signal URLs' tokens): every instance with the same secrets key makes the same one, and nothing
   * needs storing to make it again.
   */
  public byte[] mac(String purpose, String message) {
    try {
      javax.crypto.Mac derive = javax.crypto.Mac.getInstance("HmacSHA256");
      derive.init(new SecretKeySpec(key.getEncoded(), "HmacSHA256"));
      byte[] derived = derive.doFinal(("runway " + purpose).getBytes(StandardCharsets.UTF_8));
      javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(derived, "HmacSHA256"));
      return mac.doFinal(message.getBytes(StandardCharsets.UTF_8));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
    }
  }

  public String encrypt(String workspaceId, String name, String value) {
    byte[] nonce = new byte[NONCE_BYTES];
    RANDOM.nextBytes(nonce);
    try {
      Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
      cipher.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, nonce));
      cipher.updateAAD(associated(workspaceId, name));
      byte[] sealed = cipher.doFinal(value.getBytes(StandardCharsets.UTF_8));
      ByteBuffer out = ByteBuffer.allocate(nonce.length + sealed.length).put(nonce).put(sealed);
      return "v1." + keyId + "." + Base64.getEncoder().encodeToString(out.array());
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES-GCM is missing from this JVM", e);
    }
  }

  /** The value; {@link Unreadable} when another key wrote it or it was changed. */
  public String decrypt(String workspaceId, String name, String stored) throws Unreadable {
    String[] parts = stored.split("\\.", 3);
    if (parts.length != 3 || !parts[0].equals("v1")) {
      throw new Unreadable("secret " + name + " is not in a form this server reads");
    }
    if (!parts[1].equals(keyId)) {
      throw new Unreadable("secret " + name + " was encrypted with the secrets key " + parts[1]
          + ", this server has " + keyId + ": give every server the same secrets.key");
    }
    try {
      byte[] bytes = Base64.getDecoder().decode(parts[2]);
      Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
      cipher.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, bytes, 0, NONCE_BYTES));
      cipher.updateAAD(associated(workspaceId, name));
      return new String(cipher.doFinal(bytes, NONCE_BYTES, bytes.length - NONCE_BYTES), StandardCharsets.UTF_8);
    } catch (GeneralSecurityException | IllegalArgumentException e) {
      throw new Unreadable("secret " + name + " cannot be decrypted (it was changed, or moved from another place)");
    }
  }

  private static byte[] associated(String workspaceId, String name) {
    return ("runway secret " + workspaceId + "/" + name).getBytes(StandardCharsets.UTF_8);
  }

  /** A stored value this server cannot decrypt; the message names the secret, never a value. */
  public static final class Unreadable extends Exception {
    Unreadable(String message) {
      super(message, null, false, false);
    }
  }
}
