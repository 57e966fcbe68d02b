package dev.runway.engine;

import dev.runway.outbound.CallTargets;
import dev.runway.secret.AllowedHosts;
import dev.runway.secret.SecretReferences;
import dev.runway.secret.SecretSource;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Where a call to a caller's endpoint (an http step, an agent's tool) goes: its URL and headers
 * with the workspace's secrets put in, read at call time so that their values live only in the call,
 * and only when the URL's host is one each secret may be sent to (its allowed_hosts).
 */
record ResolvedCall(URI uri, Map<String, String> headers) {

  /**
   * Why the call cannot be made: a secret that cannot be read or may not go to the URL's host, or a
   * value a header cannot carry.
   */
  static final class Unresolvable extends Exception {
    Unresolvable(String message) {
      super(message, null, false, false);
    }
  }

  /** The URL (secrets URL-encoded into its query string) and headers; a mutable map, for the caller's own headers. */
  static ResolvedCall of(SecretSource secrets, String workspaceId, String url, Map<String, String> headers,
      Set<String> secretNames) throws Unresolvable {
    Map<String, SecretSource.Usable> usable;
    try {
      usable = secrets.values(workspaceId, secretNames);
    } catch (SecretSource.Unavailable e) {
      throw new Unresolvable(e.getMessage());
    }
    Map<String, String> values = new HashMap<>();
    usable.forEach((name, secret) -> values.put(name, secret.value()));
    Map<String, String> resolved = new LinkedHashMap<>();
    for (Map.Entry<String, String> h : headers.entrySet()) {
      String value = SecretReferences.resolve(h.getValue(), values, v -> v);
      if (!CallTargets.headerValue(value)) {
        throw new Unresolvable("header " + h.getKey()
            + ": a secret it refers to holds characters a header cannot carry (outside Latin-1)");
      }
      resolved.put(h.getKey(), value);
    }
    URI uri = URI.create(SecretReferences.resolve(url, values, v -> URLEncoder.encode(v, StandardCharsets.UTF_8)));
    String host = uri.getHost() == null ? "" : uri.getHost();
    for (String name : new TreeSet<>(secretNames)) {
      AllowedHosts allowed = usable.get(name).allowedHosts();
      if (!allowed.allows(host)) {
        throw new Unresolvable("secret " + name + " may not be sent to " + host + ": its allowed_hosts are "
            + String.join(", ", allowed.hosts()) + " (nothing was sent)");
      }
    }
    return new ResolvedCall(uri, resolved);
  }
}
