package dev.runway.agent;

import dev.runway.support.TempFiles;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.core.DefinitionFiles;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Agents under config/agents: each file checked as the API checks a definition, a bad one stopping the start. */
class AgentFilesTest {
  private static DefinitionFiles<AgentDefinition> files(Api api) {
    return api.services().agents().files(api.workspace);
  }

  @BothDatabases
  void each_json_file_is_the_agent_named_by_the_file(Api api) throws Exception {
    Path dir = TempFiles.dir("runway-agents-");
    Files.writeString(dir.resolve("helper.json"), "{\"model\":\"llama3.1\",\"instructions\":\"Help.\"}");
    Files.writeString(dir.resolve("notes.txt"), "not an agent");
    assertEquals(List.of("helper"), files(api).load(dir));
    Agent agent = api.services().agents().get(api.workspace, "helper");
    assertEquals("helper", agent.name());
    assertEquals("llama3.1", AgentDefinition.of(agent).model());
    assertEquals(List.of("helper"), files(api).load(dir), "loading again changes nothing");
    assertEquals(agent.updatedAt(), api.services().agents().get(api.workspace, "helper").updatedAt());
  }

  @BothDatabases
  void a_bad_file_stops_the_start_with_a_message_naming_the_file_and_the_field(Api api) throws Exception {
    Path dir = TempFiles.dir("runway-agents-");
    Files.writeString(dir.resolve("broken.json"), "{\"model\":\"m\",\"tools\":[{\"name\":\"t\"}]}");
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> files(api).load(dir));
    assertTrue(e.getMessage().contains("broken.json") && e.getMessage().contains("tools[0].url"), e.getMessage());
    Files.writeString(dir.resolve("broken.json"), "{not json");
    e = assertThrows(IllegalStateException.class, () -> files(api).load(dir));
    assertTrue(e.getMessage().contains("is not valid JSON"), e.getMessage());
  }
}
