package dev.runway.secret;

import dev.runway.auth.Principal;
import dev.runway.auth.Scope;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import java.util.Map;
import java.util.Set;

/**
 * Who may save a definition (a workflow, an agent) that refers to workspace secrets: a key with
 * secrets:use or admin. The definition decides where its calls go, so with workflows:write alone a
 * key could send any secret to a host of its choosing and read it there. Definition files loaded at
 * start are the operator's and are not checked.
 */
public final class SecretUse {
  private SecretUse() {}

  /**
   * Refuses with 403 insufficient_scope, naming the first field that refers to a secret, unless the
   * caller may use secrets. {@code fields} maps each field that may refer to secrets (steps[0].url,
   * tools[1].headers.Authorization) to its text, in order.
   */
  public static void require(Principal caller, Map<String, String> fields) {
    if (caller.scopes().contains(Scope.SECRETS_USE) || caller.scopes().contains(Scope.ADMIN)) {
      return;
    }
    for (Map.Entry<String, String> field : fields.entrySet()) {
      Set<String> names = SecretReferences.names(field.getValue());
      if (!names.isEmpty()) {
        throw new DomainException(Kind.FORBIDDEN, "insufficient_scope", field.getKey() + " refers to {{secrets."
            + names.iterator().next() + "}}: saving a definition that uses secrets needs the scope "
            + Scope.SECRETS_USE.wireName() + " (or admin), which this API key lacks", field.getKey());
      }
    }
  }
}
