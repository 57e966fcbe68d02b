package dev.runway.secret;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The hosts a secret may be sent to: exact host names (or IP literals) and {@code *.example.com}
 * wildcards, which match any name ending in {@code .example.com} but not {@code example.com} itself.
 * An empty list allows every host: the operator should set one for each secret.
 */
public record AllowedHosts(List<String> hosts) {
  public static final AllowedHosts ANY = new AllowedHosts(List.of());
  public static final int MAX_HOSTS = 50;
  private static final String LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
  private static final Pattern NAME = Pattern.compile("(?:\\*\\.)?" + LABEL + "(?:\\." + LABEL + ")*");
  private static final Pattern IPV6 = Pattern.compile("\\[[0-9a-f:.]{2,45}]");

  public AllowedHosts {
    hosts = List.copyOf(hosts);
  }

  /** The list at {@code param} (an array of host names, or null for none), or a 400 naming it. */
  public static AllowedHosts parse(JsonNode node, String param) {
    if (node == null || node.isNull()) {
      return ANY;
    }
    if (!node.isArray()) {
      throw DomainException.invalid(param, param + " must be an array of host names (api.example.com or "
          + "*.example.com), or [] for any host");
    }
    if (node.size() > MAX_HOSTS) {
      throw DomainException.invalid(param, param + " holds at most " + MAX_HOSTS + " hosts");
    }
    Set<String> hosts = new LinkedHashSet<>();
    for (int i = 0; i < node.size(); i++) {
      JsonNode entry = node.get(i);
      String host = entry.isTextual() ? normalize(entry.textValue()) : "";
      if (host.length() > 253 || !(NAME.matcher(host).matches() || IPV6.matcher(host).matches())) {
        throw DomainException.invalid(param, param + "[" + i + "] must be a host name such as api.example.com, "
            + "a wildcard such as *.example.com, or an IP address");
      }
      hosts.add(host);
    }
    return new AllowedHosts(new ArrayList<>(hosts));
  }

  /** The list as stored (a JSON array), or null for none. */
  public String toStored() {
    return hosts.isEmpty() ? null : Json.string(hosts);
  }

  public static AllowedHosts fromStored(String stored) {
    if (stored == null || stored.isEmpty()) {
      return ANY;
    }
    List<String> hosts = new ArrayList<>();
    Json.tree(stored).forEach(h -> hosts.add(h.asText()));
    return new AllowedHosts(hosts);
  }

  /** Whether a request to {@code host} (as {@link java.net.URI#getHost()} gives it) may carry the secret. */
  public boolean allows(String host) {
    if (hosts.isEmpty()) {
      return true;
    }
    String target = host == null ? "" : normalize(host);
    for (String allowed : hosts) {
      if (allowed.startsWith("*.") ? target.endsWith(allowed.substring(1)) && target.length() > allowed.length() - 1
          : allowed.equals(target)) {
        return true;
      }
    }
    return false;
  }

  private static String normalize(String host) {
    String lower = host.trim().toLowerCase(Locale.ROOT);
    return lower.endsWith(".") ? lower.substring(0, lower.length() - 1) : lower;
  }
}
