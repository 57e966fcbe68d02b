package dev.runway.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import org.junit.jupiter.api.Test;

/** Every per-client limit counts an IPv6 client by its /64, an IPv4 client by its address. */
class ClientAddressTest {
  @Test
  void ipv6_addresses_of_one_64_are_one_client() {
    assertEquals("2001:db8:1:2::/64", ClientAddress.of("2001:db8:1:2:aaaa:bbbb:cccc:dddd"));
    assertEquals(ClientAddress.of("2001:db8:1:2::1"), ClientAddress.of("[2001:db8:1:2:ffff::9]"));
    assertEquals(ClientAddress.of("2001:db8:1:2::1"), ClientAddress.of("2001:0db8:0001:0002:0:0:0:7%eth0"));
    assertNotEquals(ClientAddress.of("2001:db8:1:2::1"), ClientAddress.of("2001:db8:1:3::1"));
    assertEquals("0:0:0:0::/64", ClientAddress.of("::1"));
    assertEquals("ffff:ffff:ffff:ffff::/64", ClientAddress.of("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
  }

  @Test
  void ipv4_addresses_are_themselves_also_when_mapped_in_ipv6() {
    assertEquals("192.0.2.7", ClientAddress.of("192.0.2.7"));
    assertEquals("192.0.2.7", ClientAddress.of("::ffff:192.0.2.7"));
    assertNotEquals(ClientAddress.of("192.0.2.7"), ClientAddress.of("192.0.2.8"));
    assertEquals("unknown", ClientAddress.of("not:an:address:zz"));
    assertEquals("unknown", ClientAddress.of((String) null));
  }
}
