package dev.runway.auth;

import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import java.util.List;
import java.util.Set;

/** Who is calling: the key's id, its workspace, what it may do and, if limited, which projects. */
public record Principal(String keyId, String workspaceId, Set<Scope> scopes, List<String> projects) {

  /** Whether this key may touch records of the project (a key without a project list may touch all). */
  public boolean mayUseProject(String project) {
    return projects == null || projects.contains(project);
  }

  /**
   * Definitions (workflows, agents) belong to the whole workspace: every project's runs use them.
   * A key limited to projects may read them but not change them, or it could reach into the runs
   * of projects it may not see (say, point a shared workflow's step at a host of its choosing).
   */
  public void requireWholeWorkspace(String what) {
    if (projects != null) {
      throw new DomainException(Kind.FORBIDDEN, "project_forbidden", what
          + " belong to every project of the workspace; "
          + "a key limited to projects may not change them");
    }
  }
}
