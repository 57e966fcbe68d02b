package dev.runway.http;

import dev.runway.core.DomainException;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Slugs;
import dev.runway.core.Time;
import io.javalin.http.Context;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Checked access to a request's query parameters; unknown ones are refused like unknown body fields. */
public final class QueryParams {
  private final Map<String, List<String>> params;

  private QueryParams(Map<String, List<String>> params) {
    this.params = params;
  }

  public static QueryParams of(Context ctx, Set<String> allowed) {
    Map<String, List<String>> params = ctx.queryParamMap();
    for (Map.Entry<String, List<String>> e : params.entrySet()) {
      if (!allowed.contains(e.getKey())) {
        throw new ApiException(400, "unknown_parameter", "unknown query parameter '" + e.getKey() + "'; allowed: "
            + String.join(", ", allowed.stream().sorted().toList()), e.getKey());
      }
      if (e.getValue().size() > 1) {
        throw DomainException.invalid(e.getKey(), e.getKey() + " must be given at most once");
      }
    }
    return new QueryParams(params);
  }

  public String string(String name) {
    List<String> values = params.get(name);
    return values == null || values.isEmpty() ? null : values.get(0);
  }

  public String slug(String name) {
    String value = string(name);
    if (value != null && !Slugs.isSlug(value)) {
      throw DomainException.invalid(name, name + " must be a slug: " + Slugs.RULE);
    }
    return value;
  }

  public int integer(String name, int fallback, int min, int max) {
    String value = string(name);
    if (value == null) {
      return fallback;
    }
    try {
      int n = Integer.parseInt(value);
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw DomainException.invalid(name, name + " must be a whole number from " + min + " to " + max);
  }

  public boolean bool(String name, boolean fallback) {
    String value = string(name);
    if (value == null) {
      return fallback;
    }
    if (value.equals("true") || value.equals("false")) {
      return value.equals("true");
    }
    throw DomainException.invalid(name, name + " must be true or false");
  }

  public Instant time(String name) {
    String value = string(name);
    return value == null ? null : parseTime(value, name);
  }

  /** An ISO 8601 time with offset that the database can store, or a 400 naming {@code name}. */
  public static Instant parseTime(String value, String name) {
    Instant time;
    try {
      time = OffsetDateTime.parse(value).toInstant();
    } catch (DateTimeParseException e) {
      throw DomainException.invalid(name, name
          + " must be an ISO 8601 time with offset, e.g. 2026-11-22T02:46:35.285Z");
    }
    if (!Time.storable(time)) {
      throw DomainException.invalid(name, name + " must lie between " + Json.TIME.format(Time.EARLIEST) + " and "
          + Json.TIME.format(Time.LATEST));
    }
    return time;
  }

  public String id(String name, String prefix) {
    String value = string(name);
    if (value != null && !Ids.looksLike(prefix, value)) {
      throw DomainException.invalid(name, name + " must be a " + prefix + "_ id");
    }
    return value;
  }
}
