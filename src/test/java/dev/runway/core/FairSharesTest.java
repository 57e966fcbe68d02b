package dev.runway.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FairSharesTest {
  @Test
  void a_workspace_alone_leaves_room_for_a_newcomer() {
    assertEquals(50, FairShares.share(100, 1));
    assertTrue(FairShares.mayTakeAnother(100, 1, 49, Long.MAX_VALUE));
    assertFalse(FairShares.mayTakeAnother(100, 1, 50, Long.MAX_VALUE));
  }

  @Test
  void a_workspace_holding_none_may_always_take_one() {
    assertTrue(FairShares.mayTakeAnother(3, 100, 0, 1));
    assertTrue(FairShares.mayTakeAnother(1, 1, 0, Long.MAX_VALUE));
  }

  @Test
  void the_share_is_at_least_one() {
    assertEquals(1, FairShares.share(3, 5));
    assertFalse(FairShares.mayTakeAnother(3, 5, 1, Long.MAX_VALUE));
  }

  @Test
  void the_configured_cap_bounds_the_share() {
    assertEquals(10, FairShares.limit(100, 1, 10));
    assertFalse(FairShares.mayTakeAnother(100, 1, 10, 10));
    assertTrue(FairShares.mayTakeAnother(100, 1, 9, 10));
  }

  @Test
  void workspaces_taking_in_turn_end_with_about_equal_shares_and_a_newcomer_still_finds_room() {
    long total = 120;
    Map<String, Long> held = new HashMap<>();
    int used = 0;
    // Four workspaces take places in turn for as long as the rule lets them.
    boolean moved = true;
    while (moved && used < total) {
      moved = false;
      for (String ws : new String[] {"a", "b", "c", "d"}) {
        long mine = held.getOrDefault(ws, 0L);
        int holders = held.size();
        if (used < total && FairShares.mayTakeAnother(total, holders, mine, Long.MAX_VALUE)) {
          held.merge(ws, 1L, Long::sum);
          used++;
          moved = true;
        }
      }
    }
    held.values().forEach(n -> assertEquals(24, n, "each of 4 gets total/5: " + held));
    assertTrue(used < total, "places are left for a fifth workspace");
    assertEquals(Set.of("a", "b", "c", "d"), FairShares.atTheirShare(held, total, Long.MAX_VALUE));
    assertTrue(FairShares.mayTakeAnother(total, held.size(), 0, Long.MAX_VALUE));
  }

  @Test
  void one_greedy_workspace_gives_way_as_others_come() {
    long total = 100;
    Map<String, Long> held = new HashMap<>(Map.of("greedy", 50L));
    held.put("b", 1L);
    // With two holders the share is 33: the greedy one takes no more until it is below it.
    assertEquals(Set.of("greedy"), FairShares.atTheirShare(held, total, Long.MAX_VALUE));
    held.put("greedy", 32L);
    assertEquals(Set.of(), FairShares.atTheirShare(held, total, Long.MAX_VALUE));
  }
}
