package dev.runway.outbound;

import java.net.InetAddress;
import java.util.Arrays;
import java.util.List;

/** The addresses Runway refuses to call for API users: anything that is not ordinary public unicast. */
public final class SpecialAddresses {
  private SpecialAddresses() {}

  /** The CIDR and name as the registry writes them, so the table can be checked against it line by line. */
  record Block(String cidr, String name, byte[] network, int length) {
    static Block of(String cidr, String name) {
      int slash = cidr.indexOf('/');
      byte[] network = parse(cidr.substring(0, slash));
      int length = Integer.parseInt(cidr.substring(slash + 1));
      if (length < 0 || length > network.length * 8) {
        throw new IllegalArgumentException("bad prefix length: " + cidr);
      }
      for (int bit = length; bit < network.length * 8; bit++) {
        if ((network[bit / 8] & (0x80 >> (bit % 8))) != 0) {
          throw new IllegalArgumentException("host bits set: " + cidr); // a typo would shift the block
        }
      }
      return new Block(cidr, name, network, length);
    }

    boolean contains(byte[] address) {
      if (address.length != network.length) {
        return false;
      }
      int whole = length / 8;
      for (int i = 0; i < whole; i++) {
        if (address[i] != network[i]) {
          return false;
        }
      }
      int mask = (0xff << (8 - length % 8)) & 0xff;
      return length % 8 == 0 || ((address[whole] ^ network[whole]) & mask) == 0;
    }
  }

  /**
   * Every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries (as of 2025), sub-entries
   * included: those marked globally reachable are anycast or infrastructure services, never a user's
   * tool, so they are refused too. Multicast and the deprecated IPv6 blocks follow each registry.
   */
  static final List<Block> TABLE = List.of(
      // IPv4 Special-Purpose Address Registry
      Block.of("0.0.0.0/8", "\"This network\""),
      Block.of("0.0.0.0/32", "\"This host on this network\""),
      Block.of("10.0.0.0/8", "Private-Use"),
      Block.of("100.64.0.0/10", "Shared Address Space"),
      Block.of("127.0.0.0/8", "Loopback"),
      Block.of("169.254.0.0/16", "Link Local"),
      Block.of("172.16.0.0/12", "Private-Use"),
      Block.of("192.0.0.0/24", "IETF Protocol Assignments"),
      Block.of("192.0.0.0/29", "IPv4 Service Continuity Prefix"),
      Block.of("192.0.0.8/32", "IPv4 dummy address"),
      Block.of("192.0.0.9/32", "Port Control Protocol Anycast"),
      Block.of("192.0.0.10/32", "Traversal Using Relays around NAT Anycast"),
      Block.of("192.0.0.170/32", "NAT64/DNS64 Discovery"),
      Block.of("192.0.0.171/32", "NAT64/DNS64 Discovery"),
      Block.of("192.0.2.0/24", "Documentation (TEST-NET-1)"),
      Block.of("192.31.196.0/24", "AS112-v4"),
      Block.of("192.52.193.0/24", "AMT"),
      Block.of("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)"),
      Block.of("192.88.99.2/32", "6a44-relay anycast address"),
      Block.of("192.168.0.0/16", "Private-Use"),
      Block.of("192.175.48.0/24", "Direct Delegation AS112 Service"),
      Block.of("198.18.0.0/15", "Benchmarking"),
      Block.of("198.51.100.0/24", "Documentation (TEST-NET-2)"),
      Block.of("203.0.113.0/24", "Documentation (TEST-NET-3)"),
      Block.of("240.0.0.0/4", "Reserved"),
      Block.of("255.255.255.255/32", "Limited Broadcast"),
      Block.of("224.0.0.0/4", "Multicast (RFC 5771)"),
      // IPv6 Special-Purpose Address Registry; its ::ffff:0:0/96 entry is IPV4_MAPPED below
      Block.of("::1/128", "Loopback Address"),
      Block.of("::/128", "Unspecified Address"),
      Block.of("64:ff9b::/96", "IPv4-IPv6 Translat."),
      Block.of("64:ff9b:1::/48", "IPv4-IPv6 Translat."),
      Block.of("100::/64", "Discard-Only Address Block"),
      Block.of("100:0:0:1::/64", "Dummy IPv6 Prefix"),
      Block.of("2001::/23", "IETF Protocol Assignments"),
      Block.of("2001::/32", "TEREDO"),
      Block.of("2001:1::1/128", "Port Control Protocol Anycast"),
      Block.of("2001:1::2/128", "Traversal Using Relays around NAT Anycast"),
      Block.of("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast"),
      Block.of("2001:2::/48", "Benchmarking"),
      Block.of("2001:3::/32", "AMT"),
      Block.of("2001:4:112::/48", "AS112-v6"),
      Block.of("2001:10::/28", "Deprecated (previously ORCHID)"),
      Block.of("2001:20::/28", "ORCHIDv2"),
      Block.of("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix"),
      Block.of("2001:db8::/32", "Documentation"),
      Block.of("2002::/16", "6to4"),
      Block.of("2620:4f:8000::/48", "Direct Delegation AS112 Service"),
      Block.of("3fff::/20", "Documentation"),
      Block.of("5f00::/16", "Segment Routing (SRv6) SIDs"),
      Block.of("fc00::/7", "Unique-Local"),
      Block.of("fe80::/10", "Link-Local Unicast"),
      Block.of("::/96", "IPv4-compatible Address (deprecated, RFC 4291)"),
      Block.of("fec0::/10", "Site-Local Unicast (deprecated, RFC 3879)"),
      Block.of("ff00::/8", "Multicast (RFC 4291)"));

  /**
   * The registry's IPv4-mapped entry. A connection to ::ffff:a.b.c.d goes to a.b.c.d, so that address is
   * judged. Java mostly hands these over as an Inet4Address already, but an Inet6Address can carry one.
   */
  static final Block IPV4_MAPPED = Block.of("::ffff:0:0/96", "IPv4-mapped Address");

  public static boolean isSpecial(InetAddress address) {
    byte[] bytes = address.getAddress();
    if (IPV4_MAPPED.contains(bytes)) {
      bytes = Arrays.copyOfRange(bytes, 12, 16);
    }
    for (Block block : TABLE) {
      if (block.contains(bytes)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The bytes of an IPv4 or IPv6 literal. Not InetAddress.getByName: given anything but a valid literal,
   * it asks DNS.
   */
  static byte[] parse(String literal) {
    if (literal.indexOf(':') < 0) {
      return ipv4(literal);
    }
    String[] halves = literal.split("::", -1);
    if (halves.length > 2 || halves.length == 2 && halves[0].indexOf('.') >= 0) {
      throw new IllegalArgumentException("not an IPv6 literal: " + literal);
    }
    byte[] head = groups(halves[0], literal);
    byte[] tail = halves.length == 2 ? groups(halves[1], literal) : new byte[0];
    boolean fits = halves.length == 2 ? head.length + tail.length <= 14 : head.length == 16;
    if (!fits) {
      throw new IllegalArgumentException("not an IPv6 literal: " + literal);
    }
    byte[] address = new byte[16];
    System.arraycopy(head, 0, address, 0, head.length);
    System.arraycopy(tail, 0, address, 16 - tail.length, tail.length);
    return address;
  }

  /** The last group may be dotted (::ffff:10.0.0.1): that is how mapped addresses are usually written. */
  private static byte[] groups(String part, String literal) {
    if (part.isEmpty()) {
      return new byte[0];
    }
    String[] groups = part.split(":", -1);
    String last = groups[groups.length - 1];
    boolean dotted = last.indexOf('.') >= 0;
    byte[] bytes = new byte[groups.length * 2 + (dotted ? 2 : 0)];
    for (int i = 0; i < groups.length - (dotted ? 1 : 0); i++) {
      if (!groups[i].matches("[0-9a-fA-F]{1,4}")) {
        throw new IllegalArgumentException("not an IPv6 literal: " + literal);
      }
      int group = Integer.parseInt(groups[i], 16);
      bytes[2 * i] = (byte) (group >> 8);
      bytes[2 * i + 1] = (byte) group;
    }
    if (dotted) {
      System.arraycopy(ipv4(last), 0, bytes, bytes.length - 4, 4);
    }
    return bytes;
  }

  private static byte[] ipv4(String literal) {
    String[] parts = literal.split("\\.", -1);
    if (parts.length != 4) {
      throw new IllegalArgumentException("not an IPv4 literal: " + literal);
    }
    byte[] bytes = new byte[4];
    for (int i = 0; i < 4; i++) {
      if (!parts[i].matches("[0-9]{1,3}") || Integer.parseInt(parts[i]) > 255) {
        throw new IllegalArgumentException("not an IPv4 literal: " + literal);
      }
      bytes[i] = (byte) Integer.parseInt(parts[i]);
    }
    return bytes;
  }
}
