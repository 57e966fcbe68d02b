package dev.runway.secret;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.core.Json;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which hosts a secret's allowed_hosts let it go to. */
class AllowedHostsTest {
  private static AllowedHosts of(String json) {
    return AllowedHosts.parse(Json.tree(json), "allowed_hosts");
  }

  @Test
  void exact_names_match_whatever_their_case_or_a_trailing_dot() {
    AllowedHosts hosts = of("[\"API.stripe.com\", \"203.0.113.7\", \"[2001:db8::1]\"]");
    assertEquals(List.of("api.stripe.com", "203.0.113.7", "[2001:db8::1]"), hosts.hosts());
    assertTrue(hosts.allows("api.stripe.com"));
    assertTrue(hosts.allows("Api.Stripe.COM."));
    assertTrue(hosts.allows("203.0.113.7"));
    assertTrue(hosts.allows("[2001:db8::1]"));
    assertFalse(hosts.allows("stripe.com"));
    assertFalse(hosts.allows("api.stripe.com.evil.example"));
    assertFalse(hosts.allows("evilapi.stripe.com"));
    assertFalse(hosts.allows(""));
    assertFalse(hosts.allows(null));
  }

  @Test
  void a_wildcard_matches_names_under_the_domain_but_not_the_domain_itself() {
    AllowedHosts hosts = of("[\"*.stripe.com\"]");
    assertTrue(hosts.allows("api.stripe.com"));
    assertTrue(hosts.allows("a.b.stripe.com"));
    assertFalse(hosts.allows("stripe.com"));
    assertFalse(hosts.allows("evilstripe.com"));
    assertFalse(hosts.allows("stripe.com.evil.example"));
  }

  @Test
  void an_empty_list_allows_any_host_and_is_stored_as_null() {
    assertTrue(of("[]").allows("anything.example"));
    assertTrue(of("null").allows("anything.example"));
    assertNull(of("[]").toStored());
    assertEquals(of("[\"a.example.com\",\"*.b.example\"]"),
        AllowedHosts.fromStored(of("[\"a.example.com\",\"*.b.example\"]").toStored()));
  }
}
