package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.auth.Scope;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;

/** Per-key token buckets with RateLimit-* headers, 429 with Retry-After, and the per-address limit on failed keys. */
class RateLimitTest {

  @BothDatabases
  void every_response_carries_ratelimit_headers(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      for (Http.Reply r : new Http.Reply[] {http.startRun("hello", "demo"), http.get("/v1/runs"),
          http.get("/healthz", null), http.get("/v1/nope"), http.get("/v1/runs", null)}) {
        assertNotNull(r.header("RateLimit-Limit"), () -> "RateLimit-Limit on " + r);
        assertNotNull(r.header("RateLimit-Remaining"), () -> "RateLimit-Remaining on " + r);
        assertNotNull(r.header("RateLimit-Reset"), () -> "RateLimit-Reset on " + r);
      }
      Http.Reply keyed = http.get("/v1/runs");
      assertEquals("2000", keyed.header("RateLimit-Limit"), "the default burst of a key");
    });
  }

  @BothDatabases
  void a_key_past_its_burst_gets_429_with_retry_after_and_other_keys_do_not(Api api) {
    api.workflow("hello", false);
    String other = api.key(Scope.values());
    api.testWith(s -> s.with("ratelimit.per_key_per_second", "1").with("ratelimit.per_key_burst", "3"), http -> {
      assertEquals("2", http.get("/v1/runs").header("RateLimit-Remaining"));
      assertEquals(200, http.startRun("hello", "demo").status());
      Http.Reply third = http.get("/v1/runs");
      assertEquals(200, third.status());
      assertEquals("0", third.header("RateLimit-Remaining"));
      assertEquals("3", third.header("RateLimit-Reset"), "seconds until the bucket is full again");

      Http.Reply limited = http.startRun("hello", "demo");
      assertProblem(limited, 429, "rate_limited");
      assertEquals("1", limited.header("Retry-After"));
      assertEquals("3", limited.header("RateLimit-Limit"));
      assertEquals("0", limited.header("RateLimit-Remaining"));
      assertEquals(1, api.countRuns(""), "the refused start stored nothing");

      assertEquals(200, http.get("/v1/runs", other).status(), "another key has its own bucket");
      Thread.sleep(1100);
      assertEquals(200, http.get("/v1/runs").status(), "a token came back after a second");
    });
  }

  @BothDatabases
  void an_address_that_fails_to_authenticate_too_often_gets_429_for_bad_keys_but_never_for_a_good_one(Api api) {
    String unknown = "wsk_" + "A".repeat(40);
    api.testWith(s -> s.with("ratelimit.auth_failures_per_minute", "6").with("ratelimit.auth_failures_burst", "3"),
        http -> {
          for (int i = 0; i < 3; i++) {
            assertProblem(http.get("/v1/runs", unknown), 401, "invalid_api_key");
          }
          for (int i = 0; i < 13; i++) {
            Http.Reply blocked = http.get("/v1/runs", unknown);
            assertProblem(blocked, 429, "rate_limited");
            assertTrue(Integer.parseInt(blocked.header("Retry-After")) >= 1);
            assertEquals("0", blocked.header("RateLimit-Remaining"));
          }
          assertProblem(http.get("/v1/runs", "not-even-a-key"), 429, "rate_limited");
          // Behind a load balancer every client has the same address: another client's failures
          // must never lock out a valid key.
          Http.Reply good = http.get("/v1/runs");
          assertEquals(200, good.status(), good::toString);
          assertEquals("2000", good.header("RateLimit-Limit"), "a good key's answer carries its own limit");
          assertProblem(http.startRun("nope", "demo"), 404, "workflow_not_found");
          assertProblem(http.get("/v1/runs", null), 401, "missing_api_key");
          assertEquals(200, http.get("/healthz", null).status(), "health checks are not refused");
        });
  }

  @BothDatabases
  void limits_of_zero_turn_rate_limiting_off(Api api) {
    api.testWith(s -> s.with("ratelimit.per_key_per_second", "0").with("ratelimit.per_key_burst", "1"), http -> {
      for (int i = 0; i < 5; i++) {
        assertEquals(200, http.get("/v1/runs").status());
      }
    });
  }
}
