package dev.runway.trigger;

import dev.runway.workflow.Hook;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;
import java.util.function.Function;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Checks an inbound delivery's signature by its sender's scheme, each compared in constant time:
 * Standard Webhooks ({@code webhook-id}, {@code webhook-timestamp}, {@code webhook-signature: v1,<base64>},
 * the secret {@code whsec_<base64>}), GitHub ({@code X-Hub-Signature-256: sha256=<hex>} of the body)
 * and Stripe ({@code Stripe-Signature: t=<unix>,v1=<hex>} of {@code <t>.<body>}). The schemes with a
 * timestamp refuse one more than {@link #TOLERANCE} away from now, as their own libraries do.
 */
final class HookSignatures {
  /** How far a signed timestamp may be from now, either way (Stripe's and Standard Webhooks' default). */
  static final Duration TOLERANCE = Duration.ofMinutes(5);

  private HookSignatures() {}

  /** Why a delivery is refused: {@code code} one of signature_missing, signature_invalid, signature_expired. */
  record Refusal(String code, String detail) {}

  /**
   * The refusal of a delivery of {@code body} with {@code headers} (by lower-case name; null when
   * absent) signed with {@code secret} by {@code scheme}, or null when the signature holds.
   */
  static Refusal check(Hook.Verify scheme, String secret, Function<String, String> headers, byte[] body, Instant now) {
    return switch (scheme) {
      case STANDARD_WEBHOOKS -> standardWebhooks(secret, headers, body, now);
      case GITHUB -> github(secret, headers, body);
      case STRIPE -> stripe(secret, headers, body, now);
      case NONE -> null;
    };
  }

  private static Refusal standardWebhooks(String secret, Function<String, String> headers, byte[] body, Instant now) {
    String id = headers.apply("webhook-id");
    String timestamp = headers.apply("webhook-timestamp");
    String signatures = headers.apply("webhook-signature");
    if (id == null || timestamp == null || signatures == null) {
      return missing("webhook-id, webhook-timestamp and webhook-signature are required (Standard Webhooks)");
    }
    Refusal late = outsideTolerance(timestamp, now, "webhook-timestamp");
    if (late != null) {
      return late;
    }
    byte[] key;
    try {
      key = Base64.getDecoder().decode(secret.startsWith("whsec_") ? secret.substring(6) : secret);
    } catch (IllegalArgumentException e) {
      return invalid(); // the workspace secret is not a Standard Webhooks secret: nothing can match
    }
    byte[] expected = Base64.getEncoder().encode(hmac(key, (id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8), body));
    for (String signature : signatures.split(" ")) {
      if (signature.startsWith("v1,") && equal(expected, signature.substring(3))) {
        return null;
      }
    }
    return invalid();
  }

  private static Refusal github(String secret, Function<String, String> headers, byte[] body) {
    String signature = headers.apply("x-hub-signature-256");
    if (signature == null) {
      return missing("X-Hub-Signature-256 is required (GitHub)");
    }
    byte[] expected = ("sha256=" + HexFormat.of().formatHex(hmac(secret.getBytes(StandardCharsets.UTF_8), new byte[0],
        body))).getBytes(StandardCharsets.UTF_8);
    return equal(expected, signature.trim()) ? null : invalid();
  }

  private static Refusal stripe(String secret, Function<String, String> headers, byte[] body, Instant now) {
    String header = headers.apply("stripe-signature");
    if (header == null) {
      return missing("Stripe-Signature is required (Stripe)");
    }
    String timestamp = null;
    for (String part : header.split(",")) {
      if (part.trim().startsWith("t=")) {
        timestamp = part.trim().substring(2);
      }
    }
    if (timestamp == null) {
      return missing("Stripe-Signature has no timestamp (t=)");
    }
    Refusal late = outsideTolerance(timestamp, now, "the Stripe-Signature timestamp");
    if (late != null) {
      return late;
    }
    byte[] expected = HexFormat.of().formatHex(hmac(secret.getBytes(StandardCharsets.UTF_8),
        (timestamp + ".").getBytes(StandardCharsets.UTF_8), body)).getBytes(StandardCharsets.UTF_8);
    for (String part : header.split(",")) {
      if (part.trim().startsWith("v1=") && equal(expected, part.trim().substring(3))) {
        return null;
      }
    }
    return invalid();
  }

  private static Refusal outsideTolerance(String timestamp, Instant now, String what) {
    long seconds;
    try {
      seconds = Long.parseLong(timestamp.trim());
    } catch (NumberFormatException e) {
      return new Refusal("signature_invalid", what + " must be a Unix time in seconds");
    }
    if (Math.abs(now.getEpochSecond() - seconds) > TOLERANCE.toSeconds()) {
      return new Refusal("signature_expired", what + " is more than " + TOLERANCE.toMinutes()
          + " minutes from now: a delivery is accepted only soon after it was signed (a replay is refused)");
    }
    return null;
  }

  private static byte[] hmac(byte[] key, byte[] prefix, byte[] body) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key.length == 0 ? new byte[1] : key, "HmacSHA256"));
      mac.update(prefix);
      return mac.doFinal(body);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
    }
  }

  /** Constant-time comparison (MessageDigest.isEqual takes the same time for any text of a given length). */
  private static boolean equal(byte[] expected, String given) {
    return MessageDigest.isEqual(expected, given.getBytes(StandardCharsets.UTF_8));
  }

  private static Refusal missing(String detail) {
    return new Refusal("signature_missing", detail);
  }

  private static Refusal invalid() {
    return new Refusal("signature_invalid", "the signature does not match the body: check the secret the sender "
        + "signs with");
  }
}
