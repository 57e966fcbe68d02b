package dev.runway.http;

import java.util.function.IntSupplier;

/**
 * The server's address as callers reach it, for the URLs Runway hands out (signal URLs, hook URLs):
 * {@code http.public_url} when set, else {@code http://<http.host>:<port>} with the port it listens
 * on (known only once started: 0 picks one) and 127.0.0.1 for a host of 0.0.0.0.
 */
public final class PublicUrl {
  private final String configured;
  private final String host;
  private final IntSupplier port;

  /** {@code configured}: http.public_url ("" for none); {@code port}: the port listened on, once known. */
  public PublicUrl(String configured, String host, IntSupplier port) {
    this.configured = configured.endsWith("/") ? configured.substring(0, configured.length() - 1) : configured;
    this.host = host.equals("0.0.0.0") || host.equals("::") ? "127.0.0.1" : host;
    this.port = port;
  }

  /** The address, without a trailing slash: {@code https://runway.example.com} or {@code http://127.0.0.1:8080}. */
  public String base() {
    if (!configured.isEmpty()) {
      return configured;
    }
    String shown = host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
    return "http://" + shown + ":" + port.getAsInt();
  }
}
