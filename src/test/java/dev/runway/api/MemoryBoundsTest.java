package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.DomainException;
import dev.runway.engine.Engine;
import dev.runway.http.RequestBodies;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import dev.runway.support.TestDatabase;
import dev.runway.support.ToolServer;
import dev.runway.support.WebhookReceiver;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * What one request may make the server hold is bounded by bytes, not by rows: bodies are counted
 * before their tree is built, pages stop early at their byte budget, event payloads leave step
 * outputs out, the dispatcher keeps its bodies in flight under a byte budget.
 */
class MemoryBoundsTest {
  private static final String SYNC = "/v1/crm/contacts/records/sync";

  /** {"records":[{},{},…]}: 3 bytes of text for each record, about 90 of tree. */
  static String emptyRecords(int count) {
    StringBuilder body = new StringBuilder(count * 3 + 16).append("{\"records\":[");
    for (int i = 0; i < count; i++) {
      body.append(i == 0 ? "{}" : ",{}");
    }
    return body.append("]}").toString();
  }

  @BothDatabases
  void a_sync_of_350000_empty_records_is_refused_with_400_naming_records(Api api) {
    api.test(http -> {
      String body = emptyRecords(349_000);
      assertTrue(body.length() < 1024 * 1024, "within the sync's 1 MiB");
      assertProblem(http.post(SYNC, body), 400, "validation_failed", "records");
    });
  }

  @BothDatabases
  void a_body_of_more_values_than_runway_accepts_is_refused_with_413(Api api) {
    api.test(http -> {
      // One record whose property holds 200,000 numbers: 1,000 records or fewer, but too many values.
      StringBuilder zeros = new StringBuilder();
      for (int i = 0; i < 200_000; i++) {
        zeros.append(i == 0 ? "0" : ",0");
      }
      String body = "{\"records\":[{\"external_id\":\"a\",\"properties\":{\"p\":[" + zeros + "]}}]}";
      assertProblem(http.post(SYNC, body), 413, "body_too_large");
    });
  }

  /** Follows next_cursor from {@code first} to the end; checks every page but the last stops early by bytes. */
  static java.util.List<String> readAll(Http http, String first, String cursorParam, String idField, int perPage) {
    java.util.List<String> ids = new java.util.ArrayList<>();
    String path = first;
    for (int pages = 0; pages < 100; pages++) {
      Http.Reply page = http.get(path);
      assertEquals(200, page.status(), page::toString);
      JsonNode data = page.json().get("data");
      assertTrue(data.size() >= 1, "a page holds at least one row");
      assertTrue(data.size() <= perPage, () -> "a page of " + data.size() + " rows passes its byte budget");
      data.forEach(row -> ids.add(row.get(idField).asText()));
      if (!page.json().get("has_more").asBoolean()) {
        return ids;
      }
      String next = page.json().get("next_cursor").asText();
      path = first + (first.contains("?") ? "&" : "?") + cursorParam + "=" + next;
    }
    throw new AssertionError("more than 100 pages");
  }

  @BothDatabases
  void a_page_of_crm_records_or_changes_stops_early_at_its_byte_budget_with_has_more(Api api) {
    String value = "v".repeat(10_000);
    StringBuilder records = new StringBuilder();
    for (int i = 0; i < 30; i++) {
      records.append(i == 0 ? "" : ",").append("{\"external_id\":\"r").append(100 + i)
          .append("\",\"properties\":{\"p\":\"").append(value).append("\"}}");
    }
    // 32 KiB a page: three records of 10 KB.
    api.testWith(s -> s.with("http.max_page_bytes", "32768"), http -> {
      Http.Reply sync = http.post(SYNC, "{\"records\":[" + records + "]}");
      assertEquals(200, sync.status(), sync::toString);
      Http.Reply first = http.get("/v1/crm/contacts/records?limit=1000");
      assertEquals(3, first.json().get("data").size(), first.body().substring(0, 200));
      assertTrue(first.json().get("has_more").asBoolean());
      assertEquals("r102", first.json().get("next_cursor").asText());
      java.util.List<String> all = readAll(http, "/v1/crm/contacts/records?limit=1000", "starting_after",
          "external_id", 3);
      assertEquals(30, all.size());
      assertEquals(30, new java.util.HashSet<>(all).size());

      java.util.List<String> changes = readAll(http, "/v1/crm/contacts/changes?limit=1000", "after",
          "external_id", 3);
      assertEquals(30, changes.size());
    });
  }

  @BothDatabases
  void a_sync_touching_more_than_4_mi_characters_of_records_is_refused_with_413(Api api) {
    String value = "v".repeat(15_000);
    String properties = "{\"a\":\"" + value + "\",\"b\":\"" + value + "\",\"c\":\"" + value + "\",\"d\":\""
        + value + "\"}";
    api.test(http -> {
      // 80 records of 60 KB: 4.8 MB, made 16 at a time (each sync within its 1 MiB body).
      for (int batch = 0; batch < 5; batch++) {
        StringBuilder records = new StringBuilder();
        for (int i = 0; i < 16; i++) {
          records.append(i == 0 ? "" : ",").append("{\"external_id\":\"big-").append(batch * 16 + i)
              .append("\",\"properties\":").append(properties).append('}');
        }
        Http.Reply made = http.post(SYNC, "{\"records\":[" + records + "]}");
        assertEquals(200, made.status(), () -> "status " + made.status());
      }
      // A small merge into all 80 would read them all and copy them all into change rows.
      StringBuilder touch = new StringBuilder();
      for (int i = 0; i < 80; i++) {
        touch.append(i == 0 ? "" : ",").append("{\"external_id\":\"big-").append(i)
            .append("\",\"properties\":{\"x\":1}}");
      }
      assertProblem(http.post(SYNC, "{\"records\":[" + touch + "]}"), 413, "sync_too_large", "records");
      // Fewer at a time go through.
      String some = touch.substring(0, touch.indexOf("{\"external_id\":\"big-20\"") - 1);
      Http.Reply fewer = http.post(SYNC, "{\"records\":[" + some + "]}");
      assertEquals(200, fewer.status(), () -> "status " + fewer.status());
      assertEquals(20, fewer.json().get("summary").get("updated").asInt());
    });
  }

  @BothDatabases
  void a_page_of_runs_stops_early_at_its_byte_budget_with_has_more(Api api) {
    api.workflowThatCalls("big");
    String input = "i".repeat(20_000);
    // 64 KiB a page: each run stores its 20 KB of inputs and its definition.
    api.testWith(s -> s.with("http.max_page_bytes", "65536"), http -> {
      for (int i = 0; i < 12; i++) {
        Http.Reply started = http.post("/v1/workflows/big/runs",
            "{\"project\":\"p\",\"inputs\":{\"blob\":\"" + input + "\"}}");
        assertEquals(200, started.status(), () -> "status " + started.status());
      }
      Http.Reply first = http.get("/v1/runs?limit=100");
      int size = first.json().get("data").size();
      assertTrue(size >= 1 && size <= 3, () -> "a page of " + size + " runs of 20 KB within 64 KiB");
      assertTrue(first.json().get("has_more").asBoolean());
      java.util.List<String> all = readAll(http, "/v1/runs?limit=100", "starting_after", "id", 3);
      assertEquals(12, all.size());
    });
  }

  @BothDatabases
  void pages_of_workflows_and_agents_stop_early_at_their_byte_budget_with_has_more(Api api) {
    String text = "d".repeat(1_900);
    // 4 KiB a page: each definition stores about 2 KB of description (or instructions) and more.
    api.testWith(s -> s.with("http.max_page_bytes", "4096"), http -> {
      for (int i = 0; i < 7; i++) {
        Http.Reply flow = http.put("/v1/workflows/paged-" + i, "{\"description\":\"" + text + "\",\"steps\":"
            + "[{\"type\":\"delay\",\"seconds\":1}]}");
        assertEquals(201, flow.status(), flow::toString);
        Http.Reply agent = http.put("/v1/agents/paged-" + i, "{\"model\":\"m\",\"instructions\":\"" + text + "\"}");
        assertEquals(201, agent.status(), agent::toString);
      }
      for (String list : new String[] {"/v1/workflows?limit=100", "/v1/agents?limit=100"}) {
        Http.Reply first = http.get(list);
        int size = first.json().get("data").size();
        assertTrue(size >= 1 && size <= 2, () -> list + ": a page of " + size + " definitions of 2 KB within 4 KiB");
        assertTrue(first.json().get("has_more").asBoolean(), list);
        java.util.List<String> ids = readAll(http, list, "starting_after", "id", 2);
        assertEquals(7, ids.stream().filter(id -> id.startsWith("paged-")).count(), () -> list + ": " + ids);
      }
    });
  }

  @BothDatabases
  void a_run_event_carries_the_run_without_step_outputs_and_within_64_KiB(Api api) {
    String big = "{\"blob\":\"" + "o".repeat(60_000) + "\"}";
    try (ToolServer tool = ToolServer.start(); WebhookReceiver receiver = new WebhookReceiver();
         Engine engine = api.database().startEngine()) {
      tool.script("/big", ToolServer.Reply.json(200, big));
      api.testWebhooks(s -> s, http -> {
        String step = "{\"type\":\"http\",\"url\":\"" + tool.url("/big") + "\"}";
        Http.Reply put = http.put("/v1/workflows/big", "{\"requires_approval\":false,\"steps\":["
            + String.join(",", java.util.Collections.nCopies(3, step)) + "]}");
        assertTrue(put.status() == 200 || put.status() == 201, put::toString);
        Http.Reply made = http.post("/v1/webhook_endpoints", "{\"url\":\"" + receiver.url("/all")
            + "\",\"event_types\":[\"*\"]}");
        assertEquals(201, made.status(), made::toString);
        receiver.trust(made.json().get("secret").asText());

        String runId = Runs.start(http, "big", "p", "{}").get("id").asText();
        Runs.awaitStatus(http, runId, "succeeded");
        java.util.List<WebhookReceiver.Delivery> got = receiver.await(Duration.ofSeconds(60),
            d -> d.stream().anyMatch(x -> x.type().equals("run.succeeded")), "run.succeeded");
        for (WebhookReceiver.Delivery d : got) {
          JsonNode data = d.body().get("data");
          assertEquals(runId, data.get("id").asText());
          assertEquals("/v1/runs/" + runId, data.get("url").asText());
          assertTrue(d.body().toString().length() < 64 * 1024 + 1024, () -> d.type() + " is "
              + d.body().toString().length() + " chars");
          for (JsonNode s : data.path("steps")) {
            assertTrue(s.path("output").isMissingNode(), () -> d.type() + " carries a step's output");
          }
        }
        JsonNode done = got.stream().filter(x -> x.type().equals("run.succeeded")).findFirst().orElseThrow()
            .body().get("data");
        assertEquals(3, done.get("steps").size());
        assertEquals("succeeded", done.get("steps").get(2).get("status").asText());
        // The run itself, read through the link, still has every output.
        JsonNode run = http.get("/v1/runs/" + runId).json();
        assertEquals(60_000, run.get("steps").get(2).get("output").get("blob").asText().length());
      });
    }
  }

  @BothDatabases
  void a_run_event_over_64_KiB_without_outputs_carries_a_truncated_summary(Api api) {
    api.workflow("w", false);
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      api.testWebhooks(s -> s, http -> {
        Http.Reply made = http.post("/v1/webhook_endpoints", "{\"url\":\"" + receiver.url("/all")
            + "\",\"event_types\":[\"run.succeeded\"]}");
        assertEquals(201, made.status(), made::toString);
        // Inputs of 65,400 characters: within the 64 KiB body, past 64 KiB as a run record.
        Http.Reply started = http.post("/v1/workflows/w/runs",
            "{\"project\":\"p\",\"inputs\":{\"blob\":\"" + "i".repeat(65_400) + "\"}}");
        assertEquals(200, started.status(), () -> "status " + started.status());
        String runId = started.json().get("id").asText();
        JsonNode data = receiver.await(Duration.ofSeconds(60), d -> !d.isEmpty(), "run.succeeded").get(0)
            .body().get("data");
        assertTrue(data.get("truncated").asBoolean(), data::toString);
        assertEquals(runId, data.get("id").asText());
        assertEquals("succeeded", data.get("status").asText());
        assertEquals("/v1/runs/" + runId, data.get("url").asText());
        assertTrue(data.path("inputs").isMissingNode(), "the summary leaves the inputs out");
      });
    }
  }

  @BothDatabases
  void the_webhook_dispatcher_holds_bodies_within_its_byte_budget(Api api) {
    api.workflow("w", false);
    String blob = "b".repeat(30_000);
    long budget = 131_072;
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      // A slow endpoint: each delivery waits 300 ms for its answer, so they pile up.
      receiver.script("/slow", new WebhookReceiver.Reply(200, null, Duration.ofMillis(300)));
      api.testWebhooks(s -> s.with("webhooks.max_bytes_in_flight", Long.toString(budget)), (http, dispatcher) -> {
        java.util.concurrent.atomic.AtomicLong peak = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicBoolean watching = new java.util.concurrent.atomic.AtomicBoolean(true);
        Thread watcher = new Thread(() -> {
          while (watching.get()) {
            peak.accumulateAndGet(dispatcher.bytesInFlight(), Math::max);
            try {
              Thread.sleep(2);
            } catch (InterruptedException e) {
              return;
            }
          }
        });
        watcher.start();
        try {
          Http.Reply made = http.post("/v1/webhook_endpoints", "{\"url\":\"" + receiver.url("/slow")
              + "\",\"event_types\":[\"*\"]}");
          assertEquals(201, made.status(), made::toString);
          for (int i = 0; i < 20; i++) {
            Http.Reply started = http.post("/v1/workflows/w/runs",
                "{\"project\":\"p\",\"inputs\":{\"blob\":\"" + blob + "\"}}");
            assertEquals(200, started.status(), () -> "status " + started.status());
          }
          // Each run without steps: run.started and run.succeeded, 40 deliveries of about 30 KB.
          receiver.await(Duration.ofSeconds(120), d -> d.size() >= 40, "40 deliveries");
        } finally {
          watching.set(false);
          watcher.join();
        }
        // The budget, plus what one commit may hand over past it (a run's two events).
        assertTrue(peak.get() <= budget + 2 * 66 * 1024, () -> "held " + peak.get() + " chars of bodies");
        assertTrue(peak.get() > 0, "the watcher saw bodies in flight");
      });
    }
  }

  @Test
  void the_records_of_a_sync_are_counted_before_a_tree_is_built() {
    byte[] body = emptyRecords(349_000).getBytes(StandardCharsets.UTF_8);
    com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long thread = Thread.currentThread().getId();
    // Once before measuring, so that loading classes is not counted.
    assertThrows(DomainException.class, () -> RequestBodies.parseObject(body, "records", 1000, "too many records"));
    long before = threads.getThreadAllocatedBytes(thread);
    DomainException refused = assertThrows(DomainException.class,
        () -> RequestBodies.parseObject(body, "records", 1000, "too many records"));
    long allocated = threads.getThreadAllocatedBytes(thread) - before;
    assertEquals("records", refused.param());
    // The tree of 350,000 empty objects is about 30 MB; counting them allocates next to nothing.
    assertTrue(allocated < 4 * 1024 * 1024, () -> "allocated " + allocated + " bytes");
  }
}
