package dev.runway.engine;

import static dev.runway.support.Problems.assertProblem;
import static dev.runway.support.Runs.awaitStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.Runs;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The sample workflow config/workflows/local-time.json, as the README's tour runs it right after
 * ./run.sh: the sandbox model, the sample agent clock and its built-in tool, a child workflow for
 * VIPs only, an output made from the steps.
 */
class SampleWorkflowTest {

  private static void putFile(Http http, String path, String file) throws Exception {
    Http.Reply reply = http.put(path, Files.readString(Path.of(file)));
    assertTrue(reply.status() == 200 || reply.status() == 201, reply::toString);
  }

  @BothDatabases
  void the_sample_workflow_runs_to_the_end_on_a_fresh_machine(Api api) {
    try (Engine engine = api.database().startEngine()) {
      api.test(http -> {
        try {
          putFile(http, "/v1/agents/clock", "config/agents/clock.json");
          putFile(http, "/v1/workflows/hello", "config/workflows/hello.json");
          putFile(http, "/v1/workflows/local-time", "config/workflows/local-time.json");
        } catch (Exception e) {
          throw new AssertionError(e);
        }
        String vip = Runs.start(http, "local-time", "demo",
            "{\"timezone\":\"Asia/Tokyo\",\"vip\":true,\"others\":[\"Europe/Paris\",\"UTC\"]}").get("id").asText();
        JsonNode run = awaitStatus(http, vip, "succeeded");
        JsonNode output = run.get("output");
        assertEquals("Asia/Tokyo", output.get("timezone").asText(), run::toString);
        assertTrue(output.get("answer").asText().contains("Asia/Tokyo"), run::toString);
        assertTrue(output.get("greeted").asBoolean(), run::toString);
        assertEquals(2, output.get("others").size(), run::toString);
        assertTrue(output.get("others").get(0).asText().contains("Europe/Paris"), run::toString);
        assertTrue(output.get("others").get(1).asText().contains("UTC"), run::toString);
        // the agent run, the two iterations (each with its agent run below it) and hello
        assertEquals(4, http.get("/v1/runs?parent_run_id=" + vip).json().get("data").size());

        String plain = Runs.start(http, "local-time", "demo", "{\"timezone\":\"Europe/Paris\"}").get("id").asText();
        JsonNode other = awaitStatus(http, plain, "succeeded");
        assertFalse(other.get("output").get("greeted").asBoolean(), other::toString);
        assertEquals(0, other.get("output").get("others").size(), other::toString);
        assertEquals("skipped", other.get("steps").get(2).get("status").asText());
        assertEquals(1, http.get("/v1/runs?parent_run_id=" + plain).json().get("data").size());

        assertProblem(Runs.startReply(http, "local-time", "demo", "{}"), 400, "validation_failed", "inputs.timezone");
      });
    }
  }
}
