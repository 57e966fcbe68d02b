package dev.runway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.client.ApiClient;
import dev.runway.client.ApiException;
import dev.runway.client.api.RunsApi;
import dev.runway.client.model.Run;
import dev.runway.client.model.RunStatus;
import dev.runway.client.model.StartRunRequest;
import dev.runway.client.model.WorkflowRun;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import java.util.Map;

/**
 * A Java client generated from openapi.json by openapi-generator (java, native; see pom.xml:
 * target/generated-test-sources/openapi) starts a run and reads it back: the document is usable as
 * it is by a generated client, types and all.
 */
class GeneratedClientTest {

  @BothDatabases
  void a_generated_client_starts_a_run_and_reads_it_back(Api api) {
    api.workflowThatCalls("sync-crm");
    api.test(http -> {
      ApiClient client = new ApiClient();
      client.updateBaseUri(http.origin());
      client.setRequestInterceptor(request -> request.header("Authorization", "Bearer " + api.key));
      RunsApi runs = new RunsApi(client);

      WorkflowRun started = runs.startWorkflowRun("sync-crm",
          new StartRunRequest().project("demo").inputs(Map.of("order", 1042)), "order-1042");
      assertEquals("sync-crm", started.getWorkflow());
      assertEquals(RunStatus.RUNNING, started.getStatus());
      assertTrue(started.getId().startsWith("run_"), started.getId());

      Run read = runs.getRun(started.getId());
      WorkflowRun run = assertInstanceOf(WorkflowRun.class, read.getActualInstance());
      assertEquals(started.getId(), run.getId());
      assertEquals("demo", run.getProject());
      assertEquals(Map.of("order", 1042), run.getInputs());
      assertEquals(started.getCreatedAt(), run.getCreatedAt());
      assertEquals(1, run.getSteps().size());

      ApiException unknown = assertThrows(ApiException.class, () -> runs.getRun("run_01m85aaaaaaaaaaaaaaaaaaaaa"));
      assertEquals(404, unknown.getCode());
      assertTrue(unknown.getResponseBody().contains("\"run_not_found\""), unknown.getResponseBody());
    });
  }
}
