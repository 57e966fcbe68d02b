package dev.runway.workflow;

import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.JsonFields;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.zone.ZoneOffsetTransition;
import java.time.ZonedDateTime;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A workflow trigger that starts a run at scheduled times: {@code {"schedule": {"cron": "0 9 * *
 * MON-FRI", "timezone": "Europe/Paris"}, "project": "ops", "inputs": {…}}}, or {@code "every":
 * "15m"} instead of the cron (intervals counted from 1970-01-01T00:00Z, so every 15 minutes is at
 * :00, :15, :30 and :45). {@code missed} says what a restart after downtime does with the times it
 * missed: {@code run_once} (the default) starts one run, for the latest of them; {@code skip} none.
 * {@code position} is the trigger's index in the workflow's {@code triggers}.
 *
 * <p>Cron has 5 fields (minute, hour, day of month, month, day of week) and is read by cron-utils.
 * Times follow the zone's daylight-saving rules: a time that a spring-forward gap skips runs once,
 * at the end of the gap (as Vixie cron does); a time that a fall-back repeats runs once, the first time.
 */
public record Schedule(int position, String cron, String timezone, String every, boolean runMissed, String project,
    ObjectNode inputs) {
  public static final String DEFAULT_PROJECT = "schedule";
  private static final Set<String> FIELDS = Set.of("schedule", "project", "inputs");
  private static final Set<String> SCHEDULE_FIELDS = Set.of("cron", "timezone", "every", "missed");
  private static final Pattern EVERY = Pattern.compile("([1-9][0-9]{0,6})(s|m|h|d)");
  private static final Duration LONGEST_EVERY = Duration.ofDays(366);
  private static final CronParser PARSER = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));
  /** Parsed crons by text: a few per workflow, and the scheduler asks for each at every firing. */
  private static final Map<String, ExecutionTime> CRONS = new ConcurrentHashMap<>();
  private static final int MAX_CACHED = 10_000;

  /** Reads trigger {@code node} at {@code at} (e.g. {@code triggers[2]}); each fault a 400 naming its field. */
  static Schedule parse(int position, ObjectNode node, String at) {
    JsonFields fields = JsonFields.of(node, FIELDS, at + ".");
    JsonNode schedule = node.get("schedule");
    String sat = at + ".schedule";
    if (!schedule.isObject()) {
      throw DomainException.invalid(sat, sat + " must be an object such as {\"cron\": \"0 9 * * MON-FRI\", "
          + "\"timezone\": \"Europe/Paris\"} or {\"every\": \"15m\"}, not " + Json.kindOf(schedule));
    }
    JsonFields when = JsonFields.of((ObjectNode) schedule, SCHEDULE_FIELDS, sat + ".");
    String cron = when.optionalString("cron", null, 200);
    String every = when.optionalString("every", null, 20);
    if ((cron == null) == (every == null)) {
      throw DomainException.invalid(sat + ".cron", sat + " needs either \"cron\" (5 fields: minute hour day-of-month "
          + "month day-of-week, e.g. \"0 9 * * MON-FRI\") or \"every\" (e.g. \"15m\"), not " + (cron == null ? "neither" : "both"));
    }
    String timezone = when.optionalString("timezone", "UTC", 100);
    if (cron != null) {
      try {
        executionTime(cron);
      } catch (IllegalArgumentException e) {
        throw DomainException.invalid(sat + ".cron", sat + ".cron is not a 5-field cron expression (minute hour "
            + "day-of-month month day-of-week, e.g. \"0 9 * * MON-FRI\"): " + e.getMessage());
      }
      try {
        ZoneId.of(timezone);
      } catch (DateTimeException e) {
        throw DomainException.invalid(sat + ".timezone", sat + ".timezone must be an IANA time zone such as "
            + "\"Europe/Paris\" or \"UTC\", not '" + timezone + "'");
      }
      if (new Schedule(position, cron, timezone, null, true, DEFAULT_PROJECT, null).next(Instant.now()) == null) {
        throw DomainException.invalid(sat + ".cron", sat + ".cron '" + cron + "' matches no date to come");
      }
    } else {
      if (schedule.has("timezone")) {
        throw DomainException.invalid(sat + ".timezone", sat + ".timezone goes with \"cron\": \"every\" counts "
            + "from 1970-01-01T00:00Z whatever the zone");
      }
      interval(every, sat + ".every");
    }
    String missed = when.optionalString("missed", "run_once", 20);
    if (!missed.equals("run_once") && !missed.equals("skip")) {
      throw DomainException.invalid(sat + ".missed", sat + ".missed must be \"run_once\" (after downtime, one run for "
          + "the times missed) or \"skip\" (none), not '" + missed + "'");
    }
    String project = node.hasNonNull("project") ? fields.requiredSlug("project") : DEFAULT_PROJECT;
    ObjectNode inputs = fields.optionalObject("inputs");
    return new Schedule(position, cron, cron == null ? null : timezone, every, missed.equals("run_once"), project, inputs);
  }

  /** The trigger as stored and shown: complete, with its defaults. */
  public ObjectNode toJson() {
    ObjectNode node = Json.MAPPER.createObjectNode();
    ObjectNode when = node.putObject("schedule");
    if (cron != null) {
      when.put("cron", cron).put("timezone", timezone);
    } else {
      when.put("every", every);
    }
    when.put("missed", runMissed ? "run_once" : "skip");
    node.put("project", project);
    node.set("inputs", inputs);
    return node;
  }

  /** The first scheduled time after {@code after}, or null when there is none (a cron for 30 February). */
  public Instant next(Instant after) {
    if (every != null) {
      long ms = interval(every, "every").toMillis();
      return Instant.ofEpochMilli(Math.floorDiv(after.toEpochMilli(), ms) * ms + ms);
    }
    ZoneId zone = ZoneId.of(timezone);
    ExecutionTime times = executionTime(cron);
    ZonedDateTime from = after.atZone(zone);
    Optional<ZonedDateTime> next = times.nextExecution(from);
    // A wall-clock time that a fall-back repeats comes once: its second coming is skipped.
    while (next.isPresent() && next.get().toLocalDateTime().equals(from.toLocalDateTime())) {
      next = times.nextExecution(next.get());
    }
    // A wall-clock time that a spring-forward skips (cron-utils passes over it) runs at the gap's end.
    ZoneOffsetTransition gap = zone.getRules().nextTransition(after);
    if (gap != null && gap.isGap() && (next.isEmpty() || !next.get().toInstant().isBefore(gap.getInstant()))) {
      for (LocalDateTime t = gap.getDateTimeBefore(); t.isBefore(gap.getDateTimeAfter()); t = t.plusMinutes(1)) {
        if (times.isMatch(t.atZone(ZoneOffset.UTC))) { // the fields as the wall clock would have shown them
          return gap.getInstant();
        }
      }
    }
    return next.map(t -> t.toInstant()).orElse(null);
  }

  /** The last scheduled time at or before {@code time}, or null when there is none. */
  public Instant latest(Instant time) {
    if (every != null) {
      long ms = interval(every, "every").toMillis();
      return Instant.ofEpochMilli(Math.floorDiv(time.toEpochMilli(), ms) * ms);
    }
    ZonedDateTime at = time.atZone(ZoneId.of(timezone));
    ExecutionTime times = executionTime(cron);
    if (times.isMatch(at)) {
      return time;
    }
    return times.lastExecution(at).map(t -> t.toInstant()).orElse(null);
  }

  private static ExecutionTime executionTime(String cron) {
    ExecutionTime cached = CRONS.get(cron);
    if (cached == null) {
      cached = ExecutionTime.forCron(PARSER.parse(cron).validate());
      if (CRONS.size() >= MAX_CACHED) {
        CRONS.clear();
      }
      CRONS.put(cron, cached);
    }
    return cached;
  }

  private static Duration interval(String every, String at) {
    Matcher m = EVERY.matcher(every);
    if (!m.matches()) {
      throw DomainException.invalid(at, at + " must be a whole number and a unit: s, m, h or d (\"30s\", \"15m\", "
          + "\"1d\"), not '" + every + "'");
    }
    long n = Long.parseLong(m.group(1));
    Duration d = switch (m.group(2)) {
      case "s" -> Duration.ofSeconds(n);
      case "m" -> Duration.ofMinutes(n);
      case "h" -> Duration.ofHours(n);
      default -> Duration.ofDays(n);
    };
    if (d.compareTo(LONGEST_EVERY) > 0) {
      throw DomainException.invalid(at, at + " must be at most 366 days");
    }
    return d;
  }
}
