package dev.runway.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.Set;
import java.util.function.Predicate;

/** Waiting for runs to get somewhere: polls GET /v1/runs/{id} until a deadline, never a fixed sleep. */
public final class Runs {
  public static final Duration DEADLINE = Duration.ofSeconds(10);
  private static final Set<String> TERMINAL = Set.of("succeeded", "failed", "canceled", "rejected");

  private Runs() {}

  /** Waits until the run has {@code status}; fails at once if it ends in another status, or at the deadline. */
  public static JsonNode awaitStatus(Http http, String runId, String status) {
    return awaitStatus(http, null, runId, status);
  }

  /** As {@link #awaitStatus(Http, String, String)}, reading the run with {@code key} (null: the test's key). */
  public static JsonNode awaitStatus(Http http, String key, String runId, String status) {
    return await(http, key, runId, "status " + status, run -> {
      String now = run.path("status").asText();
      if (!now.equals(status) && TERMINAL.contains(now)) {
        fail("run " + runId + " ended " + now + " while waiting for " + status + ": " + run);
      }
      return now.equals(status);
    });
  }

  /** Waits until the run record satisfies {@code condition}; returns that record. */
  public static JsonNode await(Http http, String runId, String what, Predicate<JsonNode> condition) {
    return await(http, null, runId, what, condition);
  }

  /** As {@link #await(Http, String, String, Predicate)}, reading the run with {@code key} (null: the test's key). */
  public static JsonNode await(Http http, String key, String runId, String what, Predicate<JsonNode> condition) {
    return await(http, key, runId, what, condition, DEADLINE);
  }

  /** As {@link #await(Http, String, String, Predicate)}, waiting at most {@code limit}. */
  public static JsonNode await(Http http, String runId, String what, Predicate<JsonNode> condition, Duration limit) {
    return await(http, null, runId, what, condition, limit);
  }

  private static JsonNode await(Http http, String key, String runId, String what, Predicate<JsonNode> condition,
      Duration limit) {
    long deadline = System.nanoTime() + limit.toNanos();
    JsonNode last = null;
    while (System.nanoTime() < deadline) {
      Http.Reply reply = key == null ? http.get("/v1/runs/" + runId) : http.get("/v1/runs/" + runId, key);
      assertEquals(200, reply.status(), reply::toString);
      last = reply.json();
      if (condition.test(last)) {
        return last;
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
    return fail("run " + runId + " did not reach " + what + " within " + limit.toSeconds() + " s; last: " + last);
  }

  /** The run's events of one type, oldest first (its first 1,000 events). */
  public static java.util.List<JsonNode> events(Http http, String runId, String type) {
    java.util.List<JsonNode> out = new java.util.ArrayList<>();
    http.get("/v1/runs/" + runId + "/events?limit=1000").json().get("data").forEach(e -> {
      if (e.get("type").asText().equals(type)) {
        out.add(e);
      }
    });
    return out;
  }

  /** Starts a run with inputs and returns its record (asserting 200). */
  public static JsonNode start(Http http, String workflow, String project, String inputsJson) {
    Http.Reply reply = startReply(http, workflow, project, inputsJson);
    assertEquals(200, reply.status(), reply::toString);
    return reply.json();
  }

  /** Asks to start a run with inputs; the reply, whatever its status. */
  public static Http.Reply startReply(Http http, String workflow, String project, String inputsJson) {
    return http.post("/v1/workflows/" + workflow + "/runs",
        "{\"project\":\"" + project + "\",\"inputs\":" + inputsJson + "}");
  }
}
