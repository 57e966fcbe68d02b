package dev.runway.run;

import dev.runway.core.Sha256;
import java.util.Base64;
import java.util.function.BiFunction;
import java.util.function.Supplier;

/**
 * The one-use signal URLs of runs' wait steps ({@code {{run.signal_url.<name>}}}):
 * {@code <public url>/signals/<token>}, the token 256 bits made by a MAC under the server's secrets
 * key of the run's id and the name. So every instance makes the same URL for a run and name, after
 * a restart too, and nothing but the token's SHA-256 is stored (a row made with the run, see
 * {@link RunSignals}): the URL is a capability, no API key needed.
 */
public final class SignalUrls {
  /** No URLs (machines made outside a server): templates see no run.signal_url. */
  public static final SignalUrls NONE = new SignalUrls(() -> "", null);

  private final Supplier<String> base;
  private final BiFunction<String, String, byte[]> mac;

  /** {@code base}: the server's public address; {@code mac}: a MAC under a server key, by purpose and message. */
  public SignalUrls(Supplier<String> base, BiFunction<String, String, byte[]> mac) {
    this.base = base;
    this.mac = mac;
  }

  boolean enabled() {
    return mac != null;
  }

  /** The token of run {@code runId}'s URL for signal {@code name}. */
  String token(String runId, String name) {
    return Base64.getUrlEncoder().withoutPadding().encodeToString(mac.apply("signal urls", runId + "\n" + name));
  }

  /** The URL that sends signal {@code name} to run {@code runId}. */
  String url(String runId, String name) {
    return base.get() + "/signals/" + token(runId, name);
  }

  /** What is stored of a token, and looked up by: its SHA-256. */
  static String hash(String token) {
    return Sha256.hex(token);
  }
}
