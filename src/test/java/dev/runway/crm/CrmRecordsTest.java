package dev.runway.crm;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.auth.Scope;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * CRM records through HTTP: each outcome of a sync, merge and replace, staleness, per-record
 * failures beside committed records, limits, encoded external ids, tombstones, idempotent replay,
 * isolation and scopes.
 */
class CrmRecordsTest {
  private static final String SYNC = "/v1/crm/contacts/records/sync";

  static String record(String id, String properties) {
    return "{\"external_id\":\"" + id + "\",\"properties\":" + properties + "}";
  }

  static String batch(String... records) {
    return "{\"records\":[" + String.join(",", records) + "]}";
  }

  static List<String> statuses(Http.Reply reply) {
    List<String> statuses = new ArrayList<>();
    reply.json().get("results").forEach(r -> statuses.add(r.get("status").asText()));
    return statuses;
  }

  @BothDatabases
  void a_sync_reports_created_updated_unchanged_deleted_stale_and_failed_in_input_order(Api api) {
    api.test(http -> {
      Http.Reply first = http.post(SYNC, batch(
          "{\"external_id\":\"hs-1\",\"properties\":{\"email\":\"ann@example.com\",\"stage\":\"lead\"},"
              + "\"source_updated_at\":\"2026-11-20T10:00:00Z\"}",
          record("hs-2", "{\"email\":\"bob@example.com\"}"),
          record("hs-3", "{\"email\":\"cy@example.com\"}")));
      assertEquals(200, first.status(), first::toString);
      assertTrue(first.header("Content-Type").startsWith("application/json"));
      assertEquals(Api.json("{\"created\":3,\"updated\":0,\"unchanged\":0,\"deleted\":0,\"stale\":0,\"failed\":0}"),
          first.json().get("summary"));
      assertEquals(Api.json("{\"index\":0,\"external_id\":\"hs-1\",\"status\":\"created\",\"version\":1,\"error\":null}"),
          first.json().get("results").get(0));

      Http.Reply second = http.post(SYNC, batch(
          "{\"external_id\":\"hs-1\",\"properties\":{\"stage\":\"customer\"},\"source_updated_at\":\"2026-11-20T09:00:00Z\"}",
          record("hs-2", "{\"email\":\"bob@example.com\"}"),
          record("hs-3", "{\"stage\":\"lead\"}"),
          "{\"external_id\":\"hs-2-gone\",\"deleted\":true}",
          "{\"properties\":{}}",
          record("hs-4", "{\"x\":1}")));
      assertEquals(200, second.status(), second::toString);
      assertEquals(List.of("stale", "unchanged", "updated", "deleted", "failed", "created"), statuses(second));
      assertEquals(Api.json("{\"created\":1,\"updated\":1,\"unchanged\":1,\"deleted\":1,\"stale\":1,\"failed\":1}"),
          second.json().get("summary"));
      JsonNode results = second.json().get("results");
      for (int i = 0; i < results.size(); i++) {
        assertEquals(i, results.get(i).get("index").asInt());
      }
      assertEquals(1, results.get(0).get("version").asInt(), "a stale record reports the stored version");
      assertEquals(1, results.get(1).get("version").asInt());
      assertEquals(2, results.get(2).get("version").asInt());
      JsonNode error = results.get(4).get("error");
      assertEquals("validation_failed", error.get("code").asText());
      assertEquals("records[4].external_id", error.get("param").asText());
      assertEquals(400, error.get("status").asInt());
      assertTrue(results.get(4).get("external_id").isNull());

      // What is stored: the stale copy changed nothing; the update merged.
      JsonNode one = http.get("/v1/crm/contacts/records/hs-1").json();
      assertEquals("lead", one.get("properties").get("stage").asText());
      assertEquals("2026-11-20T10:00:00.000Z", one.get("source_updated_at").asText());
      JsonNode three = http.get("/v1/crm/contacts/records/hs-3").json();
      assertEquals(Api.json("{\"email\":\"cy@example.com\",\"stage\":\"lead\"}"), three.get("properties"));
      assertEquals(List.of("object_type", "external_id", "properties", "version", "deleted", "source_updated_at",
          "created_at", "updated_at"), fieldNames(three));
      assertEquals(2, three.get("version").asInt());
      assertEquals(2, storedVersion(api, "hs-3"));
      assertEquals(5L, (long) api.jdbi().withHandle(h -> h.createQuery(
          "SELECT COUNT(*) FROM crm_record WHERE workspace_id = :ws").bind("ws", api.workspace).mapTo(Long.class).one()));
    });
  }

  @BothDatabases
  void sending_the_same_batch_again_changes_nothing(Api api) {
    api.test(http -> {
      String body = batch(record("a", "{\"n\":1.50,\"tags\":[\"x\",\"y\"],\"nested\":{\"k\":true}}"),
          "{\"external_id\":\"b\",\"properties\":{\"email\":\"b@example.com\"},\"source_updated_at\":\"2026-01-01T00:00:00.000Z\"}",
          "{\"external_id\":\"c\",\"deleted\":true}");
      assertEquals(List.of("created", "created", "deleted"), statuses(http.post(SYNC, body)));
      long changes = countChanges(api);
      Http.Reply again = http.post(SYNC, body);
      assertEquals(List.of("unchanged", "unchanged", "unchanged"), statuses(again));
      assertEquals(changes, countChanges(api), "no new change in the feed");
      assertEquals(1, storedVersion(api, "a"));
    });
  }

  @BothDatabases
  void merge_keeps_what_is_not_sent_and_null_removes_while_replace_replaces_everything(Api api) {
    api.test(http -> {
      http.post(SYNC, batch(record("m", "{\"a\":1,\"b\":2,\"c\":3}")));
      assertEquals(List.of("updated"), statuses(http.post(SYNC, batch(record("m", "{\"b\":20,\"c\":null,\"d\":4}")))));
      assertEquals(Api.json("{\"a\":1,\"b\":20,\"d\":4}"), properties(http, "m"));
      // Removing a property that is not there, or sending none, changes nothing.
      assertEquals(List.of("unchanged"), statuses(http.post(SYNC, batch(record("m", "{\"zzz\":null}")))));
      assertEquals(List.of("unchanged"), statuses(http.post(SYNC, batch("{\"external_id\":\"m\"}"))));
      Http.Reply replaced = http.post(SYNC, "{\"mode\":\"replace\",\"records\":[" + record("m", "{\"z\":9,\"gone\":null}") + "]}");
      assertEquals(List.of("updated"), statuses(replaced));
      assertEquals(Api.json("{\"z\":9}"), properties(http, "m"));
      assertEquals(List.of("unchanged"), statuses(http.post(SYNC,
          "{\"mode\":\"replace\",\"records\":[" + record("m", "{\"z\":9}") + "]}")));
      assertProblem(http.post(SYNC, "{\"mode\":\"upsert\",\"records\":[" + record("m", "{}") + "]}"), 400,
          "validation_failed", "mode");
    });
  }

  @BothDatabases
  void an_older_copy_is_stale_also_after_a_delete_that_arrived_first(Api api) {
    api.test(http -> {
      // The delete (at 12:00) arrives before the create (at 11:00) it overtook.
      Http.Reply delete = http.post(SYNC, batch(
          "{\"external_id\":\"late\",\"deleted\":true,\"source_updated_at\":\"2026-11-20T12:00:00Z\"}"));
      assertEquals(List.of("deleted"), statuses(delete));
      Http.Reply create = http.post(SYNC, batch(
          "{\"external_id\":\"late\",\"properties\":{\"a\":1},\"source_updated_at\":\"2026-11-20T11:00:00+00:00\"}"));
      assertEquals(List.of("stale"), statuses(create));
      assertTrue(http.get("/v1/crm/contacts/records/late").json().get("deleted").asBoolean());
      // A newer copy brings it back: created again, with only its new properties.
      Http.Reply back = http.post(SYNC, batch(
          "{\"external_id\":\"late\",\"properties\":{\"b\":2},\"source_updated_at\":\"2026-11-20T13:00:00Z\"}"));
      assertEquals(List.of("created"), statuses(back));
      assertEquals(2, back.json().get("results").get(0).get("version").asInt());
      assertEquals(Api.json("{\"b\":2}"), properties(http, "late"));
      // The same time again is not stale: it is compared, here unchanged.
      assertEquals(List.of("unchanged"), statuses(http.post(SYNC, batch(
          "{\"external_id\":\"late\",\"properties\":{\"b\":2},\"source_updated_at\":\"2026-11-20T13:00:00.000Z\"}"))));
      // A copy without a time is never stale.
      assertEquals(List.of("updated"), statuses(http.post(SYNC, batch(record("late", "{\"b\":3}")))));
    });
  }

  @BothDatabases
  void a_record_listed_twice_fails_for_the_later_copy_and_the_first_commits(Api api) {
    api.test(http -> {
      Http.Reply reply = http.post(SYNC, batch(record("dup", "{\"v\":1}"), record("other", "{}"),
          record("dup", "{\"v\":2}")));
      assertEquals(List.of("created", "created", "failed"), statuses(reply));
      JsonNode error = reply.json().get("results").get(2).get("error");
      assertEquals("duplicate_record", error.get("code").asText());
      assertEquals("records[2].external_id", error.get("param").asText());
      assertEquals("dup", reply.json().get("results").get(2).get("external_id").asText());
      assertEquals(Api.json("{\"v\":1}"), properties(http, "dup"));
    });
  }

  @BothDatabases
  void each_bad_record_fails_alone_naming_its_field_and_the_rest_commit(Api api) {
    api.test(http -> {
      Http.Reply reply = http.post(SYNC, batch(
          record("good-1", "{}"),
          "42",
          "{\"external_id\":\"x\",\"properties\":[1]}",
          "{\"external_id\":\"x2\",\"colour\":\"red\"}",
          "{\"external_id\":\"\"}",
          "{\"external_id\":\"" + "i".repeat(256) + "\"}",
          "{\"external_id\":\"tab\\there\"}",
          "{\"external_id\":7}",
          "{\"external_id\":\"x3\",\"deleted\":true,\"properties\":{\"a\":1}}",
          "{\"external_id\":\"x4\",\"source_updated_at\":\"yesterday\"}",
          "{\"external_id\":\"x5\",\"deleted\":\"yes\"}",
          "{\"external_id\":\"x6\",\"properties\":{\"\":1}}",
          record("good-2", "{\"ok\":true}")));
      assertEquals(200, reply.status(), reply::toString);
      List<String> params = new ArrayList<>();
      reply.json().get("results").forEach(r -> params.add(r.get("error").isNull() ? r.get("status").asText()
          : r.get("error").get("param").asText()));
      assertEquals(List.of("created", "records[1]", "records[2].properties", "records[3].colour",
          "records[4].external_id", "records[5].external_id", "records[6].external_id", "records[7].external_id",
          "records[8].properties", "records[9].source_updated_at", "records[10].deleted", "records[11].properties",
          "created"), params);
      assertEquals("unknown_parameter", reply.json().get("results").get(3).get("error").get("code").asText());
      assertEquals(11, reply.json().get("summary").get("failed").asInt());
      assertEquals(200, http.get("/v1/crm/contacts/records/good-2").status());
      assertProblem(http.get("/v1/crm/contacts/records/x"), 404, "record_not_found");
    });
  }

  @BothDatabases
  void a_request_malformed_as_a_whole_is_refused_with_400_or_413(Api api) {
    api.test(http -> {
      assertProblem(http.post(SYNC, "{\"records\":[{\"external_id\":\"a\"}"), 400, "invalid_json");
      assertProblem(http.post(SYNC, "[]"), 400, "invalid_json");
      assertProblem(http.post(SYNC, "{}"), 400, "validation_failed", "records");
      assertProblem(http.post(SYNC, "{\"records\":{}}"), 400, "validation_failed", "records");
      assertProblem(http.post(SYNC, "{\"records\":[]}"), 400, "validation_failed", "records");
      assertProblem(http.post(SYNC, "{\"records\":[],\"upsert\":true}"), 400, "unknown_parameter", "upsert");
      String tooMany = IntStream.range(0, 1001).mapToObj(i -> record("r" + i, "{}")).collect(Collectors.joining(","));
      assertProblem(http.post(SYNC, "{\"records\":[" + tooMany + "]}"), 400, "validation_failed", "records");
      assertProblem(http.post("/v1/crm/Not_A_Slug/records/sync", batch(record("a", "{}"))), 400, "validation_failed",
          "object_type");
      assertProblem(http.send("POST", SYNC, api.key, batch(record("a", "{}")), "text/plain"), 415,
          "unsupported_media_type");

      // 1,000 records of about 1 KB each: past other endpoints' 64 KiB, within the sync's 1 MiB.
      String value = "v".repeat(900);
      String thousand = IntStream.range(0, 1000).mapToObj(i -> record("big-" + i, "{\"p\":\"" + value + "\"}"))
          .collect(Collectors.joining(","));
      Http.Reply big = http.post(SYNC, "{\"records\":[" + thousand + "]}");
      assertEquals(200, big.status(), () -> big.toString().substring(0, 300));
      assertEquals(1000, big.json().get("summary").get("created").asInt());
      // Past 1 MiB: refused from the Content-Length, before the body is read; other paths keep 64 KiB.
      // (Sent as headers alone: a client still sending the body may not see the early answer.)
      String tooLarge = declaredLength(http, api.key, "POST", SYNC, 1024 * 1024 + 1);
      assertTrue(tooLarge.startsWith("HTTP/1.1 413"), tooLarge);
      assertTrue(tooLarge.contains("\"code\":\"body_too_large\""), tooLarge);
      assertTrue(tooLarge.contains("1048576 bytes"), tooLarge);
      String put = declaredLength(http, api.key, "PUT", "/v1/workflows/w", 70_000);
      assertTrue(put.startsWith("HTTP/1.1 413"), put);
      assertTrue(put.contains("application/problem+json") && put.contains("65536 bytes"), put);
      assertEquals(200, http.get("/v1/crm/contacts/records/big-999").status(), "the server keeps serving");
    });
  }

  @BothDatabases
  void limits_on_properties_values_records_and_object_types_are_400s_naming_what(Api api) {
    api.testWith(s -> s.with("crm.max_properties", "3").with("crm.max_value_bytes", "64")
        .with("crm.max_record_bytes", "120").with("crm.max_object_types", "2"), http -> {
      Http.Reply reply = http.post(SYNC, batch(
          record("p4", "{\"a\":1,\"b\":2,\"c\":3,\"d\":4}"),
          record("big-value", "{\"a\":\"" + "x".repeat(70) + "\"}"),
          record("ok", "{\"a\":\"" + "x".repeat(50) + "\",\"b\":1}")));
      assertEquals(List.of("failed", "failed", "created"), statuses(reply));
      JsonNode results = reply.json().get("results");
      assertEquals("too_many_properties", results.get(0).get("error").get("code").asText());
      assertEquals("records[0].properties", results.get(0).get("error").get("param").asText());
      assertEquals("value_too_large", results.get(1).get("error").get("code").asText());
      assertEquals("records[1].properties.a", results.get(1).get("error").get("param").asText());
      // Merged with what is stored the record grows past its limits.
      Http.Reply grown = http.post(SYNC, batch(record("ok", "{\"c\":\"" + "y".repeat(60) + "\"}"),
          record("ok2", "{}")));
      assertEquals("record_too_large", grown.json().get("results").get(0).get("error").get("code").asText());
      assertEquals("created", grown.json().get("results").get(1).get("status").asText());
      assertEquals(List.of("failed"), statuses(http.post(SYNC, batch(record("ok", "{\"c\":1,\"d\":2}")))));

      assertEquals(200, http.post("/v1/crm/deals/records/sync", batch(record("d1", "{}"))).status());
      assertProblem(http.post("/v1/crm/tickets/records/sync", batch(record("t1", "{}"))), 400,
          "too_many_object_types", "object_type");
      assertEquals(List.of("contacts", "deals"), objectTypes(http));
    });
  }

  @BothDatabases
  void external_ids_with_slashes_colons_at_signs_and_spaces_work_percent_encoded(Api api) {
    api.test(http -> {
      List<String> ids = List.of("a/b", "user:42@example.com", "with space", "100%", "ünï/cødé", "q?x=1#f", "..");
      String records = ids.stream().map(id -> "{\"external_id\":" + json(id) + ",\"properties\":{\"id\":" + json(id) + "}}")
          .collect(Collectors.joining(","));
      Http.Reply synced = http.post(SYNC, "{\"records\":[" + records + "]}");
      assertEquals(200, synced.status(), synced::toString);
      for (String id : ids) {
        String path = "/v1/crm/contacts/records/" + encode(id);
        Http.Reply one = http.get(path);
        assertEquals(200, one.status(), () -> id + ": " + one);
        assertEquals(id, one.json().get("external_id").asText());
        assertEquals(id, one.json().get("properties").get("id").asText());
      }
      Http.Reply deleted = http.delete("/v1/crm/contacts/records/" + encode("a/b"));
      assertEquals(200, deleted.status(), deleted::toString);
      assertTrue(deleted.json().get("deleted").asBoolean());
      // The list pages by external id, also with a cursor that needs encoding.
      Http.Reply page = http.get("/v1/crm/contacts/records?limit=2&starting_after=" + encode("100%"));
      assertEquals(List.of("q?x=1#f", "user:42@example.com"), externalIds(page));
      assertProblem(http.get("/v1/crm/contacts/records/" + encode("tab\there")), 400, "validation_failed",
          "external_id");
    });
  }

  @BothDatabases
  void a_delete_leaves_a_tombstone_listed_only_with_include_deleted(Api api) {
    api.test(http -> {
      http.post(SYNC, batch(record("t1", "{\"a\":1}"), record("t2", "{\"a\":2}"), record("t3", "{}")));
      Http.Reply deleted = http.delete("/v1/crm/contacts/records/t2");
      assertEquals(200, deleted.status(), deleted::toString);
      assertEquals(2, deleted.json().get("version").asInt());
      assertTrue(deleted.json().get("deleted").asBoolean());
      assertEquals(Api.json("{\"a\":2}"), deleted.json().get("properties"), "a tombstone keeps the last properties");
      Http.Reply again = http.delete("/v1/crm/contacts/records/t2");
      assertEquals(200, again.status());
      assertEquals(2, again.json().get("version").asInt(), "deleting twice changes nothing");
      assertProblem(http.delete("/v1/crm/contacts/records/never"), 404, "record_not_found");
      assertProblem(http.delete("/v1/crm/deals/records/t1"), 404, "record_not_found");

      Http.Reply one = http.get("/v1/crm/contacts/records/t2");
      assertEquals(200, one.status());
      assertTrue(one.json().get("deleted").asBoolean());
      assertEquals(List.of("t1", "t3"), externalIds(http.get("/v1/crm/contacts/records")));
      assertEquals(List.of("t1", "t2", "t3"), externalIds(http.get("/v1/crm/contacts/records?include_deleted=true")));
      Http.Reply paged = http.get("/v1/crm/contacts/records?include_deleted=true&limit=2");
      assertEquals(List.of("t1", "t2"), externalIds(paged));
      assertTrue(paged.json().get("has_more").asBoolean());
      assertEquals("t2", paged.json().get("next_cursor").asText());
      assertEquals(List.of("t3"), externalIds(http.get("/v1/crm/contacts/records?include_deleted=true&starting_after=t2")));
      Http.Reply objects = http.get("/v1/crm/objects");
      assertEquals(200, objects.status());
      JsonNode contacts = objects.json().get("data").get(0);
      assertEquals("contacts", contacts.get("object_type").asText());
      assertEquals(2, contacts.get("records").asInt());
      assertEquals(1, contacts.get("deleted_records").asInt());

      // updated_after: only records changed since.
      String since = one.json().get("updated_at").asText();
      Thread.sleep(5);
      http.post(SYNC, batch(record("t3", "{\"b\":1}")));
      assertEquals(List.of("t3"), externalIds(http.get("/v1/crm/contacts/records?updated_after=" + since)));
      assertProblem(http.get("/v1/crm/contacts/records?updated_after=soon"), 400, "validation_failed", "updated_after");
      assertProblem(http.get("/v1/crm/contacts/records?include_deleted=maybe"), 400, "validation_failed",
          "include_deleted");
      assertProblem(http.get("/v1/crm/contacts/records?limit=1001"), 400, "validation_failed", "limit");
      assertProblem(http.get("/v1/crm/contacts/records?sort=id"), 400, "unknown_parameter", "sort");
    });
  }

  @BothDatabases
  void an_idempotency_key_replays_the_first_answer(Api api) {
    api.test(http -> {
      String body = batch(record("i1", "{\"a\":1}"), record("i2", "{}"));
      Http.Reply first = http.post(SYNC, api.key, body, "Idempotency-Key", "sync-1");
      assertEquals(200, first.status(), first::toString);
      assertNull(first.header("Idempotent-Replayed"));
      http.post(SYNC, batch(record("i1", "{\"a\":2}")));
      Http.Reply replay = http.post(SYNC, api.key, body, "Idempotency-Key", "sync-1");
      assertEquals(200, replay.status());
      assertEquals("true", replay.header("Idempotent-Replayed"));
      assertEquals(first.body(), replay.body(), "the first answer, though i1 has changed since");
      assertEquals(Api.json("{\"a\":2}"), properties(http, "i1"), "the replay wrote nothing");
      assertProblem(http.post(SYNC, api.key, batch(record("i1", "{}")), "Idempotency-Key", "sync-1"), 422,
          "idempotency_key_mismatch");
      // The same body sent to another object type is another request.
      assertProblem(http.post("/v1/crm/deals/records/sync", api.key, body, "Idempotency-Key", "sync-1"), 422,
          "idempotency_key_mismatch");
      // A batch that changes nothing is stored too, and replayed as it was.
      Http.Reply nothing = http.post(SYNC, api.key, body.replace("\"a\":1", "\"a\":2"), "Idempotency-Key", "sync-2");
      assertEquals(List.of("unchanged", "unchanged"), statuses(nothing));
      assertEquals("true", http.post(SYNC, api.key, body.replace("\"a\":1", "\"a\":2"), "Idempotency-Key", "sync-2")
          .header("Idempotent-Replayed"));
    });
  }

  /** Eight copies of one keyed sync sent at once: one is applied, the rest replay it or are told to retry. */
  @BothDatabases
  void concurrent_retries_with_one_idempotency_key_apply_the_batch_once(Api api) {
    api.test(http -> {
      String body = batch(record("twin-1", "{\"a\":1}"), record("twin-2", "{}"));
      java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(8);
      List<java.util.concurrent.Future<Http.Reply>> replies = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        replies.add(pool.submit(() -> http.post(SYNC, api.key, body, "Idempotency-Key", "twins")));
      }
      int applied = 0;
      String firstBody = null;
      for (java.util.concurrent.Future<Http.Reply> f : replies) {
        Http.Reply reply = f.get(30, java.util.concurrent.TimeUnit.SECONDS);
        if (reply.status() == 409) {
          assertProblem(reply, 409, "idempotency_in_progress");
          continue;
        }
        assertEquals(200, reply.status(), reply::toString);
        assertEquals(List.of("created", "created"), statuses(reply), "every answer is the first one's");
        applied += reply.header("Idempotent-Replayed") == null ? 1 : 0;
        firstBody = firstBody == null ? reply.body() : firstBody;
        assertEquals(firstBody, reply.body());
      }
      pool.shutdown();
      assertEquals(1, applied, "exactly one copy was applied");
      assertEquals(2, countChanges(api));
    });
  }

  @BothDatabases
  void another_workspaces_records_do_not_exist_and_scopes_are_enforced(Api api) {
    api.test(http -> {
      http.post(SYNC, batch(record("mine", "{\"a\":1}")));
      String other = api.keyIn(Api.newWorkspaceId(), null, Scope.values());
      assertProblem(http.get("/v1/crm/contacts/records/mine", other), 404, "record_not_found");
      assertEquals(0, http.get("/v1/crm/contacts/records", other).json().get("data").size());
      assertEquals(0, http.get("/v1/crm/contacts/changes", other).json().get("data").size());
      assertEquals(0, http.get("/v1/crm/objects", other).json().get("data").size());
      assertProblem(http.send("DELETE", "/v1/crm/contacts/records/mine", other, null, null), 404, "record_not_found");
      // The same external id in another workspace is another record.
      assertEquals(List.of("created"), statuses(http.post(SYNC, other, batch(record("mine", "{\"a\":2}")))));
      assertEquals(Api.json("{\"a\":1}"), properties(http, "mine"));

      String readOnly = api.key(Scope.CRM_READ);
      assertProblem(http.post(SYNC, readOnly, batch(record("x", "{}"))), 403, "insufficient_scope");
      assertProblem(http.send("DELETE", "/v1/crm/contacts/records/mine", readOnly, null, null), 403,
          "insufficient_scope");
      assertEquals(200, http.get("/v1/crm/contacts/records/mine", readOnly).status());
      String runsOnly = api.key(Scope.RUNS_READ, Scope.RUNS_WRITE);
      for (String path : List.of("/v1/crm/contacts/records/mine", "/v1/crm/contacts/records", "/v1/crm/objects",
          "/v1/crm/contacts/changes")) {
        String detail = assertProblem(http.get(path, runsOnly), 403, "insufficient_scope").get("detail").asText();
        assertTrue(detail.contains("crm:read"), detail);
      }
      String writeOnly = api.key(Scope.CRM_WRITE);
      assertEquals(200, http.post(SYNC, writeOnly, batch(record("w", "{}"))).status());
      assertProblem(http.get("/v1/crm/objects", writeOnly), 403, "insufficient_scope");
      // A key limited to projects still reaches the workspace's records: they belong to no project.
      assertEquals(200, http.get("/v1/crm/contacts/records/mine", api.keyForProjects("p1")).status());
    });
  }

  @BothDatabases
  void a_key_made_with_every_scope_has_the_crm_scopes_also_when_made_before_them(Api api) {
    api.test(http -> {
      String stored = api.jdbi().withHandle(h -> h.createQuery("SELECT scopes FROM api_key WHERE workspace_id = :ws")
          .bind("ws", api.workspace).mapTo(String.class).one());
      assertEquals("*", stored, "a key with every scope also gets those added later");
      // A key stored before this version with the full list of its time (the migration made such keys '*').
      String old = api.key(Scope.RUNS_WRITE, Scope.RUNS_READ, Scope.APPROVALS_WRITE, Scope.WORKFLOWS_WRITE, Scope.ADMIN);
      assertProblem(http.get("/v1/crm/objects", old), 403, "insufficient_scope");
    });
  }

  /** The raw answer to a request that declares a body of {@code length} bytes and sends none. */
  static String declaredLength(Http http, String key, String method, String path, int length) throws Exception {
    java.net.URI origin = java.net.URI.create(http.origin());
    try (java.net.Socket socket = new java.net.Socket(origin.getHost(), origin.getPort())) {
      socket.setSoTimeout(5000);
      socket.getOutputStream().write((method + " " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key
          + "\r\nContent-Type: application/json\r\nContent-Length: " + length + "\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      return new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  static long countChanges(Api api) {
    return api.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM crm_change WHERE workspace_id = :ws")
        .bind("ws", api.workspace).mapTo(Long.class).one());
  }

  static int storedVersion(Api api, String externalId) {
    return api.jdbi().withHandle(h -> h.createQuery(
        "SELECT version FROM crm_record WHERE workspace_id = :ws AND object_type = 'contacts' AND external_id = :id")
        .bind("ws", api.workspace).bind("id", externalId).mapTo(Integer.class).one());
  }

  static JsonNode properties(Http http, String externalId) {
    Http.Reply reply = http.get("/v1/crm/contacts/records/" + encode(externalId));
    assertEquals(200, reply.status(), reply::toString);
    return reply.json().get("properties");
  }

  static List<String> externalIds(Http.Reply reply) {
    assertEquals(200, reply.status(), reply::toString);
    List<String> ids = new ArrayList<>();
    reply.json().get("data").forEach(r -> ids.add(r.get("external_id").asText()));
    return ids;
  }

  static List<String> objectTypes(Http http) {
    List<String> types = new ArrayList<>();
    http.get("/v1/crm/objects").json().get("data").forEach(t -> types.add(t.get("object_type").asText()));
    return types;
  }

  static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }

  static String encode(String id) {
    return URLEncoder.encode(id, StandardCharsets.UTF_8).replace("+", "%20");
  }

  static String json(String text) {
    return dev.runway.core.Json.string(text);
  }
  /**
   * On PostgreSQL the thousandth record created in a type has the planner's statistics taken: with
   * statistics from before the type had records, a sync's lookups would read every record of it.
   */
  @BothDatabases
  void a_type_with_a_thousand_new_records_gets_planner_statistics_on_postgresql(Api api) {
    boolean postgres = api.database() == dev.runway.support.TestDatabase.POSTGRESQL;
    api.test(http -> {
      assertEquals(200, http.post("/v1/crm/companies/records/sync", batch(record("co-1", "{\"n\":1}"))).status());
      java.util.function.Supplier<java.time.OffsetDateTime> lastAnalyze = () -> api.jdbi().withHandle(h ->
          h.createQuery("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'crm_record' "
              + "AND schemaname = current_schema()").mapTo(java.time.OffsetDateTime.class).one());
      java.time.OffsetDateTime seeded = null;
      if (postgres) { // as autovacuum would have, before the import
        api.jdbi().useHandle(h -> h.execute("ANALYZE crm_record"));
        seeded = lastAnalyze.get();
        assertNotNull(seeded);
      }
      String first = IntStream.range(0, 999).mapToObj(i -> record("c-" + i, "{\"n\":" + i + "}"))
          .collect(Collectors.joining(",", "{\"records\":[", "]}"));
      Http.Reply synced = http.post(SYNC, first);
      assertEquals(200, synced.status(), synced::toString);
      assertEquals(999, synced.json().get("summary").get("created").asInt(), synced::toString);
      if (postgres) {
        sleep(300);
        assertEquals(seeded, lastAnalyze.get(), "no ANALYZE before the thousandth record");
      }
      assertEquals(200, http.post(SYNC, batch(record("c-999", "{\"n\":999}"))).status());
      JsonNode contacts = null;
      for (JsonNode t : http.get("/v1/crm/objects").json().get("data")) {
        if (t.get("object_type").asText().equals("contacts")) {
          contacts = t;
        }
      }
      assertEquals(1000, contacts.get("records").asInt(), contacts::toString);
      if (!postgres) {
        return; // H2's planner does not go by such statistics
      }
      long until = System.nanoTime() + 20_000_000_000L;
      while (lastAnalyze.get().equals(seeded) && System.nanoTime() < until) {
        sleep(50);
      }
      assertTrue(lastAnalyze.get().isAfter(seeded), "crm_record analyzed after the thousandth record");
      // The lookup a sync makes now finds its records by the whole key, not by reading the type.
      String ws = api.jdbi().withHandle(h -> h.createQuery("SELECT workspace_id FROM crm_record WHERE object_type = 'contacts' "
          + "AND external_id = 'c-1'")
          .mapTo(String.class).one());
      // PostgreSQL sets last_analyze before the ANALYZE's transaction commits the statistics
      // themselves, so on a busy machine the first EXPLAIN may still plan with the old ones.
      java.util.function.Supplier<String> plan = () -> {
        List<String> lines = api.jdbi().withHandle(h -> h.createQuery("EXPLAIN SELECT * FROM crm_record "
            + "WHERE workspace_id = :ws AND object_type = 'contacts' AND external_id = ANY (ARRAY['c-1', 'c-2'])")
            .bind("ws", ws).mapTo(String.class).list());
        return String.join("\n", lines);
      };
      java.util.function.Predicate<String> byWholeKey =
          p -> p.lines().anyMatch(l -> l.contains("Index Cond") && l.contains("external_id"));
      until = System.nanoTime() + 20_000_000_000L;
      while (!byWholeKey.test(plan.get()) && System.nanoTime() < until) {
        sleep(50);
      }
      String last = plan.get();
      assertTrue(byWholeKey.test(last), last);
    });
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}
