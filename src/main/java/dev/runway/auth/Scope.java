package dev.runway.auth;

import io.javalin.security.RouteRole;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;

/** What an API key may do; each route names the one it needs. */
public enum Scope implements RouteRole {
  RUNS_WRITE("runs:write"),
  RUNS_READ("runs:read"),
  APPROVALS_WRITE("approvals:write"),
  WORKFLOWS_WRITE("workflows:write"),
  CRM_WRITE("crm:write"),
  CRM_READ("crm:read"),
  /**
   * Save workflow and agent definitions that refer to workspace secrets ({{secrets.NAME}}): with
   * workflows:write alone a key could send a secret to a host of its choosing. admin implies it.
   */
  SECRETS_USE("secrets:use"),
  ADMIN("admin");

  /** How a key made with every scope stores them: it then also has the scopes later versions add. */
  public static final String EVERY = "*";

  private final String wireName;

  Scope(String wireName) {
    this.wireName = wireName;
  }

  public String wireName() {
    return wireName;
  }

  public static Optional<Scope> parse(String text) {
    return Arrays.stream(values()).filter(s -> s.wireName.equals(text)).findFirst();
  }

  public static Set<Scope> all() {
    return EnumSet.allOf(Scope.class);
  }
}
