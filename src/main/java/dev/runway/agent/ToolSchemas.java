package dev.runway.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SchemaId;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaValidatorsConfig;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import com.networknt.schema.resource.InputStreamSource;
import com.networknt.schema.resource.SchemaLoader;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import java.io.IOException;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The JSON Schemas of tools' arguments and of agents' outputs (draft 2020-12, networknt's
 * validator): a schema is checked against the meta-schema when the agent is defined, and a model's
 * arguments against the schema before the tool is called (its final answer before the run ends
 * with it as output). A schema may only refer to itself: a $ref to a URL is never fetched
 * (it would make Runway call any address a definition names). Patterns are RE2's (linear time, see
 * {@link Re2Patterns}), checked when the agent is defined; and a validation has a time budget
 * ({@link SchemaBudget}), so a tenant's schema cannot hold the thread that checks it.
 */
public final class ToolSchemas {
  /** Refuses every schema that is not one of the meta-schemas bundled with the validator. */
  private static final SchemaLoader NO_REMOTE = iri -> iri.toString().startsWith("classpath:") ? null
      : (InputStreamSource) () -> {
        throw new IOException("schemas are not loaded from " + iri + ": refer only within the schema (#/...)");
      };
  private static final JsonSchemaFactory FACTORY = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012,
      builder -> builder.schemaLoaders(loaders -> loaders.add(NO_REMOTE)));
  private static final SchemaValidatorsConfig CONFIG = SchemaBudget.config();
  private static final JsonSchema META = FACTORY.getSchema(SchemaLocation.of(SchemaId.V202012), CONFIG);
  private static final JsonNode EMPTY_ARGUMENTS = JsonNodeFactory.instance.objectNode();
  /** How long checking one schema, or one set of arguments against a schema, may take. */
  public static final Duration BUDGET = Duration.ofMillis(250);
  /** How long checking the schemas of all an agent's tools may take. */
  static final Duration DEFINITION_BUDGET = Duration.ofSeconds(1);
  /** Keywords whose value is a schema, an array of schemas, or an object of schemas. */
  private static final Set<String> ONE_SCHEMA = Set.of("additionalProperties", "items", "contains", "not", "if",
      "then", "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema");
  private static final Set<String> SCHEMA_ARRAY = Set.of("allOf", "anyOf", "oneOf", "prefixItems", "items");
  private static final Set<String> SCHEMA_OBJECT = Set.of("properties", "patternProperties", "$defs", "definitions",
      "dependentSchemas", "dependencies");

  static {
    // Loads the validator's classes now, outside any budget: the first check in a JVM would pay for it.
    JsonNode warmUp = Json.tree("""
        {"type": "object", "required": ["a"], "additionalProperties": false, "minProperties": 1,
         "$defs": {"s": {"type": "string", "minLength": 1, "maxLength": 9, "pattern": "^a+$", "format": "email"}},
         "propertyNames": {"pattern": "^[a-z]+$"}, "patternProperties": {"^z": {"const": 1}},
         "dependentRequired": {"a": ["b"]}, "unevaluatedProperties": false,
         "properties": {
           "a": {"$ref": "#/$defs/s"},
           "b": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9, "multipleOf": 1},
                 "prefixItems": [{"enum": [1, 2]}], "minItems": 1, "maxItems": 9, "uniqueItems": true,
                 "contains": {"exclusiveMinimum": 0}},
           "c": {"anyOf": [{"type": "null"}, {"oneOf": [{"type": "boolean"}, {"not": {"type": "number"}}]}],
                 "allOf": [{"if": {"type": "string"}, "then": {"maxLength": 9}, "else": {"type": "boolean"}}]}}}
        """);
    for (String arguments : List.of("{\"a\": \"aa\", \"b\": [1, 2], \"c\": true}",
        "{\"a\": \"\", \"b\": [1, 1, -1], \"c\": 1.5, \"zz\": 2, \"Q\": 1}")) {
      FACTORY.getSchema(warmUp, CONFIG).validate(Json.tree(arguments));
    }
  }

  /**
   * Checking a tool's arguments took longer than {@link #BUDGET}, or went deeper than the stack (a
   * $ref that leads back to itself at the same place): the tool's schema is too costly.
   */
  public static final class TooSlow extends RuntimeException {
    private final String why;

    TooSlow(String why) {
      super("checking the arguments against the tool's parameters " + why, null, false, false);
      this.why = why;
    }

    /** What went wrong, without saying what was checked: "took longer than 250 ms", "never ended: …". */
    public String why() {
      return why;
    }
  }

  private ToolSchemas() {}

  /**
   * Checks a schema of an object (a tool's parameters, a workflow's inputs_schema): valid as JSON
   * Schema and cheap enough to check values against; else a 400 at {@code param}.
   */
  public static void check(JsonNode schema, String param) {
    if (!schema.isObject() || !"object".equals(schema.path("type").asText(null))) {
      throw DomainException.invalid(param, param + " must be a JSON Schema of an object: {\"type\": \"object\", "
          + "\"properties\": {...}}");
    }
    checkSchema(schema, param);
  }

  /**
   * Checks a JSON Schema of any JSON value (an agent's output_schema) as a tool's parameters are
   * checked: valid as JSON Schema, RE2 patterns, within {@link #BUDGET}; else a 400 at {@code param}
   * or the path inside it.
   */
  static void checkSchema(JsonNode schema, String param) {
    checkPatterns(schema, param);
    try {
      SchemaBudget.within(BUDGET, () -> {
        Set<ValidationMessage> errors = META.validate(schema);
        if (!errors.isEmpty()) {
          throw DomainException.invalid(param, param + " is not a valid JSON Schema: "
              + errors.iterator().next().getMessage());
        }
        JsonSchema compiled;
        try {
          compiled = FACTORY.getSchema(schema, CONFIG);
          compiled.initializeValidators(); // resolves every $ref now, not at the first call
        } catch (DomainException e) {
          throw e;
        } catch (RuntimeException e) {
          if (SchemaBudget.exceeded(e)) {
            throw new SchemaBudget.Exceeded();
          }
          throw DomainException.invalid(param, param + " cannot be used: " + rootMessage(e));
        }
        compiled.validate(EMPTY_ARGUMENTS); // a $ref back to itself at the same place never ends: found here
        return null;
      });
    } catch (SchemaBudget.Exceeded e) {
      throw DomainException.invalid(param, param + " takes too long to check (over " + BUDGET.toMillis() + " ms, "
          + "or the agent's schemas together over " + DEFINITION_BUDGET.toMillis() + " ms): make it simpler");
    } catch (StackOverflowError e) {
      throw DomainException.invalid(param, param + " refers to itself without end: a $ref leads back to "
          + "where it is without reading further into the arguments");
    }
  }

  /**
   * Refuses, naming its field, each pattern ({@code pattern}, a {@code patternProperties} name) in
   * the schema and its subschemas that RE2 does not compile.
   */
  private static void checkPatterns(JsonNode schema, String path) {
    if (!schema.isObject()) {
      return;
    }
    JsonNode pattern = schema.get("pattern");
    if (pattern != null && pattern.isTextual()) {
      refuseUnlessRe2(pattern.textValue(), path + ".pattern");
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = schema.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> field = it.next();
      String keyword = field.getKey();
      JsonNode value = field.getValue();
      String at = path + "." + keyword;
      if (ONE_SCHEMA.contains(keyword)) {
        checkPatterns(value, at);
      }
      if (SCHEMA_ARRAY.contains(keyword) && value.isArray()) {
        for (int i = 0; i < value.size(); i++) {
          checkPatterns(value.get(i), at + "[" + i + "]");
        }
      }
      if (SCHEMA_OBJECT.contains(keyword) && value.isObject()) {
        for (Iterator<Map.Entry<String, JsonNode>> sub = value.fields(); sub.hasNext(); ) {
          Map.Entry<String, JsonNode> named = sub.next();
          if (keyword.equals("patternProperties")) {
            refuseUnlessRe2(named.getKey(), at + "." + named.getKey());
          }
          checkPatterns(named.getValue(), at + "." + named.getKey());
        }
      }
    }
  }

  private static void refuseUnlessRe2(String pattern, String param) {
    String refusal = Re2Patterns.refusal(pattern);
    if (refusal != null) {
      throw DomainException.invalid(param, param + " is not a pattern Runway can use: " + refusal);
    }
  }

  private static String rootMessage(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
  }

  /**
   * What is wrong with {@code arguments} by the schema, in words for the model; empty when nothing.
   * Throws {@link TooSlow} past {@link #BUDGET}.
   */
  public static List<String> violations(JsonNode schema, JsonNode arguments) {
    return checked(schema, arguments, messages -> messages.stream().map(ValidationMessage::getMessage).sorted().toList());
  }

  /** What {@code read} makes of the validator's messages on {@code value}, within {@link #BUDGET} (else {@link TooSlow}). */
  private static <T> T checked(JsonNode schema, JsonNode value, java.util.function.Function<Set<ValidationMessage>, T> read) {
    try {
      return SchemaBudget.within(BUDGET, () -> read.apply(FACTORY.getSchema(schema, CONFIG).validate(value)));
    } catch (RuntimeException e) {
      if (SchemaBudget.exceeded(e)) {
        throw new TooSlow("took longer than " + BUDGET.toMillis() + " ms");
      }
      throw e;
    } catch (StackOverflowError e) {
      throw new TooSlow("never ended: the schema refers to itself without end");
    }
  }

  /** What is wrong with a value: where ({@code field}, a path such as {@code inputs.customer.email}) and what. */
  public record Violation(String field, String message) {}

  /**
   * The first thing wrong with {@code value} by the schema (in a stable order), its place named
   * under {@code root}; null when nothing is. Throws {@link TooSlow} past {@link #BUDGET}.
   */
  public static Violation firstViolation(JsonNode schema, JsonNode value, String root) {
    return checked(schema, value, messages -> messages.stream().map(m -> violation(m, root))
        .min(java.util.Comparator.comparing(Violation::field).thenComparing(Violation::message)).orElse(null));
  }

  /**
   * As {@link #firstViolation}, a check that runs past {@link #BUDGET} being itself the violation
   * (of {@code root}, against {@code what}: "the workflow's inputs_schema").
   */
  public static Violation firstViolationWithin(JsonNode schema, JsonNode value, String root, String what) {
    try {
      return firstViolation(schema, value, root);
    } catch (TooSlow e) {
      return new Violation(root, root + ": checking them against " + what + " took over " + BUDGET.toMillis() + " ms");
    }
  }

  /** A validator's message with its place ({@code $.a.b[0]}, and the missing property of a {@code required}) under {@code root}. */
  private static Violation violation(ValidationMessage m, String root) {
    String at = m.getInstanceLocation().toString();
    String field = root + at.substring(1);
    if ("required".equals(m.getType()) && m.getProperty() != null) {
      field = field + "." + m.getProperty();
    }
    String message = m.getMessage();
    return new Violation(field, message.startsWith(at + ": ") ? field + ": " + message.substring(at.length() + 2)
        : message);
  }
}
