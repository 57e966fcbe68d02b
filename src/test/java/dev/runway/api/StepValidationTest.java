package dev.runway.api;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;

/** PUT /v1/workflows/{id} checks each step; a bad one is a 400 naming steps[i].field, and nothing is stored. */
class StepValidationTest {

  private static void assertRefused(Http http, String steps, String code, String param) {
    assertProblem(http.put("/v1/workflows/w", "{\"steps\":" + steps + "}"), 400, code, param);
  }

  @BothDatabases
  void each_bad_step_is_400_naming_its_index_and_field(Api api) {
    String ok = "{\"type\":\"delay\",\"seconds\":1}";
    api.test(http -> {
      assertRefused(http, "[" + ok + ",1]", "validation_failed", "steps[1]");
      assertRefused(http, "[{}]", "validation_failed", "steps[0].type");
      assertRefused(http, "[{\"type\":\"shell\"}]", "validation_failed", "steps[0].type");
      assertRefused(http, "[" + ok + ",{\"type\":\"http\"}]", "validation_failed", "steps[1].url");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"ftp://x/y\"}]", "validation_failed", "steps[0].url");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"/relative\"}]", "validation_failed", "steps[0].url");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/x\",\"method\":\"TRACE\"}]", "validation_failed", "steps[0].method");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/x\",\"timeout_ms\":0}]", "validation_failed", "steps[0].timeout_ms");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/x\",\"timeout_ms\":\"5\"}]", "validation_failed", "steps[0].timeout_ms");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/x\",\"max_attempts\":11}]", "validation_failed", "steps[0].max_attempts");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/x\",\"headers\":[]}]", "validation_failed", "steps[0].headers");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/x\",\"headers\":{\"X-A\":1}}]", "validation_failed", "steps[0].headers.X-A");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/x\",\"headers\":{\"Idempotency-Key\":\"mine\"}}]",
          "validation_failed", "steps[0].headers.Idempotency-Key");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/x\",\"retries\":3}]", "unknown_parameter", "steps[0].retries");
      assertRefused(http, "[{\"type\":\"approval\",\"timeout_s\":0}]", "validation_failed", "steps[0].timeout_s");
      assertRefused(http, "[{\"type\":\"delay\"}]", "validation_failed", "steps[0].seconds");
      assertRefused(http, "[{\"type\":\"delay\",\"seconds\":null}]", "validation_failed", "steps[0].seconds");
      assertRefused(http, "[{\"type\":\"http\",\"url\":\"http://t/x\",\"headers\":{\"X-A\":\"v\\r\\nX-B: 1\"}}]",
          "validation_failed", "steps[0].headers.X-A");
      assertRefused(http, "[{\"type\":\"delay\",\"seconds\":-1}]", "validation_failed", "steps[0].seconds");
      assertRefused(http, "[{\"type\":\"delay\",\"seconds\":1.5}]", "validation_failed", "steps[0].seconds");
      assertEquals(404, http.get("/v1/workflows/w").status(), "nothing was stored");
    });
  }

  @BothDatabases
  void valid_steps_of_every_type_are_accepted(Api api) {
    api.test(http -> {
      Http.Reply reply = http.put("/v1/workflows/w", "{\"steps\":["
          + "{\"type\":\"http\",\"url\":\"https://tools.example.com/sync\",\"method\":\"put\",\"headers\":{\"X-Team\":\"ops\"},"
          + "\"timeout_ms\":300000,\"max_attempts\":10},"
          + "{\"type\":\"approval\",\"timeout_s\":31536000},{\"type\":\"delay\",\"seconds\":0}]}");
      assertEquals(201, reply.status(), reply::toString);
      assertEquals(3, reply.json().get("steps").size());
    });
  }

  @BothDatabases
  void more_than_100_steps_are_refused(Api api) {
    api.test(http -> {
      String steps = "[" + "{\"type\":\"delay\",\"seconds\":0},".repeat(100) + "{\"type\":\"delay\",\"seconds\":0}]";
      assertRefused(http, steps, "validation_failed", "steps");
    });
  }
}
