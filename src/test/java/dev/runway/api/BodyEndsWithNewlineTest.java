package dev.runway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.core.Json;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.nio.charset.StandardCharsets;

/** JSON answers end with a newline, so curl's output does not run into the shell's prompt. */
class BodyEndsWithNewlineTest {
  @BothDatabases
  void json_and_problem_bodies_end_with_a_newline_counted_in_content_length(Api api) {
    api.workflow("hello", false);
    api.test(http -> {
      Http.Reply run = http.startRun("hello", "demo");
      Http.Reply read = http.get("/v1/runs/" + run.json().get("id").asText());
      Http.Reply list = http.get("/v1/runs?limit=1");
      Http.Reply problem = http.get("/v1/runs/run_01m80m00h08nf1qrfhqggxcsnm");
      Http.Reply health = http.get("/healthz");
      for (Http.Reply reply : new Http.Reply[] {run, read, list, problem, health}) {
        assertTrue(reply.body().endsWith("}\n"), reply::toString);
        assertTrue(!reply.body().endsWith("\n\n"), reply::toString);
        Json.tree(reply.body());
        String length = reply.header("Content-Length");
        if (length != null) {
          assertEquals(reply.body().getBytes(StandardCharsets.UTF_8).length, Integer.parseInt(length), reply::toString);
        }
      }
      assertEquals(404, problem.status());
    });
  }
}
