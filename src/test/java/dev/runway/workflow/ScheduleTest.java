package dev.runway.workflow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** A schedule's times, with a clock the test chooses: cron in a time zone, daylight saving, every. */
class ScheduleTest {
  private static Schedule parse(String trigger) {
    return Trigger.parseAll(Json.tree("[" + trigger + "]")).schedules().get(0);
  }

  private static Instant at(String time) {
    return Instant.parse(time);
  }

  @Test
  void a_weekday_cron_in_paris_runs_at_nine_paris_time_and_skips_the_weekend() {
    Schedule s = parse("{\"schedule\": {\"cron\": \"0 9 * * MON-FRI\", \"timezone\": \"Europe/Paris\"}}");
    // Friday 2026-11-27 10:00 Paris (UTC+1): next is Monday 30 November 09:00 Paris = 08:00Z.
    assertEquals(at("2026-11-30T08:00:00Z"), s.next(at("2026-11-27T09:00:00Z")));
    assertEquals(at("2026-11-27T08:00:00Z"), s.next(at("2026-11-27T07:59:59.999Z")));
    // In summer Paris is UTC+2.
    assertEquals(at("2026-07-01T07:00:00Z"), s.next(at("2026-07-01T06:00:00Z")));
    assertEquals(at("2026-11-27T08:00:00Z"), s.latest(at("2026-11-29T12:00:00Z")));
    assertEquals(at("2026-11-27T08:00:00Z"), s.latest(at("2026-11-27T08:00:00Z")));
  }

  @Test
  void a_time_in_the_spring_forward_gap_runs_once_that_day() {
    // Paris, 2026-03-29: 02:00 jumps to 03:00 (01:00Z). A 02:30 job runs once, at the gap's end.
    Schedule s = parse("{\"schedule\": {\"cron\": \"30 2 * * *\", \"timezone\": \"Europe/Paris\"}}");
    Instant first = s.next(at("2026-03-28T12:00:00Z"));
    assertTrue(!first.isBefore(at("2026-03-29T01:00:00Z")) && first.isBefore(at("2026-03-29T02:00:00Z")),
        "the 02:30 of the spring-forward day runs between 03:00 and 04:00 Paris time: " + first);
    assertEquals(at("2026-03-30T00:30:00Z"), s.next(first), "then the next day's 02:30 (UTC+2)");
  }

  @Test
  void a_time_that_the_fall_back_repeats_runs_once() {
    // Paris, 2026-10-25: 03:00 goes back to 02:00 (01:00Z), so 02:30 comes at 00:30Z and at 01:30Z.
    Schedule s = parse("{\"schedule\": {\"cron\": \"30 2 * * *\", \"timezone\": \"Europe/Paris\"}}");
    Instant first = s.next(at("2026-10-24T12:00:00Z"));
    assertEquals(at("2026-10-25T00:30:00Z"), first);
    assertEquals(at("2026-10-26T01:30:00Z"), s.next(first), "the repeat is skipped: next is the 26th (UTC+1)");
  }

  @Test
  void every_counts_from_the_epoch() {
    Schedule s = parse("{\"schedule\": {\"every\": \"15m\"}, \"project\": \"ops\", \"inputs\": {\"a\": 1}}");
    assertEquals(at("2026-11-27T10:15:00Z"), s.next(at("2026-11-27T10:07:12Z")));
    assertEquals(at("2026-11-27T10:30:00Z"), s.next(at("2026-11-27T10:15:00Z")));
    assertEquals(at("2026-11-27T10:00:00Z"), s.latest(at("2026-11-27T10:14:59Z")));
    assertEquals("ops", s.project());
    assertEquals(Json.tree("{\"schedule\": {\"every\": \"15m\", \"missed\": \"run_once\"}, \"project\": \"ops\", "
        + "\"inputs\": {\"a\": 1}}"), s.toJson());
  }

  @Test
  void defaults_are_shown_and_crm_triggers_keep_their_place() {
    Trigger.Triggers t = Trigger.parseAll(Json.tree("[{\"crm\": \"contacts\", \"on\": [\"created\"]}, "
        + "{\"schedule\": {\"cron\": \"*/5 * * * *\", \"missed\": \"skip\"}}]"));
    assertEquals(1, t.crm().size());
    assertEquals(1, t.schedules().get(0).position());
    assertEquals(Json.tree("[{\"crm\": \"contacts\", \"on\": [\"created\"], \"project\": \"crm\"}, "
        + "{\"schedule\": {\"cron\": \"*/5 * * * *\", \"timezone\": \"UTC\", \"missed\": \"skip\"}, "
        + "\"project\": \"schedule\", \"inputs\": {}}]"), Json.tree(t.json()));
  }

  @Test
  void bad_schedules_are_400s_naming_the_field() {
    assertField("triggers[0].schedule.cron", "{\"schedule\": {\"cron\": \"61 * * * *\"}}");
    assertField("triggers[0].schedule.cron", "{\"schedule\": {\"cron\": \"0 9 * *\"}}");
    assertField("triggers[0].schedule.cron", "{\"schedule\": {\"cron\": \"0 0 30 2 *\"}}");
    assertField("triggers[0].schedule.cron", "{\"schedule\": {}}");
    assertField("triggers[0].schedule.cron", "{\"schedule\": {\"cron\": \"* * * * *\", \"every\": \"1m\"}}");
    assertField("triggers[0].schedule.timezone", "{\"schedule\": {\"cron\": \"* * * * *\", \"timezone\": \"Mars/Olympus\"}}");
    assertField("triggers[0].schedule.timezone", "{\"schedule\": {\"every\": \"1m\", \"timezone\": \"UTC\"}}");
    assertField("triggers[0].schedule.every", "{\"schedule\": {\"every\": \"15 minutes\"}}");
    assertField("triggers[0].schedule.every", "{\"schedule\": {\"every\": \"0s\"}}");
    assertField("triggers[0].schedule.every", "{\"schedule\": {\"every\": \"400d\"}}");
    assertField("triggers[0].schedule.missed", "{\"schedule\": {\"every\": \"1m\", \"missed\": \"all\"}}");
    assertField("triggers[0].schedule", "{\"schedule\": \"daily\"}");
    assertField("triggers[0].schedule.at", "{\"schedule\": {\"every\": \"1m\", \"at\": \"9:00\"}}");
    assertField("triggers[0].inputs", "{\"schedule\": {\"every\": \"1m\"}, \"inputs\": [1]}");
    assertField("triggers[0].project", "{\"schedule\": {\"every\": \"1m\"}, \"project\": \"Not A Slug\"}");
    assertField("triggers[0].on", "{\"schedule\": {\"every\": \"1m\"}, \"on\": [\"created\"]}");
  }

  private static void assertField(String param, String trigger) {
    DomainException e = assertThrows(DomainException.class, () -> parse(trigger), trigger);
    assertEquals(param, e.param(), e.getMessage());
  }

  @Test
  void a_leap_day_cron_waits_for_the_next_leap_year_and_every_floors_before_the_epoch() {
    Schedule s = new Schedule(0, "0 0 29 2 *", "UTC", null, true, "p", (ObjectNode) Json.tree("{}"));
    assertEquals(at("2028-02-29T00:00:00Z"), s.next(at("2026-11-27T00:00:00Z")));
    Schedule daily = new Schedule(0, null, null, "1d", true, "p", null);
    assertEquals(at("1969-12-31T00:00:00Z"), daily.latest(at("1969-12-31T23:59:59Z")));
  }
}
