package dev.runway.webhook;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Standard Webhooks signatures: {@code webhook-signature} holds {@code v1,<base64 of HMAC-SHA256 of
 * "id.timestamp.body">} for each live secret, separated by spaces. A secret reads
 * {@code whsec_<base64 of 24 random bytes>}; the bytes are the HMAC key.
 */
public final class Signatures {
  static final String PREFIX = "whsec_";
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final ThreadLocal<Mac> MAC = ThreadLocal.withInitial(() -> {
    try {
      return Mac.getInstance("HmacSHA256");
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
    }
  });

  private Signatures() {}

  static String newSecret() {
    byte[] key = new byte[24];
    RANDOM.nextBytes(key);
    return PREFIX + Base64.getEncoder().encodeToString(key);
  }

  /** The header value signing {@code body} of message {@code id} sent at {@code timestamp} (Unix seconds). */
  public static String header(List<String> secrets, String id, long timestamp, byte[] body) {
    StringBuilder out = new StringBuilder();
    for (String secret : secrets) {
      if (out.length() > 0) {
        out.append(' ');
      }
      out.append("v1,").append(sign(secret, id, timestamp, body));
    }
    return out.toString();
  }

  static String sign(String secret, String id, long timestamp, byte[] body) {
    try {
      Mac mac = MAC.get(); // Mac.getInstance looks the algorithm up among the providers each time
      mac.init(new SecretKeySpec(Base64.getDecoder().decode(secret.substring(PREFIX.length())), "HmacSHA256"));
      mac.update((id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8));
      return Base64.getEncoder().encodeToString(mac.doFinal(body));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
    }
  }
}
