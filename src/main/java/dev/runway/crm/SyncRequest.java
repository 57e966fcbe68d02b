package dev.runway.crm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.Json;
import dev.runway.core.JsonFields;
import dev.runway.core.Time;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A sync body, checked at the edge: the batch as a whole (a fault there refuses the request with
 * 400), then each record on its own (a bad record fails alone, with an error naming its field).
 */
public record SyncRequest(boolean replace, List<Item> items) {
  private static final Set<String> FIELDS = Set.of("mode", "records");
  private static final Set<String> RECORD_FIELDS = Set.of("external_id", "properties", "source_updated_at", "deleted");
  public static final int MAX_EXTERNAL_ID = 255;
  public static final int MAX_PROPERTY_NAME = 255;
  /** Why a batch of too many records is refused (also before its body is read as a tree). */
  public static final String TOO_MANY = "records must hold 1 to " + CrmSettings.MAX_BATCH
      + " records; send more in further requests";

  /**
   * One record of the batch at its {@code index}: valid, or failed with {@code error}. A valid
   * record's {@code properties} is null when it sent none (then a merge changes none).
   */
  public record Item(int index, String externalId, ObjectNode properties, boolean deleted, Instant sourceUpdatedAt,
      DomainException error) {

    static Item failed(int index, String externalId, DomainException error) {
      return new Item(index, externalId, null, false, null, error);
    }
  }

  public static SyncRequest parse(ObjectNode body, CrmSettings limits) {
    JsonFields fields = JsonFields.of(body, FIELDS);
    String mode = fields.optionalString("mode", "merge", 20);
    if (!mode.equals("merge") && !mode.equals("replace")) {
      throw DomainException.invalid("mode", "mode must be merge (keep properties not sent) or replace");
    }
    JsonNode records = body.get("records");
    if (records == null || records.isNull()) {
      throw DomainException.invalid("records", "records is required: an array of 1 to " + CrmSettings.MAX_BATCH
          + " records");
    }
    if (!records.isArray()) {
      throw DomainException.invalid("records", "records must be an array, not " + Json.kindOf(records));
    }
    if (records.isEmpty() || records.size() > CrmSettings.MAX_BATCH) {
      throw DomainException.invalid("records", "records must hold 1 to " + CrmSettings.MAX_BATCH + " records, not "
          + records.size() + "; send more in further requests");
    }
    List<Item> items = new ArrayList<>(records.size());
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < records.size(); i++) {
      Item item = item(i, records.get(i), limits);
      if (item.externalId() != null && !seen.add(item.externalId())) {
        String at = "records[" + i + "].external_id";
        item = Item.failed(i, item.externalId(), new DomainException(Kind.INVALID, "duplicate_record", "external_id '"
            + item.externalId() + "' is listed earlier in this batch; send each record once per batch", at));
      }
      items.add(item);
    }
    return new SyncRequest(mode.equals("replace"), items);
  }

  private static Item item(int index, JsonNode node, CrmSettings limits) {
    String at = "records[" + index + "]";
    String externalId = node.path("external_id").isTextual() ? node.get("external_id").textValue() : null;
    try {
      if (!node.isObject()) {
        throw DomainException.invalid(at, at + " must be an object with an external_id, not " + Json.kindOf(node));
      }
      JsonFields fields = JsonFields.of((ObjectNode) node, RECORD_FIELDS, at + ".");
      checkExternalId(node.get("external_id"), at + ".external_id");
      boolean deleted = fields.optionalBoolean("deleted", false);
      JsonNode properties = node.get("properties");
      if (deleted && properties != null && !properties.isNull()) {
        throw DomainException.invalid(at + ".properties", "a record with \"deleted\": true takes no properties");
      }
      ObjectNode checked = properties == null || properties.isNull() ? null : fields.optionalObject("properties");
      if (checked != null) {
        checkProperties(checked, at + ".properties", limits);
      }
      Instant sourceUpdatedAt = time(node.get("source_updated_at"), at + ".source_updated_at");
      return new Item(index, externalId, checked, deleted, sourceUpdatedAt, null);
    } catch (DomainException e) {
      return Item.failed(index, externalId, e);
    }
  }

  /** An external id is 1-255 characters, none of them a control character: it has to go into a URL path. */
  public static void checkExternalId(JsonNode id, String at) {
    if (id == null || id.isNull()) {
      throw DomainException.invalid(at, at + " is required: your system's id of the record");
    }
    if (!id.isTextual()) {
      throw DomainException.invalid(at, at + " must be a string, not " + Json.kindOf(id));
    }
    String why = externalIdFault(id.textValue());
    if (why != null) {
      throw DomainException.invalid(at, at + " " + why);
    }
  }

  /** What is wrong with an external id, or null. */
  public static String externalIdFault(String id) {
    if (id.isEmpty() || id.length() > MAX_EXTERNAL_ID) {
      return "must be 1 to " + MAX_EXTERNAL_ID + " characters";
    }
    if (id.chars().anyMatch(Character::isISOControl)) {
      return "must not contain control characters";
    }
    return null;
  }

  private static void checkProperties(ObjectNode properties, String at, CrmSettings limits) {
    if (properties.size() > limits.maxProperties()) {
      throw new DomainException(Kind.INVALID, "too_many_properties", at + " has " + properties.size()
          + " properties; a record may have at most " + limits.maxProperties(), at);
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = properties.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> p = it.next();
      String name = p.getKey();
      if (name.isEmpty() || name.length() > MAX_PROPERTY_NAME || name.chars().anyMatch(Character::isISOControl)) {
        throw DomainException.invalid(at, "property names in " + at + " must be 1 to " + MAX_PROPERTY_NAME
            + " characters without control characters");
      }
      if (jsonBytesAbove(p.getValue(), limits.maxValueBytes())) {
        throw new DomainException(Kind.INVALID, "value_too_large", at + "." + name + " is larger than "
            + limits.maxValueBytes() + " bytes of JSON (crm.max_value_bytes)", at + "." + name);
      }
    }
  }

  /** Whether the value's JSON takes more than {@code max} bytes; a short string is told without writing it. */
  static boolean jsonBytesAbove(JsonNode value, int max) {
    if (value.isTextual() && 6L * value.textValue().length() + 2 <= max) {
      return false; // at most 6 bytes per character (an escape), and the quotes
    }
    if (value.isValueNode() && !value.isTextual()) {
      return value.toString().length() > max;
    }
    return Json.bytes(value).length > max;
  }

  private static final java.util.regex.Pattern UTC_MILLIS =
      java.util.regex.Pattern.compile("\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z");

  /**
   * An ISO 8601 time with offset. The form Runway itself writes (2026-11-20T10:00:00.000Z, what a
   * mirror sends back most) is read directly: OffsetDateTime.parse took a fifth of a sync's
   * parsing time.
   */
  static Instant parseTime(String text) {
    if (text.length() == 24 && UTC_MILLIS.matcher(text).matches()) {
      try {
        return java.time.LocalDateTime.of(num(text, 0, 4), num(text, 5, 7), num(text, 8, 10), num(text, 11, 13),
            num(text, 14, 16), num(text, 17, 19), num(text, 20, 23) * 1_000_000).toInstant(java.time.ZoneOffset.UTC);
      } catch (java.time.DateTimeException e) {
        throw new DateTimeParseException("not a time", text, 0);
      }
    }
    return OffsetDateTime.parse(text).toInstant();
  }

  private static int num(String text, int from, int to) {
    return Integer.parseInt(text, from, to, 10);
  }

  private static Instant time(JsonNode node, String at) {
    if (node == null || node.isNull()) {
      return null;
    }
    String rule = at + " must be an ISO 8601 time with offset, e.g. 2026-11-20T10:00:00.000Z";
    if (!node.isTextual()) {
      throw DomainException.invalid(at, rule);
    }
    Instant time;
    try {
      time = parseTime(node.textValue()).truncatedTo(ChronoUnit.MILLIS);
    } catch (DateTimeParseException e) {
      throw DomainException.invalid(at, rule);
    }
    if (!Time.storable(time)) {
      throw DomainException.invalid(at, at + " must lie between " + Json.TIME.format(Time.EARLIEST) + " and "
          + Json.TIME.format(Time.LATEST));
    }
    return time;
  }
}
