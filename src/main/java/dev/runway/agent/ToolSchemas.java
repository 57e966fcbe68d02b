package dev.runway.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SchemaId;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import com.networknt.schema.resource.InputStreamSource;
import com.networknt.schema.resource.SchemaLoader;
import dev.runway.http.ApiException;
import java.io.IOException;
import java.util.List;
import java.util.Set;

/**
 * The JSON Schemas of tools' arguments (draft 2020-12, networknt's validator): a schema is checked
 * against the meta-schema when the agent is defined, and a model's arguments against the schema
 * before the tool is called. A schema may only refer to itself: a $ref to a URL is never fetched
 * (it would make Runway call any address a definition names).
 */
public final class ToolSchemas {
  /** Refuses every schema that is not one of the meta-schemas bundled with the validator. */
  private static final SchemaLoader NO_REMOTE = iri -> iri.toString().startsWith("classpath:") ? null
      : (InputStreamSource) () -> {
        throw new IOException("schemas are not loaded from " + iri + ": refer only within the schema (#/...)");
      };
  private static final JsonSchemaFactory FACTORY = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012,
      builder -> builder.schemaLoaders(loaders -> loaders.add(NO_REMOTE)));
  private static final JsonSchema META = FACTORY.getSchema(SchemaLocation.of(SchemaId.V202012));

  private ToolSchemas() {}

  /** Checks a tool's parameters schema: an object schema, valid as JSON Schema; else a 400 at {@code param}. */
  static void check(JsonNode schema, String param) {
    if (!schema.isObject() || !"object".equals(schema.path("type").asText(null))) {
      throw ApiException.validation(param, param + " must be a JSON Schema of an object: {\"type\": \"object\", "
          + "\"properties\": {...}}");
    }
    Set<ValidationMessage> errors = META.validate(schema);
    if (!errors.isEmpty()) {
      throw ApiException.validation(param, param + " is not a valid JSON Schema: " + errors.iterator().next().getMessage());
    }
    try {
      FACTORY.getSchema(schema).initializeValidators(); // resolves every $ref now, not at the first call
    } catch (RuntimeException e) {
      throw ApiException.validation(param, param + " cannot be used: " + rootMessage(e));
    }
  }

  private static String rootMessage(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
  }

  /** What is wrong with {@code arguments} by the schema, in words for the model; empty when nothing. */
  public static List<String> violations(JsonNode schema, JsonNode arguments) {
    return FACTORY.getSchema(schema).validate(arguments).stream().map(ValidationMessage::getMessage).sorted().toList();
  }
}
