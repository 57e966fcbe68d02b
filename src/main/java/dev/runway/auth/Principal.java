package dev.runway.auth;

import java.util.List;
import java.util.Set;

/** Who is calling: the key's id, its workspace, what it may do and, if limited, which projects. */
public record Principal(String keyId, String workspaceId, Set<Scope> scopes, List<String> projects) {

  /** Whether this key may touch records of the project (a key without a project list may touch all). */
  public boolean mayUseProject(String project) {
    return projects == null || projects.contains(project);
  }
}
