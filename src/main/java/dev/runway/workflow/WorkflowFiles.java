package dev.runway.workflow;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.core.Slugs;
import dev.runway.http.ApiException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/** Loads workflow definitions from {@code <dir>/<workflow-id>.json} into a workspace at start. */
public final class WorkflowFiles {
  private final WorkflowService workflows;

  public WorkflowFiles(WorkflowService workflows) {
    this.workflows = workflows;
  }

  /** Applies every file; a bad file stops start-up with an exception naming it. Returns the ids loaded. */
  public List<String> load(Path dir, String workspaceId) {
    List<String> loaded = new ArrayList<>();
    if (dir == null || !Files.isDirectory(dir)) {
      return loaded;
    }
    List<Path> files;
    try (Stream<Path> list = Files.list(dir)) {
      files = list.filter(p -> p.getFileName().toString().endsWith(".json")).sorted().toList();
    } catch (IOException e) {
      throw new IllegalStateException("cannot list workflow files in " + dir + ": " + e.getMessage(), e);
    }
    for (Path file : files) {
      String name = file.getFileName().toString();
      String id = name.substring(0, name.length() - ".json".length());
      if (!Slugs.isSlug(id)) {
        throw new IllegalStateException("workflow file " + file + ": the file name must be <workflow-id>.json with a slug id (" + Slugs.RULE + ")");
      }
      workflows.put(workspaceId, id, read(file, id));
      loaded.add(id);
    }
    return loaded;
  }

  private static WorkflowDefinition read(Path file, String id) {
    JsonNode node;
    try {
      node = Json.MAPPER.readTree(Files.readAllBytes(file));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("workflow file " + file + " is not valid JSON: " + e.getOriginalMessage(), e);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read workflow file " + file + ": " + e.getMessage(), e);
    }
    if (node == null || !node.isObject()) {
      throw new IllegalStateException("workflow file " + file + " must hold a JSON object");
    }
    try {
      return WorkflowDefinition.parse(id, (ObjectNode) node);
    } catch (ApiException e) {
      throw new IllegalStateException("workflow file " + file + ": " + e.getMessage(), e);
    }
  }
}
