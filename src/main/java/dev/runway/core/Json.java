package dev.runway.core;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.module.SimpleModule;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Iterator;
import java.util.Map;

/** The one JSON configuration: snake_case, nulls kept, times as ISO 8601 UTC with milliseconds. */
public final class Json {
  public static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

  /**
   * How deep JSON from outside (request bodies, tools' answers) may nest. Runway wraps such JSON in
   * a few levels of its own when it stores it or passes it on (a step's output sits three levels
   * down in a run's steps), and Jackson refuses to write or read more than 1,000: far below that,
   * nothing a caller or a tool sends can make a stored record unwritable or unreadable.
   */
  public static final int MAX_UNTRUSTED_DEPTH = 100;

  /**
   * How many values (objects, arrays, strings, numbers, ...) JSON from outside may hold. A tree costs
   * up to 30 times its text (an empty object in an array is 3 bytes of text and about 90 of tree), so
   * a 1 MiB body of {@code [{},{},…]} would be a 30 MB tree: the values are counted by a streaming
   * pass before the tree is built. 100,000 values hold a sync of 1,000 records of 97 properties
   * each (a 1 MiB sync body rarely holds more), and keep a tree near 10 MB.
   */
  public static final int MAX_UNTRUSTED_VALUES = 100_000;

  public static final ObjectMapper MAPPER = JsonMapper.builder()
      .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .serializationInclusion(JsonInclude.Include.ALWAYS)
      .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
      .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
      .addModule(new SimpleModule().addSerializer(Instant.class, new JsonSerializer<>() {
        @Override
        public void serialize(Instant value, JsonGenerator gen, SerializerProvider provider) throws IOException {
          gen.writeString(time(value));
        }
      }))
      .build();

  private static final ObjectMapper UNTRUSTED = JsonMapper.builder(JsonFactory.builder()
          .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_UNTRUSTED_DEPTH).build())
          .build())
      .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
      .build();

  /** Same, but object keys sorted: a stable form of a request for comparing idempotent retries. */
  private static final ObjectMapper CANONICAL = MAPPER.copy()
      .configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);

  private Json() {}

  /**
   * {@code at} as {@link #TIME} writes it, e.g. 2026-11-27T23:18:27.123Z, for a tenth of the CPU:
   * every record written to a response or stored carries a few of these.
   */
  public static String time(Instant at) {
    LocalDateTime t = LocalDateTime.ofEpochSecond(at.getEpochSecond(), at.getNano(), ZoneOffset.UTC);
    if (t.getYear() < 0 || t.getYear() > 9999) {
      return TIME.format(at); // a sign, or a fifth digit
    }
    char[] c = "0000-00-00T00:00:00.000Z".toCharArray();
    digits(c, 0, 4, t.getYear());
    digits(c, 5, 2, t.getMonthValue());
    digits(c, 8, 2, t.getDayOfMonth());
    digits(c, 11, 2, t.getHour());
    digits(c, 14, 2, t.getMinute());
    digits(c, 17, 2, t.getSecond());
    digits(c, 20, 3, at.getNano() / 1_000_000);
    return new String(c);
  }

  private static void digits(char[] into, int at, int width, int value) {
    for (int i = at + width - 1; i >= at; i--, value /= 10) {
      into[i] = (char) ('0' + value % 10);
    }
  }

  public static byte[] bytes(Object value) {
    try {
      return MAPPER.writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static String string(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static String canonical(JsonNode node) {
    try {
      return CANONICAL.writeValueAsString(CANONICAL.treeToValue(node, Object.class));
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Why JSON from outside was refused: a predicate for "the request body …", "the tool's answer …". */
  public static class InvalidJson extends Exception {
    private final String path;
    private final boolean malformed;

    InvalidJson(String message, String path, boolean malformed) {
      super(message, null, false, false);
      this.path = path;
      this.malformed = malformed;
    }

    /** Where in the document the fault is (e.g. {@code inputs.name}), when known. */
    public String path() {
      return path;
    }

    /** True when it is not JSON at all; false when it is JSON that Runway could not keep. */
    public boolean malformed() {
      return malformed;
    }
  }

  /**
   * Parses JSON that came from outside: a request body, a tool's answer. Besides malformed JSON it
   * refuses what Runway could not keep and give back: nesting deeper than {@link #MAX_UNTRUSTED_DEPTH},
   * numbers no number type holds (1e-2147483648), and strings with an unpaired UTF-16 surrogate
   * (an escape such as \ud800 alone), which cannot be written as UTF-8: PostgreSQL would keep them
   * as '?', and writing them out fails, so every listing that includes the record would fail.
   * Returns null for an empty document.
   */
  public static JsonNode parseUntrusted(byte[] bytes) throws InvalidJson {
    return parseUntrusted(bytes, null, Integer.MAX_VALUE);
  }

  /**
   * As {@link #parseUntrusted(byte[])}, and when the document is an object whose field
   * {@code countedArray} is an array of more than {@code maxElements} elements, refuses it with
   * {@link TooMany} naming that field, before any tree is built.
   */
  public static JsonNode parseUntrusted(byte[] bytes, String countedArray, int maxElements) throws InvalidJson {
    // Each value takes a byte at least: a document no longer than the bounds cannot pass them.
    if (bytes.length > MAX_UNTRUSTED_VALUES || countedArray != null && bytes.length > maxElements) {
      countValues(bytes, countedArray, maxElements);
    }
    JsonNode node;
    try {
      node = UNTRUSTED.readTree(bytes);
    } catch (JsonProcessingException e) {
      if (e instanceof StreamConstraintsException) {
        throw new InvalidJson(e.getMessage().contains("nesting depth")
            ? "is nested deeper than " + MAX_UNTRUSTED_DEPTH + " levels"
            : "holds a number, string or name longer than Runway accepts", null, false);
      }
      JsonLocation at = e.getLocation();
      throw new InvalidJson("is not valid JSON" + (at == null ? "" : " at line " + at.getLineNr() + ", column "
          + at.getColumnNr()), null, true);
    } catch (IOException e) {
      throw new InvalidJson("is not valid JSON", null, true);
    } catch (NumberFormatException | ArithmeticException e) {
      // Jackson's own failure for a number it cannot hold, e.g. 1e-2147483648 (scale out of range).
      throw new InvalidJson("has a number that cannot be read", null, false);
    }
    if (node == null || node.isMissingNode()) {
      return null;
    }
    String at = unpairedSurrogate(node);
    if (at != null) {
      // A field name of the top-level object has no path of its own.
      String bad = at.isEmpty() && node.isObject() ? "(a field name)" : at.startsWith(".") ? at.substring(1) : at;
      throw new InvalidJson("has a string with an unpaired UTF-16 surrogate" + (bad.isEmpty() ? "" : " at " + bad), bad, false);
    }
    return node;
  }

  /** Too many values in the document, or too many elements in its counted array ({@link #path()} names it). */
  public static final class TooMany extends InvalidJson {
    TooMany(String message, String path) {
      super(message, path, false);
    }
  }

  /**
   * A streaming pass over the document that counts its values (and the elements of the top-level
   * array field {@code countedArray}) without keeping any, refusing the document as soon as a count
   * passes its bound. Malformed JSON ends the pass quietly: reading the tree reports it, and what it
   * builds up to the fault was counted here.
   */
  private static void countValues(byte[] bytes, String countedArray, int maxElements) throws TooMany {
    try (JsonParser parser = UNTRUSTED.getFactory().createParser(bytes)) {
      int values = 0;
      int depth = 0;
      int countedDepth = -1;
      int elements = 0;
      String field = null;
      for (JsonToken token = parser.nextToken(); token != null; token = parser.nextToken()) {
        if (token == JsonToken.FIELD_NAME) {
          field = depth == 1 ? parser.currentName() : null;
          continue;
        }
        if (token == JsonToken.END_OBJECT || token == JsonToken.END_ARRAY) {
          if (depth == countedDepth) {
            countedDepth = -1;
          }
          depth--;
          continue;
        }
        if (++values > MAX_UNTRUSTED_VALUES) {
          throw new TooMany("holds more than " + MAX_UNTRUSTED_VALUES + " JSON values", null);
        }
        if (depth == countedDepth && ++elements > maxElements) {
          throw new TooMany("has more than " + maxElements + " elements in " + countedArray, countedArray);
        }
        if (token == JsonToken.START_OBJECT || token == JsonToken.START_ARRAY) {
          depth++;
          if (token == JsonToken.START_ARRAY && depth == 2 && countedArray != null && countedArray.equals(field)) {
            countedDepth = depth;
          }
        }
      }
    } catch (TooMany e) {
      throw e;
    } catch (IOException | RuntimeException e) {
      // Malformed, too deep, a number too long: reading the tree says which.
    }
  }

  /**
   * Where the first string (value or field name) holding an unpaired surrogate is, relative to
   * {@code node}: "" for the node itself, or for an object with such a field name; else ".key" or
   * "[i]" before the rest. Null when there is none. The path is built only for the bad string.
   */
  private static String unpairedSurrogate(JsonNode node) {
    if (node.isTextual()) {
      return wellFormed(node.textValue()) ? null : "";
    }
    if (node.isArray()) {
      for (int i = 0; i < node.size(); i++) {
        String bad = unpairedSurrogate(node.get(i));
        if (bad != null) {
          return "[" + i + "]" + bad;
        }
      }
    } else if (node.isObject()) {
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> field = it.next();
        if (!wellFormed(field.getKey())) {
          return "";
        }
        String bad = unpairedSurrogate(field.getValue());
        if (bad != null) {
          return "." + field.getKey() + bad;
        }
      }
    }
    return null;
  }

  /** Whether every surrogate in the text is half of a pair: whether the text can be written as UTF-8. */
  public static boolean wellFormed(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        return false;
      }
    }
    return true;
  }

  /**
   * JSON that Runway wrote itself, copied without the fields named {@code field} of the objects at
   * {@code depth} (1: the top-level value's own fields; 2: those of its elements), token by token.
   */
  public static String withoutFieldsAt(String json, int depth, String field) {
    java.io.StringWriter out = new java.io.StringWriter(json.length());
    try (JsonParser parser = MAPPER.getFactory().createParser(json);
         JsonGenerator generator = MAPPER.getFactory().createGenerator(out)) {
      int level = 0;
      for (JsonToken token = parser.nextToken(); token != null; token = parser.nextToken()) {
        if (token == JsonToken.FIELD_NAME && level == depth && field.equals(parser.currentName())) {
          parser.nextToken();
          parser.skipChildren();
          continue;
        }
        if (token == JsonToken.START_OBJECT || token == JsonToken.START_ARRAY) {
          level++;
        } else if (token == JsonToken.END_OBJECT || token == JsonToken.END_ARRAY) {
          level--;
        }
        generator.copyCurrentEvent(parser);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toString();
  }

  /** Parses JSON that Runway wrote itself (stored documents). */
  public static JsonNode tree(String json) {
    try {
      return MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** How a JSON value is named in error messages: "an array", "a string", ... */
  public static String kindOf(JsonNode node) {
    return switch (node.getNodeType()) {
      case ARRAY -> "an array";
      case OBJECT -> "an object";
      case STRING -> "a string";
      case NUMBER -> "a number";
      case BOOLEAN -> "a boolean";
      case NULL -> "null";
      default -> "something else";
    };
  }
}
