package dev.runway.workflow;

import dev.runway.support.TempFiles;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Workflows declared as files, {@code <dir>/<workflow-id>.json}, loaded into a workspace at start. */
class WorkflowFilesTest {
  private static final Path SHIPPED = Path.of("config", "workflows");

  @BothDatabases
  void loads_each_json_file_as_the_workflow_named_by_the_file(Api api) throws Exception {
    Path dir = TempFiles.dir("runway-workflows-");
    write(dir, "deploy.json", "{\"name\":\"Deploy\",\"description\":\"Ships it\",\"requires_approval\":true,"
        + "\"steps\":[{\"type\":\"http\",\"url\":\"https://tools.example.com/make\",\"headers\":{\"X-A\":\"1\"}}]}");
    write(dir, "bare.json", "{}");
    write(dir, "README.md", "not a workflow");
    write(dir, "notes.json.bak", "{not json");

    List<String> loaded = new WorkflowFiles(api.services().workflows()).load(dir, api.workspace);

    assertEquals(List.of("bare", "deploy"), loaded);
    api.test(http -> {
      Http.Reply deploy = http.get("/v1/workflows/deploy");
      assertEquals(200, deploy.status(), deploy::toString);
      assertEquals("Deploy", deploy.json().get("name").asText());
      assertEquals("Ships it", deploy.json().get("description").asText());
      assertTrue(deploy.json().get("requires_approval").asBoolean());
      assertEquals(Api.json("[{\"type\":\"http\",\"url\":\"https://tools.example.com/make\",\"headers\":{\"X-A\":\"********\"}}]"),
          deploy.json().get("steps"), "as given, header values masked");
      assertTrue(deploy.json().get("archived_at").isNull());

      JsonNode bare = http.get("/v1/workflows/bare").json();
      assertEquals("bare", bare.get("name").asText());
      assertEquals("", bare.get("description").asText());
      assertFalse(bare.get("requires_approval").asBoolean());
      assertEquals(0, bare.get("steps").size());

      assertEquals(2, http.get("/v1/workflows").json().get("data").size());
      Http.Reply run = http.startRun("deploy", "demo");
      assertEquals(200, run.status(), run::toString);
      assertTrue(run.json().get("requires_approval").asBoolean());
    });
  }

  @BothDatabases
  void loads_into_the_given_workspace_only(Api api) throws Exception {
    Path dir = TempFiles.dir("runway-workflows-");
    write(dir, "elsewhere.json", "{}");
    String other = Api.newWorkspaceId();

    assertEquals(List.of("elsewhere"), new WorkflowFiles(api.services().workflows()).load(dir, other));

    assertEquals("elsewhere", api.services().workflows().get(other, "elsewhere").name());
    api.test(http -> assertEquals(404, http.get("/v1/workflows/elsewhere").status()));
  }

  @BothDatabases
  void loading_again_replaces_changed_definitions_and_keeps_created_at(Api api) throws Exception {
    Path dir = TempFiles.dir("runway-workflows-");
    write(dir, "deploy.json", "{\"requires_approval\":false}");
    WorkflowFiles files = new WorkflowFiles(api.services().workflows());
    files.load(dir, api.workspace);
    Workflow first = api.services().workflows().get(api.workspace, "deploy");

    files.load(dir, api.workspace);
    assertEquals(first, api.services().workflows().get(api.workspace, "deploy"), "an unchanged file changes nothing");

    write(dir, "deploy.json", "{\"requires_approval\":true,\"steps\":[{\"type\":\"delay\",\"seconds\":5}]}");
    files.load(dir, api.workspace);
    Workflow second = api.services().workflows().get(api.workspace, "deploy");
    assertTrue(second.requiresApproval());
    assertEquals("[{\"type\":\"delay\",\"seconds\":5}]", second.steps());
    assertEquals(first.createdAt(), second.createdAt());
  }

  @BothDatabases
  void a_bad_file_throws_naming_the_file(Api api) throws Exception {
    WorkflowFiles files = new WorkflowFiles(api.services().workflows());
    String[][] cases = {
        {"broken.json", "{\"name\":"},
        {"trailing.json", "{} {}"},
        {"empty.json", ""},
        {"array.json", "[]"},
        {"string.json", "\"deploy\""},
        {"nulljson.json", "null"},
        {"badtype.json", "{\"requires_approval\":\"yes\"}"},
        {"badsteps.json", "{\"steps\":{}}"},
        {"badname.json", "{\"name\":1}"},
        {"unknown.json", "{\"timeout\":5}"},
        {"Bad.json", "{}"},
        {"-dash.json", "{}"},
        {"has space.json", "{}"},
    };
    for (String[] c : cases) {
      Path dir = TempFiles.dir("runway-workflows-");
      write(dir, c[0], c[1]);
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> files.load(dir, api.workspace), c[0]);
      assertTrue(e.getMessage().contains(c[0]), () -> "message names the file " + c[0] + ": " + e.getMessage());
    }
    assertTrue(message(files, api.workspace, "badtype.json", "{\"requires_approval\":\"yes\"}").contains("requires_approval"));
    assertTrue(message(files, api.workspace, "badsteps.json", "{\"steps\":{}}").contains("steps"));
    assertTrue(message(files, api.workspace, "unknown.json", "{\"timeout\":5}").contains("timeout"));
    api.test(http -> assertEquals(0, http.get("/v1/workflows?include_archived=true").json().get("data").size(),
        "nothing was loaded from a bad file"));
  }

  @BothDatabases
  void a_missing_or_absent_dir_loads_nothing(Api api) throws Exception {
    WorkflowFiles files = new WorkflowFiles(api.services().workflows());
    Path missing = TempFiles.dir("runway-workflows-").resolve("no-such-dir");
    assertEquals(List.of(), files.load(missing, api.workspace));
    assertEquals(List.of(), files.load(null, api.workspace));
    assertEquals(List.of(), files.load(TempFiles.dir("runway-workflows-"), api.workspace));
    api.test(http -> assertEquals(0, http.get("/v1/workflows").json().get("data").size()));
  }

  @BothDatabases
  void the_shipped_workflows_load(Api api) {
    assertEquals(List.of("hello", "local-time", "publish-release"),
        new WorkflowFiles(api.services().workflows()).load(SHIPPED, api.workspace));
    api.test(http -> {
      assertFalse(http.get("/v1/workflows/hello").json().get("requires_approval").asBoolean());
      assertTrue(http.get("/v1/workflows/publish-release").json().get("requires_approval").asBoolean());
      assertTrue(http.startRun("publish-release", "demo").json().get("requires_approval").asBoolean());
    });
  }

  @Test
  void the_shipped_files_parse_and_publish_release_requires_approval() throws Exception {
    WorkflowDefinition hello = parse("hello");
    assertEquals("Hello", hello.name());
    assertFalse(hello.requiresApproval());
    assertTrue(hello.steps().isArray());

    WorkflowDefinition publish = parse("publish-release");
    assertEquals("Publish release", publish.name());
    assertTrue(publish.requiresApproval());
    assertTrue(publish.steps().isArray());
  }

  private static WorkflowDefinition parse(String id) throws Exception {
    JsonNode node = Json.MAPPER.readTree(Files.readAllBytes(SHIPPED.resolve(id + ".json")));
    assertTrue(node.isObject(), id + ".json holds an object");
    return WorkflowDefinition.parse(id, (ObjectNode) node);
  }

  private static String message(WorkflowFiles files, String workspace, String name, String content) throws Exception {
    Path dir = TempFiles.dir("runway-workflows-");
    write(dir, name, content);
    return assertThrows(IllegalStateException.class, () -> files.load(dir, workspace)).getMessage();
  }

  private static void write(Path dir, String name, String content) throws Exception {
    Files.writeString(dir.resolve(name), content, StandardCharsets.UTF_8);
  }
}
