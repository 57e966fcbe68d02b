package dev.runway.support;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import io.javalin.testtools.HttpClient;
import io.javalin.testtools.Request;
import io.javalin.testtools.Response;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * An HTTP client for one test: sends the test's key unless told otherwise, and returns {@link Reply}s.
 * Either the client of an app that JavalinTest runs, whose answers are held against the OpenAPI
 * document, or a client of a server the test started itself on a port ({@link #at}).
 */
public final class Http {
  private final HttpClient client;
  private final String defaultKey;
  private final String origin;
  private final java.net.http.HttpClient ownClient;
  private final Duration timeout;

  Http(HttpClient client, String defaultKey) {
    this.client = client;
    this.defaultKey = defaultKey;
    this.origin = client.getOrigin();
    this.ownClient = null;
    this.timeout = null;
    OpenApiContract.get(); // loaded before the test's requests, so that no test times the loading
  }

  private Http(String origin, String defaultKey, java.net.http.HttpClient ownClient, Duration timeout) {
    this.client = null;
    this.defaultKey = defaultKey;
    this.origin = origin;
    this.ownClient = ownClient;
    this.timeout = timeout;
  }

  /**
   * A client of the server at {@code origin} (a packaged jar, an instance on a port of its own),
   * with its own connections, each request given up after 30 s. Its answers come back as they are:
   * tests of kills, outages and instances check what they need of them.
   */
  public static Http at(String origin, String defaultKey) {
    return new Http(origin, defaultKey,
        java.net.http.HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build(), Duration.ofSeconds(30));
  }

  /** A client of the server listening on this port of 127.0.0.1, as {@link #at}. */
  public static Http onPort(int port, String defaultKey) {
    return at("http://127.0.0.1:" + port, defaultKey);
  }

  /** This client with each request given up after {@code timeout} (a client of {@link #at} only). */
  public Http timeout(Duration timeout) {
    if (ownClient == null) {
      throw new IllegalStateException("the requests of JavalinTest's client have its own timeout");
    }
    return new Http(origin, defaultKey, ownClient, timeout);
  }

  /** The key requests go with unless they name another. */
  public String defaultKey() {
    return defaultKey;
  }

  public String origin() {
    return origin;
  }

  public Reply get(String path) {
    return send("GET", path, defaultKey, (String) null, null);
  }

  public Reply get(String path, String key) {
    return send("GET", path, key, (String) null, null);
  }

  public Reply post(String path, String json) {
    return send("POST", path, defaultKey, json, "application/json");
  }

  public Reply post(String path, String key, String json, String... headers) {
    return send("POST", path, key, json, "application/json", headers);
  }

  public Reply put(String path, String json) {
    return send("PUT", path, defaultKey, json, "application/json");
  }

  public Reply patch(String path, String json) {
    return send("PATCH", path, defaultKey, json, "application/json");
  }

  public Reply delete(String path) {
    return send("DELETE", path, defaultKey, (String) null, null);
  }

  /** Starts a run of the workflow in the project with the test's key. */
  public Reply startRun(String workflow, String project) {
    return post("/v1/workflows/" + workflow + "/runs", "{\"project\":\"" + project + "\"}");
  }

  /** Every item of a listing with the test's key: its pages in turn, each asked for after the last one's next_cursor. */
  public List<JsonNode> all(String path) {
    return all(path, "starting_after", null);
  }

  /**
   * Every item of a listing whose pages go on from the cursor named {@code cursorParameter} (e.g.
   * after), starting at {@code firstCursor} (null: none); each page must answer 200.
   */
  public List<JsonNode> all(String path, String cursorParameter, String firstCursor) {
    List<JsonNode> items = new ArrayList<>();
    String cursor = firstCursor;
    do {
      String page = cursor == null ? path : path + (path.contains("?") ? "&" : "?") + cursorParameter + "="
          + URLEncoder.encode(cursor, StandardCharsets.UTF_8);
      Reply reply = get(page);
      assertEquals(200, reply.status(), () -> page + ": " + reply.body());
      JsonNode json = reply.json();
      json.get("data").forEach(items::add);
      cursor = json.get("has_more").asBoolean() ? json.get("next_cursor").asText() : null;
    } while (cursor != null);
    return items;
  }

  /**
   * Any request. key null sends no Authorization; contentType null sends none; headers are name,
   * value pairs.
   */
  public Reply send(String method, String path, String key, String body, String contentType, String... headers) {
    byte[] bytes = body == null ? null : body.getBytes(StandardCharsets.UTF_8);
    return sendPublisher(method, path, key,
        bytes == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(bytes),
        contentType, headers);
  }

  public Reply sendPublisher(String method, String path, String key, HttpRequest.BodyPublisher body, String contentType,
      String... headers) {
    if (ownClient != null) {
      return sendOwn(method, path, key, body, contentType, headers);
    }
    Request.Builder builder = new Request.Builder().url(client.getOrigin() + path);
    headers(key, contentType, headers).forEach(h -> builder.header(h.getKey(), h.getValue()));
    switch (method) {
      case "GET" -> builder.get();
      case "POST" -> builder.post(body);
      case "PUT" -> builder.put(body);
      case "PATCH" -> builder.patch(body);
      case "DELETE" -> builder.delete(body);
      default -> throw new IllegalArgumentException(method);
    }
    Response response = client.request(builder.build());
    Reply reply = new Reply(response.code(), response.headers(), response.body().string());
    // Every answer an API test gets must be what the OpenAPI document says (see OpenApiContract).
    List<String> faults = OpenApiContract.get().violations(method, path, reply.status(), reply.header("Content-Type"),
        reply.body());
    if (!faults.isEmpty()) {
      throw new AssertionError("the answer drifts from src/main/resources/openapi.json:\n" + String.join("\n", faults));
    }
    return reply;
  }

  private Reply sendOwn(String method, String path, String key, HttpRequest.BodyPublisher body, String contentType,
      String... headers) {
    HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(origin + path)).timeout(timeout)
        .method(method, body);
    headers(key, contentType, headers).forEach(h -> builder.header(h.getKey(), h.getValue()));
    try {
      HttpResponse<String> response = ownClient.send(builder.build(), HttpResponse.BodyHandlers.ofString());
      return new Reply(response.statusCode(), new io.javalin.testtools.HttpHeaders(response.headers()),
          response.body());
    } catch (IOException e) {
      throw new UncheckedIOException(method + " " + origin + path + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted: " + method + " " + origin + path, e);
    }
  }

  /** A request's headers in order: the key's Authorization, the Content-Type, then the name, value pairs given. */
  private static List<Map.Entry<String, String>> headers(String key, String contentType, String... pairs) {
    List<Map.Entry<String, String>> headers = new ArrayList<>();
    if (key != null) {
      headers.add(Map.entry("Authorization", "Bearer " + key));
    }
    if (contentType != null) {
      headers.add(Map.entry("Content-Type", contentType));
    }
    for (int i = 0; i + 1 < pairs.length; i += 2) {
      headers.add(Map.entry(pairs[i], pairs[i + 1]));
    }
    return headers;
  }

  /** A response: status, headers and body. */
  public record Reply(int status, io.javalin.testtools.HttpHeaders headers, String body) {
    public JsonNode json() {
      return Json.tree(body);
    }

    public String header(String name) {
      List<String> values = headers.get(name);
      return values == null || values.isEmpty() ? null : values.get(0);
    }

    @Override
    public String toString() {
      return status + " " + body;
    }
  }
}
