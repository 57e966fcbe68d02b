package dev.runway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.Scope;
import dev.runway.support.Api;
import dev.runway.support.Http;
import dev.runway.support.OpenApiContract;
import dev.runway.support.TestDatabase;
import io.javalin.Javalin;
import io.javalin.router.Endpoint;
import io.javalin.router.ParsedEndpoint;
import io.javalin.security.Roles;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The OpenAPI document (src/main/resources/openapi.json) against the app: every route the app
 * registers is documented with the scope it requires, every documented operation exists, the
 * examples are what their schemas say, and the document and its reference page are served. That
 * every answer of the API tests matches the document is checked by {@link Http} on each request.
 */
class OpenApiTest {
  /** Not API: pages for people. The document says so in its description. */
  private static final List<String> NOT_API = List.of("/", "/console", "/docs"); // "/": a redirect to the console
  private static final Pattern PARAMETER = Pattern.compile("\\{[^}]+}");

  private static final OpenApiContract CONTRACT = OpenApiContract.get();
  private static final JsonNode DOCUMENT = CONTRACT.document();

  @Test
  void every_route_of_the_app_is_documented_with_its_scope_and_every_operation_exists() {
    Javalin app = Api.on(TestDatabase.H2).app();
    Map<String, Set<String>> routes = new TreeMap<>();
    for (ParsedEndpoint parsed : app.unsafe.internalRouter.allHttpHandlers()) {
      Endpoint endpoint = parsed.endpoint;
      if (!endpoint.method.isHttpMethod() || NOT_API.stream().anyMatch(p -> endpoint.path.equals(p)
          || endpoint.path.startsWith(p + "/"))) {
        continue;
      }
      Roles roles = endpoint.metadata(Roles.class);
      Set<String> scopes = new TreeSet<>();
      if (roles != null) {
        roles.getRoles().forEach(r -> scopes.add(((Scope) r).wireName()));
      }
      routes.put(endpoint.method.name() + " " + normalized(endpoint.path), scopes);
    }
    Map<String, Set<String>> documented = new TreeMap<>();
    for (String operation : CONTRACT.operations()) {
      String[] parts = operation.split(" ", 2);
      JsonNode op = DOCUMENT.path("paths").path(parts[1]).path(parts[0].toLowerCase(Locale.ROOT));
      Set<String> scopes = new TreeSet<>();
      op.path("x-required-scopes").forEach(s -> scopes.add(s.textValue()));
      documented.put(parts[0] + " " + normalized(parts[1]), scopes);
    }

    Set<String> undocumented = new TreeSet<>(routes.keySet());
    undocumented.removeAll(documented.keySet());
    Set<String> missing = new TreeSet<>(documented.keySet());
    missing.removeAll(routes.keySet());
    assertTrue(undocumented.isEmpty(), () -> "routes of the app missing from openapi.json: " + undocumented);
    assertTrue(missing.isEmpty(), () -> "operations in openapi.json that the app lacks: " + missing);
    assertEquals(routes, documented, "each operation's x-required-scopes must be the scope its route declares");
    assertTrue(routes.size() >= 40, () -> "only " + routes.size() + " routes found: " + routes.keySet());
  }

  @Test
  void each_operation_names_its_scope_everywhere_and_lists_its_error_codes() {
    Set<String> operationIds = new HashSet<>();
    for (String operation : CONTRACT.operations()) {
      String[] parts = operation.split(" ", 2);
      JsonNode op = DOCUMENT.path("paths").path(parts[1]).path(parts[0].toLowerCase(Locale.ROOT));
      assertTrue(operationIds.add(op.path("operationId").asText()), () -> "operationId twice or missing: " + operation);
      JsonNode scopes = op.path("x-required-scopes");
      JsonNode security = op.path("security");
      if (scopes.isEmpty()) {
        assertEquals("[]", security.toString(), () -> operation + ": an open route has an empty security list");
        assertTrue(op.path("description").asText().contains("No API key."), operation);
      } else {
        String scope = scopes.get(0).textValue();
        assertEquals("[{\"bearerAuth\":[\"" + scope + "\"]}]", security.toString(), operation);
        assertTrue(op.path("description").asText().contains("Scope: `" + scope + "`."), operation);
        for (String status : List.of("401", "403", "429", "500", "503")) {
          assertTrue(op.path("responses").has(status), () -> operation + " lacks its " + status);
        }
      }
      op.path("responses").fields().forEachRemaining(r -> {
        JsonNode response = resolve(r.getValue());
        if (r.getKey().startsWith("4") || r.getKey().startsWith("5")) {
          if (response.path("content").has("application/problem+json")) {
            assertFalse(response.path("x-error-codes").isEmpty(), () -> operation + " " + r.getKey() + ": no x-error-codes");
          }
        }
      });
    }
  }

  @Test
  void every_reference_resolves_within_the_document() {
    List<String> dangling = new ArrayList<>();
    int refs = references(DOCUMENT, dangling);
    assertTrue(dangling.isEmpty(), () -> "references to nothing: " + dangling);
    assertTrue(refs > 100, "references: " + refs);
  }

  private static int references(JsonNode node, List<String> dangling) {
    int n = 0;
    if (node.isObject() && node.path("$ref").isTextual()) {
      String ref = node.get("$ref").textValue();
      if (!ref.startsWith("#/") || DOCUMENT.at(ref.substring(1)).isMissingNode()) {
        dangling.add(ref);
      }
      n++;
    }
    for (JsonNode child : node) {
      n += references(child, dangling);
    }
    return n;
  }

  @Test
  void every_example_matches_its_schema() {
    List<String> faults = new ArrayList<>();
    int[] checked = {0};
    DOCUMENT.path("paths").fields().forEachRemaining(path -> path.getValue().fields().forEachRemaining(method -> {
      String operationPointer = "/paths/" + escape(path.getKey()) + "/" + method.getKey();
      JsonNode op = method.getValue();
      op.path("requestBody").path("content").fields().forEachRemaining(media -> checked[0] += checkExamples(
          operationPointer + "/requestBody/content/" + escape(media.getKey()), media.getValue(), faults));
      op.path("responses").fields().forEachRemaining(response -> {
        String pointer = operationPointer + "/responses/" + response.getKey();
        JsonNode node = response.getValue();
        if (node.has("$ref")) {
          pointer = node.get("$ref").textValue().substring(1);
          node = DOCUMENT.at(pointer);
        }
        String at = pointer;
        node.path("content").fields().forEachRemaining(media -> {
          if (media.getKey().contains("json")) {
            checked[0] += checkExamples(at + "/content/" + escape(media.getKey()), media.getValue(), faults);
          }
        });
      });
    }));
    assertTrue(faults.isEmpty(), () -> String.join("\n", faults));
    assertTrue(checked[0] > 60, "examples checked: " + checked[0]);
  }

  private int checkExamples(String mediaPointer, JsonNode media, List<String> faults) {
    int n = 0;
    for (var it = media.path("examples").fields(); it.hasNext(); n++) {
      var example = it.next();
      JsonNode value = resolve(example.getValue()).path("value");
      faults.addAll(CONTRACT.schemaViolations(mediaPointer + "/schema", value, "example " + example.getKey() + ": "));
    }
    return n;
  }

  /** The check every API test's answers go through (see Http) finds what drifts, and only that. */
  @Test
  void the_contract_check_catches_a_drifting_answer() {
    String json = "application/json;charset=utf-8";
    String problem = "application/problem+json; charset=utf-8";
    com.fasterxml.jackson.databind.node.ObjectNode run =
        (com.fasterxml.jackson.databind.node.ObjectNode) DOCUMENT.at("/components/examples/get_run_succeeded/value");
    String path = "/v1/runs/" + run.get("id").asText();
    assertEquals(List.of(), CONTRACT.violations("GET", path, 200, json, run.toString()));
    assertEquals(List.of(), CONTRACT.violations("GET", path + "?x=1", 200, json, run.toString()));

    assertDrift("GET", path, 200, json, run.deepCopy().put("colour", "red").toString(), "colour");
    com.fasterxml.jackson.databind.node.ObjectNode withoutProject = run.deepCopy();
    withoutProject.remove("project");
    assertDrift("GET", path, 200, json, withoutProject.toString(), "project");
    assertDrift("GET", path, 200, json, run.deepCopy().put("created_at", "2026-11-24T03:41:25Z").toString(), "created_at");
    assertDrift("GET", path, 200, json, run.deepCopy().put("status", "paused").toString(), "status");
    assertDrift("GET", path, 418, json, "{}", "418 is not documented");
    assertDrift("GET", path, 200, "text/html", "<p>", "text/html is not documented");
    String notFound = DOCUMENT.at("/components/examples/get_run_missing/value").toString();
    assertEquals(List.of(), CONTRACT.violations("GET", path, 404, problem, notFound));
    assertDrift("GET", path, 404, problem, notFound.replace("run_not_found", "workflow_not_found"), "x-error-codes");

    String routeMissing = DOCUMENT.at("/components/examples/not_found/value").toString();
    assertEquals(List.of(), CONTRACT.violations("GET", "/v1/nope", 404, problem, routeMissing));
    assertDrift("GET", "/v1/nope", 200, json, "{}", "no documented operation");
    String notAllowed = DOCUMENT.at("/components/examples/method_not_allowed/value").toString();
    assertEquals(List.of(), CONTRACT.violations("PATCH", "/v1/runs", 405, problem, notAllowed));
    assertEquals(List.of(), CONTRACT.violations("GET", "/v1/events", 200, "text/event-stream", ": stream open\n\n"));
    assertEquals(List.of(), CONTRACT.violations("GET", "/console/keys", 200, "text/html", "<p>"));
    assertEquals(List.of(), CONTRACT.violations("GET", "/docs", 200, "text/html", "<p>"));
  }

  private static void assertDrift(String method, String path, int status, String type, String body, String expected) {
    List<String> faults = CONTRACT.violations(method, path, status, type, body);
    assertEquals(1, faults.size(), () -> "expected one fault naming " + expected + ", got " + faults);
    assertTrue(faults.get(0).contains(expected), faults::toString);
  }

  @Test
  void the_document_is_served_as_it_is_without_a_key_and_may_be_cached() throws IOException {
    byte[] resource;
    try (InputStream in = OpenApiTest.class.getClassLoader().getResourceAsStream(OpenApiContract.RESOURCE)) {
      resource = in.readAllBytes();
    }
    Api api = Api.on(TestDatabase.H2);
    api.test(http -> {
      Http.Reply reply = http.get("/v1/openapi.json", null);
      assertEquals(200, reply.status(), reply::toString);
      assertEquals(new String(resource, StandardCharsets.UTF_8), reply.body());
      assertTrue(reply.header("Content-Type").startsWith("application/json"), reply.header("Content-Type"));
      assertEquals("public, max-age=300", reply.header("Cache-Control"));
      assertNotNull(reply.header("Request-Id"));
      String etag = reply.header("ETag");
      assertNotNull(etag);
      Http.Reply again = http.send("GET", "/v1/openapi.json", null, null, null, "If-None-Match", etag);
      assertEquals(304, again.status());
      assertEquals("", again.body());
      // A key, even a bad one, changes nothing: the document is the same for everyone.
      assertEquals(200, http.get("/v1/openapi.json", "wsk_nope").status());
      assertEquals("3.1.0", reply.json().path("openapi").asText());
    });
  }

  @Test
  void the_reference_page_loads_swagger_ui_from_this_server_only() {
    Api api = Api.on(TestDatabase.H2);
    api.test(http -> {
      Http.Reply page = http.get("/docs", null);
      assertEquals(200, page.status(), page::toString);
      assertTrue(page.header("Content-Type").startsWith("text/html"), page.header("Content-Type"));
      String csp = page.header("Content-Security-Policy");
      assertNotNull(csp);
      for (String directive : csp.split(";")) {
        String[] words = directive.trim().split(" +");
        for (int i = 1; i < words.length; i++) {
          assertTrue(Set.of("'self'", "'none'", "data:").contains(words[i]), () -> "CSP allows more than 'self': " + csp);
        }
      }
      assertFalse(page.body().contains("<script>"), "no inline script");
      Matcher refs = Pattern.compile("(?:src|href)=\"([^\"]+)\"").matcher(page.body());
      int assets = 0;
      while (refs.find()) {
        String ref = refs.group(1);
        assertTrue(ref.startsWith("/docs/") || ref.equals("/v1/openapi.json"), () -> "the page refers to " + ref);
        if (ref.startsWith("/docs/")) {
          Http.Reply asset = http.get(ref, null);
          assertEquals(200, asset.status(), () -> ref + ": " + asset.status());
          assertFalse(asset.body().isEmpty(), ref);
          assets++;
        }
      }
      assertTrue(assets >= 4, "assets: " + assets);
      Http.Reply script = http.get("/docs/docs.js", null);
      assertTrue(script.header("Content-Type").startsWith("text/javascript"), script.header("Content-Type"));
      assertTrue(script.body().contains("\"/v1/openapi.json\""), script.body());
      assertTrue(script.body().contains("validatorUrl: null"), "Swagger UI's validator badge would call another host");
      assertTrue(http.get("/docs/swagger-ui-bundle.js", null).body().length() > 500_000);
      assertEquals(404, http.get("/docs/oauth2-redirect.html", null).status());
      assertEquals(404, http.get("/docs/..%2Fopenapi.json", null).status());
    });
  }

  private static JsonNode resolve(JsonNode node) {
    return node.has("$ref") ? DOCUMENT.at(node.get("$ref").textValue().substring(1)) : node;
  }

  private static String normalized(String path) {
    return PARAMETER.matcher(path).replaceAll("{}");
  }

  private static String escape(String token) {
    return token.replace("~", "~0").replace("/", "~1");
  }
}
