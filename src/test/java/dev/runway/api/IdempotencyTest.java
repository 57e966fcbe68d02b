package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Idempotency-Key on POST /v1/workflows/{id}/runs: replay, mismatch, concurrency. */
class IdempotencyTest {
  private static final String PATH = "/v1/workflows/hello/runs";
  private static final String BODY = "{\"project\":\"demo\",\"inputs\":{\"b\":2,\"a\":1}}";

  @BothDatabases
  void retry_with_the_same_key_and_request_replays_the_first_response(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      Http.Reply first = http.post(PATH, api.key, BODY, "Idempotency-Key", "order-42");
      Http.Reply again = http.post(PATH, api.key, BODY, "Idempotency-Key", "order-42");
      // The same object with its keys in another order and other spacing is the same request.
      Http.Reply reordered = http.post(PATH, api.key, "{ \"inputs\": {\"a\":1, \"b\":2}, \"project\": \"demo\" }",
          "Idempotency-Key", "order-42");

      assertEquals(200, first.status(), first::toString);
      assertNull(first.header("Idempotent-Replayed"));
      assertEquals(200, again.status());
      assertEquals("true", again.header("Idempotent-Replayed"));
      assertEquals(first.json(), again.json());
      assertEquals(first.json(), reordered.json());
      assertNotEquals(first.header("Request-Id"), again.header("Request-Id"));
      assertEquals(1, api.countRuns(""));
      int stored = api.jdbi().withHandle(h -> h.createQuery(
          "SELECT COUNT(*) FROM idempotency_key WHERE workspace_id = :ws AND idem_key = 'order-42'")
          .bind("ws", api.workspace).mapTo(Integer.class).one());
      assertEquals(1, stored);
    });
  }

  @BothDatabases
  void same_key_with_a_different_request_is_422(Api api) {
    api.workflow("hello", false);
    api.workflow("other", false);
    api.test(http -> {
      assertEquals(200, http.post(PATH, api.key, BODY, "Idempotency-Key", "k1").status());
      assertProblem(http.post(PATH, api.key, "{\"project\":\"elsewhere\"}", "Idempotency-Key", "k1"),
          422, "idempotency_key_mismatch");
      assertProblem(http.post("/v1/workflows/other/runs", api.key, BODY, "Idempotency-Key", "k1"),
          422, "idempotency_key_mismatch");
      assertEquals(1, api.countRuns(""));
    });
  }

  @BothDatabases
  void keys_are_per_workspace(Api api) {
    api.workflow("hello", false);
    String otherWorkspace = Api.newWorkspaceId();
    api.workflowIn(otherWorkspace, "hello", false);
    String otherKey = api.keyIn(otherWorkspace, null, dev.runway.auth.Scope.values());
    api.test(http -> {
      Http.Reply mine = http.post(PATH, api.key, BODY, "Idempotency-Key", "shared");
      Http.Reply theirs = http.post(PATH, otherKey, BODY, "Idempotency-Key", "shared");
      assertEquals(200, theirs.status());
      assertNull(theirs.header("Idempotent-Replayed"));
      assertNotEquals(mine.json().get("id"), theirs.json().get("id"));
    });
  }

  /**
   * Keys are per API key: another key of the workspace (here one limited to another project) can
   * neither replay a response, nor block the key, nor learn that it was used.
   */
  @BothDatabases
  void keys_are_per_api_key(Api api) {
    api.workflow("hello", false);
    String second = api.key(dev.runway.auth.Scope.values());
    String betaOnly = api.keyForProjects("beta");
    api.test(http -> {
      Http.Reply mine = http.post(PATH, api.key, BODY, "Idempotency-Key", "order-7");
      Http.Reply sameRequestOtherKey = http.post(PATH, second, BODY, "Idempotency-Key", "order-7");
      Http.Reply otherProject = http.post(PATH, betaOnly, "{\"project\":\"beta\"}", "Idempotency-Key", "order-7");
      assertEquals(200, sameRequestOtherKey.status(), sameRequestOtherKey::toString);
      assertNull(sameRequestOtherKey.header("Idempotent-Replayed"));
      assertNotEquals(mine.json().get("id"), sameRequestOtherKey.json().get("id"));
      assertEquals(200, otherProject.status(), "not a 422: the key is not told another key used order-7");
      assertNull(otherProject.header("Idempotent-Replayed"));
      assertEquals("true", http.post(PATH, api.key, BODY, "Idempotency-Key", "order-7").header("Idempotent-Replayed"));
      assertEquals(mine.json(), http.post(PATH, api.key, BODY, "Idempotency-Key", "order-7").json());
      assertEquals(3, api.countRuns(""));
      int stored = api.jdbi().withHandle(h -> h.createQuery(
          "SELECT COUNT(DISTINCT api_key_id) FROM idempotency_key WHERE workspace_id = :ws AND idem_key = 'order-7'")
          .bind("ws", api.workspace).mapTo(Integer.class).one());
      assertEquals(3, stored, "one stored response per API key");
    });
  }

  /** A response stored before keys were told apart (api_key_id '') is still replayed to the workspace's keys. */
  @BothDatabases
  void a_response_stored_before_the_upgrade_is_still_replayed(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      Http.Reply first = http.post(PATH, api.key, BODY, "Idempotency-Key", "legacy");
      api.jdbi().useHandle(h -> h.execute("UPDATE idempotency_key SET api_key_id = '' WHERE workspace_id = ? "
          + "AND idem_key = 'legacy'", api.workspace));
      Http.Reply again = http.post(PATH, api.key(dev.runway.auth.Scope.values()), BODY, "Idempotency-Key", "legacy");
      assertEquals("true", again.header("Idempotent-Replayed"), again::toString);
      assertEquals(first.json(), again.json());
      assertEquals(1, api.countRuns(""));
    });
  }

  /** Replay comes first: a retry gets what the first request got, whatever happened to the workflow since. */
  @BothDatabases
  void a_retry_after_the_workflow_was_archived_is_replayed_not_404(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      Http.Reply first = http.post(PATH, api.key, BODY, "Idempotency-Key", "before-archive");
      assertEquals(200, first.status());
      assertEquals(200, http.delete("/v1/workflows/hello").status());
      Http.Reply retry = http.post(PATH, api.key, BODY, "Idempotency-Key", "before-archive");
      assertEquals(200, retry.status(), retry::toString);
      assertEquals("true", retry.header("Idempotent-Replayed"));
      assertEquals(first.json(), retry.json());
      assertProblem(http.post(PATH, api.key, BODY, "Idempotency-Key", "after-archive"), 404, "workflow_not_found");
      assertEquals(1, api.countRuns(""));
    });
  }

  @BothDatabases
  void failed_requests_are_not_stored_so_a_corrected_retry_runs(Api api) {
    api.test(http -> {
      assertProblem(http.post(PATH, api.key, BODY, "Idempotency-Key", "early"), 404, "workflow_not_found");
      api.workflow("hello", false);
      Http.Reply retry = http.post(PATH, api.key, BODY, "Idempotency-Key", "early");
      assertEquals(200, retry.status());
      assertNull(retry.header("Idempotent-Replayed"));
    });
  }

  @BothDatabases
  void malformed_idempotency_key_is_400(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      assertProblem(http.post(PATH, api.key, BODY, "Idempotency-Key", "x".repeat(256)),
          400, "validation_failed", "Idempotency-Key");
      assertEquals(200, http.post(PATH, api.key, BODY, "Idempotency-Key", "x".repeat(255)).status());
      assertEquals(1, api.countRuns(""), "only the request with the valid key made a run");
    });
  }

  @BothDatabases
  void twenty_concurrent_identical_requests_make_exactly_one_run(Api api) throws Exception {
    api.workflow("hello", false);
    api.test(http -> {
      ExecutorService pool = Executors.newFixedThreadPool(20);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Http.Reply>> replies = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        replies.add(pool.submit(() -> {
          go.await();
          return http.post(PATH, api.key, BODY, "Idempotency-Key", "burst");
        }));
      }
      go.countDown();
      Set<String> runIds = new HashSet<>();
      int replayed = 0;
      for (Future<Http.Reply> f : replies) {
        Http.Reply r = f.get(30, TimeUnit.SECONDS);
        if (r.status() == 200) {
          runIds.add(r.json().get("id").asText());
          replayed += "true".equals(r.header("Idempotent-Replayed")) ? 1 : 0;
        } else {
          assertProblem(r, 409, "idempotency_in_progress");
        }
      }
      pool.shutdown();
      assertEquals(1, api.countRuns(""), "exactly one run is stored");
      assertEquals(1, runIds.size(), "every 200 names the same run");
      assertTrue(replayed >= 1, "the other answers are replays or 409s");
    });
  }
}
