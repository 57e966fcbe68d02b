package dev.runway.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Set;

/**
 * Tools Runway answers itself, named by a {@code builtin:<name>} URL: a sandbox's agent can call a
 * tool on a fresh machine with no service of its own. {@code builtin:current_time} tells the time in
 * a time zone ({@code {"timezone": "Europe/Paris"}}, UTC by default).
 */
public final class BuiltinTools {
  public static final String PREFIX = "builtin:";
  static final Set<String> NAMES = Set.of("current_time");

  private BuiltinTools() {}

  /** Whether {@code url} names a built-in tool rather than an HTTP endpoint. */
  public static boolean isBuiltin(String url) {
    return url.startsWith(PREFIX);
  }

  /** A built-in tool's answer: 200 and its JSON, or 400 and what was wrong with the arguments. */
  public record Answer(int status, String body) {}

  public static Answer call(String url, JsonNode arguments) {
    String name = url.substring(PREFIX.length());
    if (name.equals("current_time")) {
      return currentTime(arguments);
    }
    return new Answer(404, Json.string(Json.MAPPER.createObjectNode().put("error", "no built-in tool " + name)));
  }

  private static Answer currentTime(JsonNode arguments) {
    String zone = arguments.path("timezone").asText("UTC");
    try {
      ZonedDateTime time = Instant.now().atZone(ZoneId.of(zone));
      ObjectNode answer = Json.MAPPER.createObjectNode().put("timezone", zone)
          .put("local_time", time.format(DateTimeFormatter.ISO_OFFSET_DATE_TIME))
          .put("day_of_week", time.getDayOfWeek().toString().charAt(0) + time.getDayOfWeek().toString().substring(1).toLowerCase());
      return new Answer(200, Json.string(answer));
    } catch (DateTimeException e) {
      return new Answer(400, Json.string(Json.MAPPER.createObjectNode().put("error",
          "unknown time zone '" + zone + "': use an IANA name such as Europe/Paris or America/New_York")));
    }
  }
}
