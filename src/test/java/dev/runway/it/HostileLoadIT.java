package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.TestDatabase;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * The probe of issue 34 (item 2) against the packaged jar at its shipped heap (128 MB): a tenant
 * makes 1,120 records of 60 KB, then reads them with limit=1000, four requests at once, and sends
 * four 1 MiB syncs of 349,000 empty records at once. Before, either killed the server (out of
 * memory); now the pages stop early by bytes, the syncs are refused before their tree is built,
 * and the server stays up and ready.
 */
class HostileLoadIT {
  private static final String SYNC = "/v1/crm/contacts/records/sync";
  private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @Test
  void big_records_read_with_limit_1000_and_syncs_of_empty_records_leave_the_server_up() throws Exception {
    RunwayProcess server = RunwayProcess.onFreshDatabase(TestDatabase.H2,
        Map.of("RUNWAY_RATELIMIT_PER_KEY_PER_SECOND", "0", "RUNWAY_ENGINE_ENABLED", "false"), "runway-hostile-");
    String key = server.command("keys", "create", "--workspace", "default", "--name", "tenant").trim();
    try {
      server.start();
      String value = "v".repeat(15_000);
      String properties = "{\"a\":\"" + value + "\",\"b\":\"" + value + "\",\"c\":\"" + value + "\",\"d\":\""
          + value + "\"}";
      for (int batch = 0; batch < 70; batch++) { // 70 syncs of 16 records of 60 KB: 1,120 records
        StringBuilder records = new StringBuilder();
        for (int i = 0; i < 16; i++) {
          records.append(i == 0 ? "" : ",").append("{\"external_id\":\"r-").append(batch * 16 + i)
              .append("\",\"properties\":").append(properties).append('}');
        }
        HttpResponse<String> made = send(server, key, "POST", SYNC, "{\"records\":[" + records + "]}");
        assertEquals(200, made.statusCode(), () -> "sync: " + made.statusCode());
      }

      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        List<Future<HttpResponse<String>>> reads = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
          for (int i = 0; i < 4; i++) {
            reads.add(pool.submit(() -> send(server, key, "GET", "/v1/crm/contacts/records?limit=1000", null)));
          }
        }
        for (Future<HttpResponse<String>> read : reads) {
          HttpResponse<String> page = read.get();
          assertEquals(200, page.statusCode(), () -> "read: " + page.statusCode());
          JsonNode body = Json.tree(page.body());
          int rows = body.get("data").size();
          assertTrue(rows >= 1 && rows < 1000, () -> "a page of " + rows + " records of 60 KB");
          assertTrue(body.get("has_more").asBoolean());
        }

        StringBuilder empty = new StringBuilder("{\"records\":[");
        for (int i = 0; i < 349_000; i++) {
          empty.append(i == 0 ? "{}" : ",{}");
        }
        String emptyRecords = empty.append("]}").toString();
        List<Future<HttpResponse<String>>> syncs = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
          syncs.add(pool.submit(() -> send(server, key, "POST", SYNC, emptyRecords)));
        }
        for (Future<HttpResponse<String>> sync : syncs) {
          HttpResponse<String> refused = sync.get();
          assertEquals(400, refused.statusCode(), () -> "empty records: " + refused.statusCode());
          assertEquals("records", Json.tree(refused.body()).get("param").asText());
        }
      } finally {
        pool.shutdownNow();
      }

      HttpResponse<String> ready = client.send(HttpRequest.newBuilder(URI.create(server.base() + "/readyz")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(200, ready.statusCode(), ready.body());
      assertFalse(server.logged("OutOfMemoryError"), "the server ran out of memory");
    } finally {
      server.stop();
    }
  }

  private HttpResponse<String> send(RunwayProcess server, String key, String method, String path, String body)
      throws IOException, InterruptedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(server.base() + path))
        .header("Authorization", "Bearer " + key).timeout(Duration.ofSeconds(60));
    if (body == null) {
      request.GET();
    } else {
      request.header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    }
    return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }
}
