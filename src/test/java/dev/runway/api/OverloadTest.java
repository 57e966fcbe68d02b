package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.http.InFlightLimit;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.HeldCommits;
import dev.runway.support.Http;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Work in flight is bounded: past the bound a fast 503 with Retry-After, never a queue or a 500, and service goes on. */
class OverloadTest {

  @BothDatabases
  void a_request_past_max_in_flight_gets_a_fast_503_and_health_checks_still_answer(Api api) throws Exception {
    api.workflow("hello", false);
    api.testWith(s -> s.with("http.max_in_flight", "1"), http -> {
      ExecutorService clients = Executors.newFixedThreadPool(2);
      try (HeldCommits held = HeldCommits.on(api)) {
        // A start waiting for a held commit holds the one place.
        Future<Http.Reply> waiting = clients.submit(() -> http.startRun("hello", "demo"));
        Thread.sleep(300);

        long t0 = System.nanoTime();
        Http.Reply refused = http.get("/v1/runs");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertProblem(refused, 503, "unavailable");
        assertEquals("1", refused.header("Retry-After"));
        assertTrue(ms < 1000, "answered at once: " + ms + " ms");
        assertEquals(200, http.get("/healthz", null).status());
        assertEquals(200, http.get("/readyz", null).status());

        held.release();
        assertEquals(200, waiting.get(10, TimeUnit.SECONDS).status());
      } finally {
        clients.shutdownNow();
      }
      assertEquals(200, http.startRun("hello", "demo").status(), "its place is free again");
    });
  }

  /** The server listens before the start's database work is done; until then it answers 503. */
  @BothDatabases
  void a_starting_server_answers_503_until_ready_and_health_checks_say_so(Api api) {
    api.workflow("hello", false);
    InFlightLimit inFlight = InFlightLimit.untilReady(10, 10);
    api.testWith(inFlight, http -> {
      Http.Reply refused = http.startRun("hello", "demo");
      assertProblem(refused, 503, "unavailable");
      assertEquals("1", refused.header("Retry-After"));
      assertTrue(refused.json().get("detail").asText().contains("starting"), refused::toString);
      assertEquals(0, api.countRuns(""), "nothing stored");
      Http.Reply notReady = http.get("/readyz", null);
      assertEquals(503, notReady.status(), notReady::toString);
      assertEquals("starting", notReady.json().get("status").asText());
      assertEquals("1", notReady.header("Retry-After"));
      assertEquals(200, http.get("/healthz", null).status(), "the process is up");

      inFlight.ready();
      assertEquals(200, http.get("/readyz", null).status());
      assertEquals(200, http.startRun("hello", "demo").status());
      assertEquals(1, api.countRuns(""));
    });
  }

  @BothDatabases
  void a_burst_far_beyond_capacity_gets_only_200s_and_503s_and_the_server_goes_on(Api api) throws Exception {
    api.workflow("hello", false);
    api.testWith(s -> s.with("http.max_in_flight", "4").with("ratelimit.per_key_per_second", "0"), http -> {
      ExecutorService clients = Executors.newFixedThreadPool(64);
      List<Future<Integer>> replies = new ArrayList<>();
      for (int i = 0; i < 1000; i++) {
        replies.add(clients.submit(() -> http.startRun("hello", "demo").status()));
      }
      Map<Integer, Integer> byStatus = new TreeMap<>();
      for (Future<Integer> f : replies) {
        byStatus.merge(f.get(60, TimeUnit.SECONDS), 1, Integer::sum);
      }
      clients.shutdown();
      assertEquals(java.util.Set.of(200, 503), byStatus.keySet(), "statuses: " + byStatus);
      assertTrue(byStatus.get(200) > 0 && byStatus.get(503) > 0, "statuses: " + byStatus);
      assertEquals(byStatus.get(200).intValue(), api.countRuns(""), "every 200 is a stored run, no 503 stored one");
      assertEquals(200, http.startRun("hello", "demo").status(), "still serving");
    });
  }

  /**
   * A start waiting for its commit holds no request thread: with the commit thread held, three
   * times as many starts as the server has threads wait at once, and the server still answers other
   * requests meanwhile. All of them are answered 200 once the commits go through.
   */
  @BothDatabases
  void starts_waiting_for_their_commit_hold_no_request_thread(Api api) throws Exception {
    api.workflow("hello", false);
    api.testWith(s -> s.with("http.max_threads", "8").with("ratelimit.per_key_per_second", "0"), http -> {
      ExecutorService clients = Executors.newFixedThreadPool(24);
      try (HeldCommits held = HeldCommits.on(api)) {
        List<Future<Http.Reply>> starts = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
          starts.add(clients.submit(() -> http.startRun("hello", "demo")));
        }
        Thread.sleep(500);
        assertTrue(starts.stream().noneMatch(Future::isDone), "the starts wait for the held commit");

        Http.Reply health = Http.at(http.origin(), null).timeout(Duration.ofSeconds(3)).get("/healthz");
        assertEquals(200, health.status(), "answered while 24 starts wait on 8 threads");

        held.release();
        for (Future<Http.Reply> start : starts) {
          Http.Reply reply = start.get(10, TimeUnit.SECONDS);
          assertEquals(200, reply.status(), reply::toString);
          assertEquals("running", reply.json().get("status").asText());
          assertTrue(api.storedRun(reply.json().get("id").asText()).isPresent(), "stored before the 200");
        }
        assertEquals(24, api.countRuns(""));
      } finally {
        clients.shutdownNow();
      }
    });
  }

}
