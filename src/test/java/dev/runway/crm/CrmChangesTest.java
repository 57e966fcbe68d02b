package dev.runway.crm;

import static dev.runway.crm.CrmRecordsTest.batch;
import static dev.runway.crm.CrmRecordsTest.record;
import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * The change feed: every change in commit order with the record as it was after it, followed by
 * cursor without a gap or a repeat, also while four writers sync at once; 410 once pruned.
 */
class CrmChangesTest {
  private static final String SYNC = "/v1/crm/contacts/records/sync";

  @BothDatabases
  void the_feed_lists_every_change_with_the_record_as_it_was_after_it(Api api) {
    api.test(http -> {
      http.post(SYNC, batch(record("a", "{\"n\":1}"), record("b", "{\"n\":1}")));
      http.post(SYNC, batch(record("a", "{\"n\":2}"), record("b", "{\"n\":1}")));
      http.delete("/v1/crm/contacts/records/b");
      http.post("/v1/crm/deals/records/sync", batch(record("d", "{}")));
      http.post(SYNC, batch(record("a", "{\"n\":null,\"m\":3}")));

      Http.Reply all = http.get("/v1/crm/contacts/changes");
      assertEquals(200, all.status(), all::toString);
      List<String> seen = new ArrayList<>();
      for (JsonNode c : all.json().get("data")) {
        seen.add(c.get("change").asText() + " " + c.get("external_id").asText() + " v" + c.get("version").asInt()
            + " " + c.get("record").get("properties"));
        assertEquals("contacts", c.get("object_type").asText());
        assertEquals(c.get("version"), c.get("record").get("version"));
        assertEquals(c.get("changed_at"), c.get("record").get("updated_at"));
      }
      assertEquals(List.of("created a v1 {\"n\":1}", "created b v1 {\"n\":1}", "updated a v2 {\"n\":2}",
          "deleted b v2 {\"n\":1}", "updated a v3 {\"m\":3}"), seen);
      assertTrue(all.json().get("data").get(3).get("record").get("deleted").asBoolean());
      assertFalse(all.json().get("has_more").asBoolean());
      String last = all.json().get("data").get(4).get("cursor").asText();
      assertEquals(last, all.json().get("next_cursor").asText());

      // Page by page, each page from the last cursor: the same changes, none twice.
      List<String> paged = new ArrayList<>();
      String cursor = null;
      boolean more = true;
      while (more) {
        Http.Reply page = http.get("/v1/crm/contacts/changes?limit=2" + (cursor == null ? "" : "&after=" + cursor));
        assertEquals(200, page.status(), page::toString);
        page.json().get("data").forEach(c -> paged.add(c.get("cursor").asText()));
        more = page.json().get("has_more").asBoolean();
        cursor = page.json().get("next_cursor").asText();
      }
      assertEquals(5, paged.size());
      assertEquals(last, cursor);
      // Caught up: an empty page that keeps the cursor, until something changes.
      Http.Reply empty = http.get("/v1/crm/contacts/changes?after=" + cursor);
      assertEquals(0, empty.json().get("data").size());
      assertEquals(cursor, empty.json().get("next_cursor").asText());
      http.post(SYNC, batch(record("c", "{}")));
      Http.Reply next = http.get("/v1/crm/contacts/changes?after=" + cursor);
      assertEquals(1, next.json().get("data").size());
      assertEquals("c", next.json().get("data").get(0).get("external_id").asText());

      assertEquals(1, http.get("/v1/crm/deals/changes").json().get("data").size());
      assertEquals(0, http.get("/v1/crm/tickets/changes").json().get("data").size());
      assertProblem(http.get("/v1/crm/contacts/changes?after=abc"), 400, "validation_failed", "after");
      assertProblem(http.get("/v1/crm/contacts/changes?after=-1"), 400, "validation_failed", "after");
      assertProblem(http.get("/v1/crm/contacts/changes?limit=0"), 400, "validation_failed", "limit");
      assertProblem(http.get("/v1/crm/contacts/changes?starting_after=1"), 400, "unknown_parameter", "starting_after");
    });
  }

  @BothDatabases
  void a_cursor_older_than_what_was_pruned_gets_410_and_tombstones_go_with_their_changes(Api api) {
    api.test(http -> {
      http.post(SYNC, batch(record("keep", "{}"), record("gone", "{}")));
      String early = http.get("/v1/crm/contacts/changes?limit=1").json().get("next_cursor").asText();
      http.delete("/v1/crm/contacts/records/gone");
      String caughtUp = http.get("/v1/crm/contacts/changes").json().get("next_cursor").asText();

      // Everything so far is past the retention.
      int pruned = api.services().crm().prune(Instant.now().plusSeconds(1));
      assertTrue(pruned >= 3, "pruned " + pruned);
      JsonNode expired = assertProblem(http.get("/v1/crm/contacts/changes?after=" + early), 410, "cursor_expired", "after");
      assertTrue(expired.get("detail").asText().contains("/records"), expired.toString());
      // A reader that had read everything missed nothing: its cursor still works.
      Http.Reply current = http.get("/v1/crm/contacts/changes?after=" + caughtUp);
      assertEquals(200, current.status(), current::toString);
      assertEquals(0, current.json().get("data").size());
      assertEquals(0, http.get("/v1/crm/contacts/changes").json().get("data").size());
      // The tombstone went with its change; the live record stays.
      assertProblem(http.get("/v1/crm/contacts/records/gone"), 404, "record_not_found");
      assertEquals(200, http.get("/v1/crm/contacts/records/keep").status());
      JsonNode contacts = http.get("/v1/crm/objects").json().get("data").get(0);
      assertEquals(1, contacts.get("records").asInt());
      assertEquals(0, contacts.get("deleted_records").asInt());

      // An object type left with nothing is dropped (no longer counted against the limit).
      http.post("/v1/crm/deals/records/sync", batch(record("d", "{}")));
      http.delete("/v1/crm/deals/records/d");
      api.services().crm().prune(Instant.now().plusSeconds(1));
      assertEquals(List.of("contacts"), CrmRecordsTest.objectTypes(http));
    });
  }

  /**
   * Four writers sync overlapping records (creates, updates, deletes) while a reader follows the
   * feed: the reader sees every change exactly once, in commit order, and each record's versions
   * without a gap, ending at what is stored.
   */
  @BothDatabases
  void a_reader_following_the_feed_misses_nothing_while_four_writers_sync(Api api) {
    api.test(http -> followWhileWriting(api, i -> http, http));
  }

  /** The same across two instances on PostgreSQL: writers on both, the reader on one of them. */
  @org.junit.jupiter.api.Test
  void a_reader_misses_nothing_while_writers_sync_through_two_instances_on_postgresql() {
    org.junit.jupiter.api.Assumptions.assumeTrue(TestDatabase.postgresReachable() || TestDatabase.PG_REQUIRED,
        "PostgreSQL is not reachable");
    Api api = Api.on(TestDatabase.POSTGRESQL);
    api.testTwoInstances((first, second) -> followWhileWriting(api, i -> i % 2 == 0 ? first : second, second));
  }

  static void followWhileWriting(Api api, IntFunction<Http> writerConnection, Http reader) throws Exception {
    int writers = 4;
    int syncsEach = 25;
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    List<Future<Integer>> done = new ArrayList<>();
    for (int w = 0; w < writers; w++) {
      Http http = writerConnection.apply(w);
      done.add(pool.submit(() -> {
        int changes = 0;
        for (int s = 0; s < syncsEach; s++) {
          StringBuilder records = new StringBuilder();
          for (int r = 0; r < 20; r++) {
            int id = ThreadLocalRandom.current().nextInt(120); // shared by the writers: concurrent updates
            records.append(r == 0 ? "" : ",").append(ThreadLocalRandom.current().nextInt(10) == 0
                ? "{\"external_id\":\"r" + id + "-" + s + "\",\"deleted\":true}"
                : record("r" + id, "{\"v\":" + ThreadLocalRandom.current().nextInt(1000) + "}"));
          }
          Http.Reply reply = http.post(SYNC, "{\"records\":[" + dedupe(records.toString()) + "]}");
          assertEquals(200, reply.status(), reply::toString);
          JsonNode summary = reply.json().get("summary");
          assertEquals(0, summary.get("failed").asInt(), reply::toString);
          changes += summary.get("created").asInt() + summary.get("updated").asInt() + summary.get("deleted").asInt();
        }
        return changes;
      }));
    }
    List<JsonNode> seen = new ArrayList<>();
    String cursor = "0";
    boolean finalPass = false;
    while (true) {
      Http.Reply page = reader.get("/v1/crm/contacts/changes?limit=37&after=" + cursor);
      assertEquals(200, page.status(), page::toString);
      page.json().get("data").forEach(seen::add);
      cursor = page.json().get("next_cursor").asText();
      if (!page.json().get("has_more").asBoolean()) {
        if (finalPass) {
          break;
        }
        if (done.stream().allMatch(Future::isDone)) {
          finalPass = true; // one more read after the last write was acknowledged
        }
      }
    }
    int acknowledged = 0;
    for (Future<Integer> f : done) {
      acknowledged += f.get(60, TimeUnit.SECONDS);
    }
    pool.shutdown();

    assertEquals(acknowledged, seen.size(), "every acknowledged change was read, once");
    long previous = 0;
    Map<String, Integer> lastVersion = new TreeMap<>();
    for (JsonNode c : seen) {
      long seq = Long.parseLong(c.get("cursor").asText());
      assertTrue(seq > previous, "cursors rise: " + previous + " then " + seq);
      previous = seq;
      String id = c.get("external_id").asText();
      int version = c.get("version").asInt();
      assertEquals(lastVersion.getOrDefault(id, 0) + 1, version, () -> "versions of " + id + " without a gap");
      lastVersion.put(id, version);
    }
    Map<String, Integer> stored = new TreeMap<>();
    api.jdbi().useHandle(h -> h.createQuery(
        "SELECT external_id, version FROM crm_record WHERE workspace_id = :ws AND object_type = 'contacts'")
        .bind("ws", api.workspace).map((rs, ctx) -> stored.put(rs.getString(1), rs.getInt(2))).list());
    assertEquals(stored, lastVersion, "the feed ends at what is stored");
  }

  /** The batch without the later copies of a record listed twice (the writers pick ids at random). */
  private static String dedupe(String records) {
    JsonNode all = dev.runway.core.Json.tree("[" + records + "]");
    Map<String, JsonNode> first = new java.util.LinkedHashMap<>();
    all.forEach(r -> first.putIfAbsent(r.get("external_id").asText(), r));
    return String.join(",", first.values().stream().map(JsonNode::toString).toList());
  }
}
