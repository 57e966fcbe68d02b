package dev.runway.support;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import io.javalin.testtools.HttpClient;
import io.javalin.testtools.Request;
import io.javalin.testtools.Response;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** An HTTP client for one test: sends the test's key unless told otherwise, and returns {@link Reply}s. */
public final class Http {
  private final HttpClient client;
  private final String defaultKey;

  Http(HttpClient client, String defaultKey) {
    this.client = client;
    this.defaultKey = defaultKey;
    OpenApiContract.get(); // loaded before the test's requests, so that no test times the loading
  }

  public String origin() {
    return client.getOrigin();
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
    Request.Builder builder = new Request.Builder().url(client.getOrigin() + path);
    if (key != null) {
      builder.header("Authorization", "Bearer " + key);
    }
    if (contentType != null) {
      builder.header("Content-Type", contentType);
    }
    for (int i = 0; i + 1 < headers.length; i += 2) {
      builder.header(headers[i], headers[i + 1]);
    }
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
