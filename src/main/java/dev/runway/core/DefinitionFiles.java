package dev.runway.core;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.stream.Stream;

/**
 * Definitions kept as files, {@code <dir>/<id>.json} (workflows under config/workflows, agents under
 * config/agents), applied to a workspace at start: each file is read, checked as the API checks
 * the same definition, and put. A bad file stops start-up with a line naming it.
 */
public final class DefinitionFiles<D> {
  private final String kind;
  private final BiFunction<String, ObjectNode, D> parse;
  private final BiConsumer<String, D> put;

  /** {@code kind} names them in messages ("workflow"); {@code parse} checks one (id, body); {@code put} stores it. */
  public DefinitionFiles(String kind, BiFunction<String, ObjectNode, D> parse, BiConsumer<String, D> put) {
    this.kind = kind;
    this.parse = parse;
    this.put = put;
  }

  /** Applies every file of the folder, in name order; returns the ids loaded. No folder: none. */
  public List<String> load(Path dir) {
    List<String> loaded = new ArrayList<>();
    if (dir == null || !Files.isDirectory(dir)) {
      return loaded;
    }
    List<Path> files;
    try (Stream<Path> list = Files.list(dir)) {
      files = list.filter(p -> p.getFileName().toString().endsWith(".json")).sorted().toList();
    } catch (IOException e) {
      throw new IllegalStateException("cannot list " + kind + " files in " + dir + ": " + e.getMessage(), e);
    }
    for (Path file : files) {
      String name = file.getFileName().toString();
      String id = name.substring(0, name.length() - ".json".length());
      if (!Slugs.isSlug(id)) {
        throw new IllegalStateException(kind + " file " + file + ": the file name must be <" + kind
            + "-id>.json with a slug id (" + Slugs.RULE + ")");
      }
      put.accept(id, read(file, id));
      loaded.add(id);
    }
    return loaded;
  }

  private D read(Path file, String id) {
    JsonNode node;
    try {
      node = Json.MAPPER.readTree(Files.readAllBytes(file));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(kind + " file " + file + " is not valid JSON: " + e.getOriginalMessage(), e);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + kind + " file " + file + ": " + e.getMessage(), e);
    }
    if (node == null || !node.isObject()) {
      throw new IllegalStateException(kind + " file " + file + " must hold a JSON object");
    }
    try {
      return parse.apply(id, (ObjectNode) node);
    } catch (DomainException e) {
      throw new IllegalStateException(kind + " file " + file + ": " + e.getMessage()
          + (e.param() == null ? "" : " (" + e.param() + ")"), e);
    }
  }
}
