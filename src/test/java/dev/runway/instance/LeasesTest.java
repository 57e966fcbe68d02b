package dev.runway.instance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The lease and liveness rules, on a clock the test moves. */
class LeasesTest {
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);
  private final Leases leases = new Leases("ins_a", Duration.ofSeconds(10), Duration.ofSeconds(3), clock::get);

  private void advance(Duration d) {
    clock.addAndGet(d.toNanos());
  }

  @Test
  void live_while_the_last_renewal_is_younger_than_the_lease_less_one_beat() {
    assertTrue(leases.live());
    advance(Duration.ofMillis(6_999));
    assertTrue(leases.live());
    advance(Duration.ofMillis(1));
    assertFalse(leases.live(), "7 s after the last renewal, one beat short of the lease, it takes no new work");
    assertFalse(leases.lapsed(), "but what it holds may still commit: its leases have not lapsed");
    advance(Duration.ofSeconds(3));
    assertTrue(leases.lapsed(), "a whole lease since the last renewal: every lease held has lapsed");
    leases.confirmed(clock.get());
    assertTrue(leases.live());
    assertFalse(leases.lapsed());
  }

  @Test
  void a_hold_commits_only_while_held_in_its_epoch_and_live() {
    Leases.Hold hold = leases.hold(Leases.RUNS, "run_1", "ins_a");
    assertTrue(leases.holds(hold));
    assertTrue(leases.holds(Leases.RUNS, "run_1", "ins_a"));
    assertFalse(leases.holds(Leases.RUNS, "run_1", "ins_a:7"), "another owner's lease on the row");
    assertEquals(List.of(hold), leases.current());

    advance(Duration.ofSeconds(8)); // paused past its margin: its leases may have lapsed
    assertFalse(leases.live(), "it takes no new work");
    assertEquals(1, leases.lapse(), "the next beat gives up what it held");
    leases.confirmed(clock.get());
    assertFalse(leases.holds(hold), "given up: it does not commit, even once live again");
    assertTrue(leases.current().isEmpty(), "and its lease is no longer renewed");

    Leases.Hold again = leases.hold(Leases.RUNS, "run_1", "ins_a");
    assertTrue(leases.holds(again), "claimed anew, it is held in the new epoch");
    assertFalse(leases.holds(hold));
  }

  @Test
  void a_released_hold_is_no_longer_renewed_nor_committed() {
    Leases.Hold hold = leases.hold(Leases.DELIVERIES, "wd_1", "ins_a:3");
    leases.release(Leases.DELIVERIES, "wd_1", "ins_a:4"); // not its owner: kept
    assertTrue(leases.holds(hold));
    leases.release(Leases.DELIVERIES, "wd_1", "ins_a:3");
    assertFalse(leases.holds(hold));
    assertTrue(leases.current().isEmpty());
  }

  @Test
  void a_beat_is_at_most_a_third_of_the_lease_and_must_leave_a_margin() {
    assertEquals(Duration.ofSeconds(3), Leases.beatFor(Duration.ofSeconds(3), Duration.ofSeconds(10)));
    assertEquals(Duration.ofSeconds(1).dividedBy(3), Leases.beatFor(Duration.ofSeconds(3), Duration.ofSeconds(1)));
    assertThrows(IllegalArgumentException.class,
        () -> new Leases("ins_b", Duration.ofSeconds(2), Duration.ofMillis(1500), clock::get));
  }

  @Test
  void takeovers_are_counted_by_table() {
    leases.tookOver(Leases.RUNS, 3);
    leases.tookOver(Leases.RUNS, 0);
    leases.tookOver(Leases.DELIVERIES, 2);
    assertEquals(3, leases.takeovers(Leases.RUNS));
    assertEquals(2, leases.takeovers(Leases.DELIVERIES));
    assertEquals(0, leases.takeovers(Leases.REQUESTS));
  }
}
