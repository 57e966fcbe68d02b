package dev.runway.trigger;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * A queued request for runs: the workflows a CRM record change triggered ({@code targets}), of
 * which the first {@code done} have their run already, the inputs every one of them gets, and how
 * deep they nest ({@code depth}: 1, or one deeper than the run whose crm step made the change).
 */
public record RunRequest(String id, String workspaceId, String targets, int done, String inputs, String actor,
    int depth, Instant createdAt, String leaseOwner, Instant leaseUntil) {

  /**
   * Workflows one change starts at most: a bound on a change's fan-out that keeps a request's
   * targets within their column (130 characters each at most) and its index within a derived
   * run id's (see Ids#derived).
   */
  public static final int MAX_TARGETS = 1_000;

  /** One workflow to start, in the project the trigger names. */
  public record Target(String workflowId, String project) {}

  /** Targets as stored: {@code workflow/project}, comma-separated (slugs hold neither character). */
  public static String targetsText(List<Target> targets) {
    StringBuilder text = new StringBuilder();
    for (Target t : targets) {
      if (!text.isEmpty()) {
        text.append(',');
      }
      text.append(t.workflowId()).append('/').append(t.project());
    }
    return text.toString();
  }

  public List<Target> targetList() {
    List<Target> list = new ArrayList<>();
    for (String t : targets.split(",")) {
      int slash = t.indexOf('/');
      list.add(new Target(t.substring(0, slash), t.substring(slash + 1)));
    }
    return list;
  }
}
