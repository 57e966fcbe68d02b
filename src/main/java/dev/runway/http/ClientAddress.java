package dev.runway.http;

import io.javalin.http.Context;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import org.eclipse.jetty.server.Request;

/**
 * The name every per-client limit counts a client by: its IPv4 address, or the /64 network of its
 * IPv6 address (one host usually holds a whole /64, so counting its addresses one by one let it
 * pass any limit, and fill the limiters with names). At most 24 characters.
 */
public final class ClientAddress {
  private ClientAddress() {}

  public static String of(Context ctx) {
    return of(ctx.ip());
  }

  public static String of(Request request) {
    return of(Request.getRemoteAddr(request));
  }

  /** The client's name for an address as Jetty gives it ("192.0.2.7", "[2001:db8::1]", "fe80::1%eth0"). */
  public static String of(String address) {
    if (address == null || address.isEmpty()) {
      return "unknown";
    }
    String a = address;
    if (a.startsWith("[") && a.endsWith("]")) {
      a = a.substring(1, a.length() - 1);
    }
    int zone = a.indexOf('%');
    if (zone >= 0) {
      a = a.substring(0, zone);
    }
    if (a.indexOf(':') < 0) {
      return a.length() <= 24 ? a : a.substring(0, 24); // IPv4 (Jetty gives only numeric addresses)
    }
    try {
      InetAddress parsed = InetAddress.getByName("[" + a + "]"); // in brackets: parsed, never looked up
      if (!(parsed instanceof Inet6Address)) {
        return parsed.getHostAddress(); // an IPv4-mapped address is the IPv4 client it maps
      }
      byte[] bytes = parsed.getAddress();
      StringBuilder net = new StringBuilder(24);
      for (int i = 0; i < 8; i += 2) {
        net.append(Integer.toHexString(((bytes[i] & 0xff) << 8) | (bytes[i + 1] & 0xff))).append(':');
      }
      return net.append(":/64").toString();
    } catch (UnknownHostException e) {
      return "unknown";
    }
  }
}
