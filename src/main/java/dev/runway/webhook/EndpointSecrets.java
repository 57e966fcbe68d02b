package dev.runway.webhook;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;

/** Each endpoint's live signing secrets, decrypted once per stored value rather than at each attempt. */
final class EndpointSecrets {
  /** Endpoints whose decrypted secrets are kept; past it the keeping starts afresh. */
  private static final int MAX_KEPT = 10_000;

  /** The stored secrets an endpoint's live secrets were decrypted from, and those. */
  private record Kept(String secret, String previousSecret, boolean previousLive, List<String> live) {}

  private final BiFunction<WebhookEndpoint, Instant, List<String>> decrypt;
  private final Map<String, Kept> kept = new ConcurrentHashMap<>();

  /** {@code decrypt}: the endpoint's live secrets at a time, decrypted from what it stores. */
  EndpointSecrets(BiFunction<WebhookEndpoint, Instant, List<String>> decrypt) {
    this.decrypt = decrypt;
  }

  /** The endpoint's live secrets at {@code now}: its secret, and its previous one while that is still live. */
  List<String> live(WebhookEndpoint e, Instant now) {
    boolean previousLive = e.previousSecret() != null && e.previousSecretUntil() != null
        && e.previousSecretUntil().isAfter(now);
    Kept k = kept.get(e.id());
    if (k == null || !k.secret().equals(e.secret()) || !Objects.equals(k.previousSecret(), e.previousSecret())
        || k.previousLive() != previousLive) {
      if (kept.size() >= MAX_KEPT) {
        kept.clear();
      }
      k = new Kept(e.secret(), e.previousSecret(), previousLive, decrypt.apply(e, now));
      kept.put(e.id(), k);
    }
    return k.live();
  }
}
