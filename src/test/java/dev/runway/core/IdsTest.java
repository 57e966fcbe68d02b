package dev.runway.core;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

class IdsTest {
  private static final long T = 1_795_000_000_000L;

  @Test
  void ids_made_in_one_millisecond_sort_in_the_order_they_were_made() {
    Ids.Sequence sequence = new Ids.Sequence();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      ids.add(sequence.next("run", T));
    }
    for (int i = 1; i < ids.size(); i++) {
      assertTrue(ids.get(i - 1).compareTo(ids.get(i)) < 0, ids.get(i - 1) + " then " + ids.get(i));
      assertTrue(Ids.looksLike("run", ids.get(i)), ids.get(i));
    }
    // The first 10 characters after the prefix are the millisecond.
    String time = ids.get(0).substring(4, 14);
    assertTrue(ids.stream().allMatch(id -> id.substring(4, 14).equals(time)), "one millisecond: " + ids);
  }

  @Test
  void derived_ids_are_the_same_each_time_and_sort_by_their_source_then_their_index() {
    Ids.Sequence sequence = new Ids.Sequence();
    String first = sequence.next("rrq", T);
    String second = sequence.next("rrq", T);
    assertEquals(Ids.derived("run", first, 3), Ids.derived("run", first, 3));
    List<String> derived = List.of(Ids.derived("run", first, 0), Ids.derived("run", first, 1),
        Ids.derived("run", first, 65535), Ids.derived("run", second, 0));
    for (int i = 1; i < derived.size(); i++) {
      assertTrue(derived.get(i - 1).compareTo(derived.get(i)) < 0, derived.toString());
      assertTrue(Ids.looksLike("run", derived.get(i)), derived.get(i));
    }
    assertEquals(first.substring(4, 14), derived.get(0).substring(4, 14), "the source's millisecond");
  }

  @Test
  void a_clock_that_steps_back_does_not_make_an_id_sort_before_the_last_one() {
    Ids.Sequence sequence = new Ids.Sequence();
    String later = sequence.next("evt", T);
    String earlier = sequence.next("evt", T - 5_000);
    assertTrue(later.compareTo(earlier) < 0, later + " then " + earlier);
  }

  @Test
  void a_new_millisecond_carries_its_time_and_fresh_random_bits() {
    Ids.Sequence sequence = new Ids.Sequence();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      ids.add(sequence.next("key", T + i));
    }
    List<String> randomParts = new ArrayList<>();
    for (int i = 1; i < ids.size(); i++) {
      String a = ids.get(i - 1);
      String b = ids.get(i);
      assertTrue(a.substring(4, 14).compareTo(b.substring(4, 14)) < 0, "the time moves on: " + a + " then " + b);
      randomParts.add(b.substring(14));
    }
    // Counting on from the last id would leave the random parts ascending; drawn anew, 19 of them
    // ascend by chance once in 19! times.
    List<String> sorted = new ArrayList<>(randomParts);
    Collections.sort(sorted);
    assertNotEquals(sorted, randomParts, "random bits drawn anew in each millisecond: " + ids);
    // Two sequences (two processes) in the same millisecond do not make the same id.
    assertNotEquals(new Ids.Sequence().next("key", T), new Ids.Sequence().next("key", T));
  }

  @Test
  void the_first_id_of_a_millisecond_sorts_after_every_id_made_before_it() {
    for (int i = 0; i < 200; i++) {
      Ids.Sequence sequence = new Ids.Sequence();
      String before = sequence.next("del", T - 1);
      String at = new Ids.Sequence().next("del", T);
      assertTrue(before.compareTo(Ids.firstOf("del", T)) < 0, before);
      assertTrue(at.compareTo(Ids.firstOf("del", T)) >= 0, at);
      assertTrue(at.compareTo(Ids.firstOf("del", T + 1)) < 0, at);
      assertTrue(Ids.looksLike("del", Ids.firstOf("del", T)));
    }
  }
}
