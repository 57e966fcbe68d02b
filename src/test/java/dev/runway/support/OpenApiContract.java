package dev.runway.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonMetaSchema;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.NonValidationKeyword;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaValidatorsConfig;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import com.networknt.schema.oas.OpenApi31;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The OpenAPI document (src/main/resources/openapi.json) as a contract for the answers tests get:
 * finds the operation by method and path template, the response by status (or "default"), and
 * checks a JSON body against the response's schema (draft 2020-12, OpenAPI 3.1's dialect, with
 * networknt's json-schema-validator) and a problem's {@code code} against the response's
 * {@code x-error-codes}. Read once; each schema is compiled once, when first needed.
 */
public final class OpenApiContract {
  public static final String RESOURCE = "openapi.json";
  private static final List<String> METHODS = List.of("get", "put", "post", "patch", "delete");
  /** Codes any request can get before it reaches a route (see the document's description). */
  private static final Set<String> BEFORE_ROUTING = Set.of("invalid_request");
  private static final ObjectMapper MAPPER = new ObjectMapper();
  /**
   * OpenAPI 3.1's dialect (draft 2020-12 and its few keywords), knowing that the document's root,
   * where schemas are found by JSON pointer, is not a schema itself.
   */
  private static final JsonMetaSchema DIALECT = JsonMetaSchema.builder(OpenApi31.getInstance())
      .keywords(Stream.of("openapi", "info", "jsonSchemaDialect", "servers", "security", "tags", "paths", "components")
          .map(NonValidationKeyword::new).toList())
      .build();
  private static final OpenApiContract INSTANCE = new OpenApiContract();

  private final JsonNode document;
  private final List<PathTemplate> templates = new ArrayList<>();

  private final JsonSchemaFactory factory = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012,
      builder -> builder.metaSchema(DIALECT).defaultMetaSchemaIri(DIALECT.getIri()));
  private final SchemaValidatorsConfig config = SchemaValidatorsConfig.builder().formatAssertionsEnabled(true).build();
  private final Map<String, JsonSchema> schemas = new ConcurrentHashMap<>();

  /** A path of the document, as a pattern: parameters match one segment. */
  record PathTemplate(String path, Pattern pattern, int literals) {}

  private OpenApiContract() {
    try (InputStream in = OpenApiContract.class.getClassLoader().getResourceAsStream(RESOURCE)) {
      document = MAPPER.readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    for (Iterator<String> it = document.path("paths").fieldNames(); it.hasNext(); ) {
      String path = it.next();
      StringBuilder regex = new StringBuilder();
      int literals = 0;
      for (String segment : path.substring(1).split("/", -1)) {
        if (segment.startsWith("{") && segment.endsWith("}")) {
          regex.append("/[^/]+");
        } else {
          regex.append('/').append(Pattern.quote(segment));
          literals++;
        }
      }
      templates.add(new PathTemplate(path, Pattern.compile(regex.toString()), literals));
    }
  }

  public static OpenApiContract get() {
    return INSTANCE;
  }

  public JsonNode document() {
    return document;
  }

  /** Every documented operation as "METHOD /path/{param}". */
  public List<String> operations() {
    List<String> operations = new ArrayList<>();
    document.path("paths").fields().forEachRemaining(path -> METHODS.forEach(method -> {
      if (path.getValue().has(method)) {
        operations.add(method.toUpperCase(Locale.ROOT) + " " + path.getKey());
      }
    }));
    return operations;
  }

  /** Whether the path is the API's (what the document covers): /v1/..., /healthz, /readyz, /mcp. */
  public static boolean isApiPath(String path) {
    return path.startsWith("/v1/") || path.equals("/v1") || path.equals("/healthz") || path.equals("/readyz")
        || path.equals("/mcp");
  }

  /**
   * What is wrong with this answer to {@code method pathAndQuery} by the document (empty: nothing).
   * Answers outside the API (the console, /docs) are not checked, nor bodies that are not JSON.
   */
  public List<String> violations(String method, String pathAndQuery, int status, String contentType, String body) {
    String path = pathAndQuery.split("[?#]", 2)[0];
    if (path.length() > 1 && path.endsWith("/")) {
      path = path.substring(0, path.length() - 1);
    }
    if (!isApiPath(path)) {
      return List.of();
    }
    List<String> faults = new ArrayList<>();
    String where = method + " " + pathAndQuery + " -> " + status + ": ";
    String mediaType = contentType == null ? null : contentType.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
    JsonNode json = parse(mediaType, body, where, faults);
    if (!faults.isEmpty()) {
      return faults;
    }
    String code = json != null && json.path("code").isTextual() ? json.get("code").textValue() : null;
    String responsePointer;
    PathTemplate template = template(path);
    JsonNode operation = template == null ? null : document.path("paths").path(template.path())
        .path(method.toLowerCase(Locale.ROOT));
    if (code != null && BEFORE_ROUTING.contains(code) && (status == 400 || status == 431)) {
      responsePointer = "/components/responses/InvalidRequest";
    } else if (template == null || operation.isMissingNode()) {
      // No operation for the path: 404 not_found; for the method: 405 method_not_allowed.
      int expected = template == null ? 404 : 405;
      if (status != expected) {
        faults.add(where + "no documented operation " + method + " " + path + "; expected " + expected);
        return faults;
      }
      responsePointer = template == null ? "/components/responses/RouteNotFound" : "/components/responses/MethodNotAllowed";
    } else {
      String operationPointer = "/paths/" + escape(template.path()) + "/" + method.toLowerCase(Locale.ROOT);
      responsePointer = operationPointer + "/responses/" + status;
      if (operation.path("responses").path(Integer.toString(status)).isMissingNode()) {
        responsePointer = operationPointer + "/responses/default";
      }
      if (document.at(responsePointer).isMissingNode()) {
        faults.add(where + "status " + status + " is not documented for " + method + " " + template.path()
            + (body == null || body.isEmpty() ? "" : ": " + abbreviate(body)));
        return faults;
      }
    }
    JsonNode response = document.at(responsePointer);
    if (response.has("$ref")) {
      responsePointer = response.get("$ref").textValue().substring(1);
      response = document.at(responsePointer);
    }
    JsonNode content = response.path("content");
    if (mediaType == null || body == null || body.isEmpty()) {
      if (!content.isMissingNode() && content.size() > 0) {
        faults.add(where + "no body, but the document says " + content.fieldNames().next());
      }
      return faults;
    }
    if (!content.has(mediaType)) {
      faults.add(where + "Content-Type " + mediaType + " is not documented for this response");
      return faults;
    }
    if (json == null) {
      return faults; // text/event-stream, HTML: not checked beyond their type
    }
    checkSchema(responsePointer + "/content/" + escape(mediaType) + "/schema", json, where, faults);
    JsonNode codes = response.path("x-error-codes");
    if (code != null && codes.isArray()) {
      boolean listed = false;
      for (JsonNode c : codes) {
        listed |= c.textValue().equals(code);
      }
      if (!listed) {
        faults.add(where + "error code " + code + " is not among this response's x-error-codes " + codes);
      }
    }
    return faults;
  }

  private static JsonNode parse(String mediaType, String body, String where, List<String> faults) {
    if (mediaType == null || body == null || body.isEmpty()
        || !(mediaType.equals("application/json") || mediaType.endsWith("+json"))) {
      return null;
    }
    try {
      return MAPPER.readTree(body);
    } catch (IOException e) {
      faults.add(where + "the body is not JSON: " + abbreviate(body));
      return null;
    }
  }

  /** What is wrong with {@code json} by the schema at {@code pointer} in the document (empty: nothing). */
  public List<String> schemaViolations(String pointer, JsonNode json, String where) {
    List<String> faults = new ArrayList<>();
    checkSchema(pointer, json, where, faults);
    return faults;
  }

  private void checkSchema(String pointer, JsonNode json, String where, List<String> faults) {
    JsonSchema schema = schemas.computeIfAbsent(pointer, p -> {
      JsonSchema compiled = factory.getSchema(SchemaLocation.of("classpath:" + RESOURCE + "#" + p), config);
      compiled.initializeValidators();
      return compiled;
    });
    Set<ValidationMessage> messages = schema.validate(json);
    if (!messages.isEmpty()) {
      StringBuilder text = new StringBuilder(where + "the body does not match #" + pointer + ":");
      messages.stream().limit(10).forEach(m -> text.append("\n  ").append(m.getMessage()));
      faults.add(text.append("\n  body: ").append(abbreviate(json.toString())).toString());
    }
  }

  private PathTemplate template(String path) {
    PathTemplate best = null;
    for (PathTemplate t : templates) {
      if (t.pattern().matcher(path).matches() && (best == null || t.literals() > best.literals())) {
        best = t;
      }
    }
    return best;
  }

  /** A JSON pointer's escape of one reference token. */
  static String escape(String token) {
    return token.replace("~", "~0").replace("/", "~1");
  }

  private static String abbreviate(String text) {
    return text.length() <= 2000 ? text : text.substring(0, 2000) + "…";
  }
}
