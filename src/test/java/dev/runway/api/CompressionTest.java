package dev.runway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.zip.GZIPInputStream;

/**
 * A client that accepts gzip gets answers of 1,500 bytes or more gzipped (JSON, the API reference,
 * its style sheet), smaller ones as they are. (The test client of the other tests unpacks gzip by itself
 * and hides the header: these requests go through the JDK's client, which does not.)
 */
class CompressionTest {

  @BothDatabases
  void answers_past_1500_bytes_are_gzipped_for_a_client_that_accepts_it(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      String runId = null;
      for (int i = 0; i < 20; i++) {
        runId = http.startRun("hello", "demo").json().get("id").asText();
      }
      Raw list = get(http, "/v1/runs?limit=20", api.key);
      assertEquals(200, list.status());
      assertEquals("gzip", list.encoding(), list::toString);
      // The types as RunwayApp names them on Javalin's list of types allowed for compression.
      assertEquals("application/json;charset=utf-8", list.type(), list::toString);
      JsonNode runs = Json.tree(list.text());
      assertEquals(20, runs.get("data").size());
      assertEquals(runId, runs.get("data").get(0).get("id").asText());

      Raw reference = get(http, "/v1/openapi.json", null);
      assertEquals(200, reference.status());
      assertEquals("gzip", reference.encoding(), reference::toString);
      assertTrue(Json.tree(reference.text()).has("paths"));

      Raw style = get(http, "/docs/swagger-ui.css", null); // a type not named among the allowed ones
      assertEquals(200, style.status());
      assertEquals("gzip", style.encoding(), () -> style.type() + " " + style.text().length());
      assertTrue(style.type().startsWith("text/css"), style::type);
      assertTrue(style.text().contains(".swagger-ui"), () -> style.text().substring(0, 200));

      Raw one = get(http, "/v1/runs/" + runId, api.key);
      assertEquals(200, one.status());
      assertNull(one.encoding(), one::toString);
      assertEquals(runId, Json.tree(one.text()).get("id").asText());

      Raw problem = get(http, "/v1/runs/run_01m80m00h08nf1qrfhqggxcsnm", api.key);
      assertEquals(404, problem.status());
      assertNull(problem.encoding(), problem::toString);
      assertEquals("application/problem+json; charset=utf-8", problem.type(), problem::toString);
      assertEquals("run_not_found", Json.tree(problem.text()).get("code").asText());
    });
  }

  /** An answer as it came: status, Content-Encoding (null if none), Content-Type and the body, unpacked. */
  private record Raw(int status, String encoding, String type, String text) {}

  private static Raw get(Http http, String path, String key) {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(http.origin() + path))
        .timeout(Duration.ofSeconds(10)).header("Accept-Encoding", "gzip");
    if (key != null) {
      request.header("Authorization", "Bearer " + key);
    }
    try {
      HttpResponse<byte[]> response = HttpClient.newHttpClient().send(request.build(),
          HttpResponse.BodyHandlers.ofByteArray());
      String encoding = response.headers().firstValue("Content-Encoding").orElse(null);
      byte[] body = response.body();
      if ("gzip".equals(encoding)) {
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(body))) {
          body = in.readAllBytes();
        }
      }
      return new Raw(response.statusCode(), encoding, response.headers().firstValue("Content-Type").orElse(""),
          new String(body, StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
