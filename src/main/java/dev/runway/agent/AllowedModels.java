package dev.runway.agent;

import dev.runway.core.DomainException;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The model names an agent definition or an agent run may name (agents.model.allowed): the
 * operator's bound on what tenants may run up on a paid endpoint. Empty allows any name, which
 * suits a local model that costs nothing. Names are compared exactly.
 */
public record AllowedModels(Set<String> names) {
  /** The most names a refusal lists: enough for any real list, never a page of text. */
  private static final int LISTED = 20;

  public AllowedModels {
    names = Collections.unmodifiableSet(new LinkedHashSet<>(names));
  }

  /** A comma-separated list; blank entries are skipped, so an empty value allows any model. */
  public static AllowedModels parse(String commaSeparated) {
    Set<String> names = new LinkedHashSet<>();
    Arrays.stream(commaSeparated.split(",")).map(String::trim).filter(n -> !n.isEmpty()).forEach(names::add);
    return new AllowedModels(names);
  }

  public boolean allowsAny() {
    return names.isEmpty();
  }

  public boolean allows(String model) {
    return names.isEmpty() || names.contains(model);
  }

  /**
   * Refuses a model not on the list with a 400 naming {@code param}; {@code whose} says where the
   * name came from ("model", "the agent's model"). The refusal lists the names the caller may use,
   * which the operator chose to offer, and nothing of the endpoint (its URL or key).
   */
  public void check(String model, String param, String whose) {
    if (!allows(model)) {
      throw DomainException.invalid(param, refusal(model, whose));
    }
  }

  /** What a refusal of {@code model} (not on the list) says, as {@link #check}. */
  public String refusal(String model, String whose) {
    return whose + " '" + abbreviate(model) + "' is not allowed on this server; the models allowed "
        + "(agents.model.allowed) are: " + listed();
  }

  private String listed() {
    String shown = String.join(", ", names.stream().limit(LISTED).toList());
    return names.size() > LISTED ? shown + ", … (" + names.size() + " in all)" : shown;
  }

  private static String abbreviate(String model) {
    return model.length() <= 100 ? model : model.substring(0, 100) + "…";
  }
}
