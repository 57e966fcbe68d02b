package dev.runway.cli;

import dev.runway.auth.ApiKey;
import dev.runway.auth.ApiKeyService;
import dev.runway.auth.Scope;
import dev.runway.core.Json;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** {@code keys create|list|revoke}: API key management from the command line. */
public final class KeysCommand {
  public static final String USAGE = """
      usage: runway keys create --workspace W [--name N] [--scopes S1,S2] [--projects P1,P2] [--expires-in-days D]
             runway keys list [--workspace W]   (without it: the workspaces, with their active keys)
             runway keys revoke KEY_ID
      scopes: runs:write, runs:read, approvals:write, workflows:write, secrets:use, crm:write, crm:read, admin
        (default: all, also scopes added by later versions)""";

  private final ApiKeyService keys;
  private final PrintStream out;

  public KeysCommand(ApiKeyService keys, PrintStream out) {
    this.keys = keys;
    this.out = out;
  }

  /** Runs the command; returns the exit code. Usage errors throw IllegalArgumentException. */
  public int run(List<String> args) {
    if (args.isEmpty()) {
      throw new IllegalArgumentException("keys needs a command: create, list or revoke");
    }
    List<String> rest = args.subList(1, args.size());
    return switch (args.get(0)) {
      case "create" -> create(options(rest, Set.of("workspace", "name", "scopes", "projects", "expires-in-days")));
      case "list" -> list(options(rest, Set.of("workspace")));
      case "revoke" -> revoke(rest);
      default -> throw new IllegalArgumentException("unknown keys command '" + args.get(0) + "'");
    };
  }

  private int create(Map<String, String> options) {
    String workspace = required(options, "workspace");
    Set<Scope> scopes = options.containsKey("scopes") ? scopes(options.get("scopes")) : Scope.all();
    List<String> projects = options.containsKey("projects") ? Arrays.asList(options.get("projects").split(",")) : null;
    Duration validFor = null;
    if (options.containsKey("expires-in-days")) {
      int days;
      try {
        days = Integer.parseInt(options.get("expires-in-days"));
      } catch (NumberFormatException e) {
        days = 0;
      }
      if (days < 1 || days > 36_500) {
        throw new IllegalArgumentException("--expires-in-days must be a whole number from 1 to 36500");
      }
      validFor = Duration.ofDays(days);
    }
    ApiKeyService.CreatedKey created;
    try {
      created = keys.create(workspace, options.getOrDefault("name", "unnamed"), scopes, projects, validFor);
    } catch (dev.runway.quota.QuotaExceeded e) {
      System.err.println("runway: " + e.getMessage());
      return 1;
    }
    out.println(created.key());
    return 0;
  }

  private int list(Map<String, String> options) {
    if (!options.containsKey("workspace")) {
      out.printf("%-40s %-24s %s%n", "WORKSPACE", "CREATED", "ACTIVE KEYS");
      for (var w : keys.workspaces()) {
        out.printf("%-40s %-24s %d%n", w.id(), Json.TIME.format(w.createdAt()), w.activeKeys());
      }
      return 0;
    }
    String workspace = options.get("workspace");
    out.printf("%-30s %-20s %-50s %-24s %s%n", "ID", "NAME", "SCOPES", "CREATED", "STATE");
    for (ApiKey key : keys.list(workspace)) {
      String state = key.revokedAt() != null ? "revoked " + Json.TIME.format(key.revokedAt())
          : key.expiresAt() != null ? "expires " + Json.TIME.format(key.expiresAt()) : "active";
      String scopes = (key.scopes().equals(Scope.EVERY) ? "all scopes" : key.scopes()) + (key.projects() == null ? "" : " projects=" + key.projects());
      out.printf("%-30s %-20s %-50s %-24s %s%n", key.id(), key.name(), scopes, Json.TIME.format(key.createdAt()), state);
    }
    return 0;
  }

  private int revoke(List<String> args) {
    if (args.size() != 1) {
      throw new IllegalArgumentException("keys revoke needs exactly one KEY_ID");
    }
    String id = args.get(0);
    if (keys.find(id).isEmpty()) {
      System.err.println("runway: no key " + id);
      return 1;
    }
    if (keys.revoke(id)) {
      out.println("revoked " + id);
    } else {
      out.println(id + " was already revoked");
    }
    return 0;
  }

  private static Set<Scope> scopes(String list) {
    Set<Scope> scopes = EnumSet.noneOf(Scope.class);
    for (String s : list.split(",")) {
      scopes.add(Scope.parse(s.trim()).orElseThrow(() -> new IllegalArgumentException("unknown scope '" + s.trim()
          + "'; known: " + java.util.Arrays.stream(Scope.values()).map(Scope::wireName)
              .collect(java.util.stream.Collectors.joining(", ")))));
    }
    return scopes;
  }

  static String required(Map<String, String> options, String name) {
    String value = options.get(name);
    if (value == null) {
      throw new IllegalArgumentException("--" + name + " is required");
    }
    return value;
  }

  static Map<String, String> options(List<String> args, Set<String> known) {
    Map<String, String> options = new HashMap<>();
    List<String> queue = new ArrayList<>(args);
    while (!queue.isEmpty()) {
      String arg = queue.remove(0);
      String name;
      String value;
      if (arg.startsWith("--") && arg.contains("=")) {
        name = arg.substring(2, arg.indexOf('='));
        value = arg.substring(arg.indexOf('=') + 1);
      } else if (arg.startsWith("--") && !queue.isEmpty()) {
        name = arg.substring(2);
        value = queue.remove(0);
      } else {
        throw new IllegalArgumentException("unexpected argument '" + arg + "'");
      }
      if (!known.contains(name)) {
        throw new IllegalArgumentException("unknown option --" + name);
      }
      options.put(name, value);
    }
    return options;
  }
}
