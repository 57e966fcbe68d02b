package dev.runway.outbound;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.outbound.SpecialAddresses.Block;
import java.math.BigInteger;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The outbound address check, entry by entry against the IANA special-purpose registries. */
class SpecialAddressesTest {

  static Stream<Named<Block>> entries() {
    return SpecialAddresses.TABLE.stream().map(block -> Named.of(describe(block), block));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("entries")
  void every_registry_entry_is_refused_from_first_to_last_address(Block block) throws Exception {
    for (byte[] address : List.of(first(block), middle(block), last(block))) {
      assertTrue(SpecialAddresses.isSpecial(InetAddress.getByAddress(address)),
          () -> text(address) + " is in " + describe(block) + " but was allowed");
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("entries")
  void the_addresses_just_outside_an_entry_are_allowed_unless_another_entry_holds_them(Block block)
      throws Exception {
    for (byte[] neighbour : neighbours(block)) {
      List<String> holders = SpecialAddresses.TABLE.stream().filter(other -> other.contains(neighbour))
          .map(SpecialAddressesTest::describe).collect(Collectors.toList());
      assertEquals(!holders.isEmpty(), SpecialAddresses.isSpecial(InetAddress.getByAddress(neighbour)),
          () -> text(neighbour) + ", next to " + describe(block) + ", is held by " + holders);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"8.8.8.8", "1.1.1.1", "93.184.215.14", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e"})
  void ordinary_public_addresses_are_allowed(String literal) throws Exception {
    assertFalse(SpecialAddresses.isSpecial(address(literal)), literal);
  }

  @ParameterizedTest
  @ValueSource(strings = {"198.18.0.1", "198.19.255.254", "192.0.0.1", "192.0.0.170", "64:ff9b::7f00:1", "::7f00:1",
      "::ffff:127.0.0.1", "::ffff:10.0.0.1"})
  void the_addresses_from_the_security_report_are_refused(String literal) throws Exception {
    assertTrue(SpecialAddresses.isSpecial(address(literal)), literal);
  }

  @Test
  void an_ipv4_mapped_address_is_judged_by_the_ipv4_address_it_carries_in_either_form_java_gives_it()
      throws Exception {
    List<byte[]> special = new ArrayList<>();
    for (Block block : SpecialAddresses.TABLE) {
      if (block.network().length == 4) {
        special.addAll(List.of(first(block), middle(block), last(block)));
      }
    }
    for (byte[] ipv4 : special) {
      assertMappedIs(true, ipv4);
    }
    for (String literal : new String[] {"8.8.8.8", "1.1.1.1", "93.184.215.14"}) {
      assertMappedIs(false, SpecialAddresses.parse(literal));
    }
    for (String outside : new String[] {"::fffe:ffff:ffff", "::1:0:0:0"}) {
      assertFalse(SpecialAddresses.isSpecial(address(outside)), outside + " is next to " + describe(SpecialAddresses.IPV4_MAPPED));
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"10.0.0.1", "255.255.255.255", "::", "::1", "1::", "2001:db8::1", "fe80::1:2:3:4",
      "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "::7f00:1", "64:ff9b::127.0.0.1", "2A00:1450:4001:80B::200E"})
  void the_literal_parser_reads_addresses_as_java_does(String literal) throws Exception {
    // valid literals only: InetAddress.getByName asks DNS for anything else
    assertArrayEquals(InetAddress.getByName(literal).getAddress(), SpecialAddresses.parse(literal), literal);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "1.2.3", "1.2.3.4.5", "256.0.0.1", "1.2.3.-4", "example.com", "1:2:3:4:5:6:7:8:9",
      "1::2::3", ":1::", "12345::", "1.2.3.4::", "::g", "1:2:3:4:5:6:7:8::"})
  void the_literal_parser_rejects_anything_but_a_literal(String literal) {
    assertThrows(IllegalArgumentException.class, () -> SpecialAddresses.parse(literal), literal);
  }

  @Test
  void a_table_entry_with_host_bits_set_is_rejected() {
    assertThrows(IllegalArgumentException.class, () -> Block.of("192.0.0.170/24", "typo"));
  }

  private static void assertMappedIs(boolean special, byte[] ipv4) throws UnknownHostException {
    byte[] mapped = new byte[16];
    mapped[10] = (byte) 0xff;
    mapped[11] = (byte) 0xff;
    System.arraycopy(ipv4, 0, mapped, 12, 4);
    InetAddress asJavaParsesIt = InetAddress.getByAddress(mapped);
    assertInstanceOf(Inet4Address.class, asJavaParsesIt, "Java turns ::ffff:a.b.c.d into a.b.c.d");
    Inet6Address asInet6 = Inet6Address.getByAddress(null, mapped, -1);
    assertEquals(special, SpecialAddresses.isSpecial(asJavaParsesIt), () -> text(mapped) + " as Inet4Address");
    assertEquals(special, SpecialAddresses.isSpecial(asInet6), () -> text(mapped) + " as Inet6Address");
  }

  private static InetAddress address(String literal) throws UnknownHostException {
    return InetAddress.getByAddress(SpecialAddresses.parse(literal));
  }

  private static String describe(Block block) {
    return block.cidr() + " (" + block.name() + ")";
  }

  private static byte[] first(Block block) {
    return block.network().clone();
  }

  /** The first address of the entry's upper half; for a single address, that address. */
  private static byte[] middle(Block block) {
    byte[] middle = first(block);
    if (block.length() < middle.length * 8) {
      middle[block.length() / 8] |= (byte) (0x80 >> (block.length() % 8));
    }
    return middle;
  }

  private static byte[] last(Block block) {
    byte[] last = first(block);
    for (int bit = block.length(); bit < last.length * 8; bit++) {
      last[bit / 8] |= (byte) (0x80 >> (bit % 8));
    }
    return last;
  }

  /** The address just below the entry and the one just above it, where the address space has them. */
  private static List<byte[]> neighbours(Block block) {
    List<byte[]> neighbours = new ArrayList<>();
    BigInteger below = new BigInteger(1, first(block)).subtract(BigInteger.ONE);
    BigInteger above = new BigInteger(1, last(block)).add(BigInteger.ONE);
    int size = block.network().length;
    if (below.signum() >= 0) {
      neighbours.add(bytes(below, size));
    }
    if (above.bitLength() <= size * 8) {
      neighbours.add(bytes(above, size));
    }
    return neighbours;
  }

  private static byte[] bytes(BigInteger value, int size) {
    byte[] raw = value.toByteArray();
    byte[] bytes = new byte[size];
    int copied = Math.min(raw.length, size);
    System.arraycopy(raw, raw.length - copied, bytes, size - copied, copied);
    return bytes;
  }

  private static String text(byte[] address) {
    try {
      // Inet6Address keeps ::ffff:a.b.c.d in IPv6 form, so the message shows the address that was tested
      return (address.length == 16 ? Inet6Address.getByAddress(null, address, -1) : InetAddress.getByAddress(address))
          .getHostAddress();
    } catch (UnknownHostException e) {
      throw new AssertionError(e);
    }
  }
}
