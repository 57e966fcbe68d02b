package dev.runway.run;

import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/** The states of a run (see the state table in docs/api.md). */
public enum RunStatus {
  RUNNING, AWAITING_APPROVAL, QUEUED, SUCCEEDED, FAILED, CANCELED, REJECTED;

  private static final RunStatus[] ALL = values();
  private static final Set<String> ENDED = Arrays.stream(values()).filter(RunStatus::isEnded)
      .map(RunStatus::wireName).collect(Collectors.toUnmodifiableSet());

  private final String wireName = name().toLowerCase(Locale.ROOT);

  public String wireName() {
    return wireName;
  }

  /** Whether a run in this state has ended: it never changes again. */
  public boolean isEnded() {
    return this != RUNNING && this != AWAITING_APPROVAL && this != QUEUED;
  }

  /** Whether a run in this state holds a place of its concurrency key: it started and has not ended. */
  public boolean isActive() {
    return this == RUNNING || this == AWAITING_APPROVAL;
  }

  /** Whether a run whose stored status is {@code wireName} has ended. */
  public static boolean isEnded(String wireName) {
    return ENDED.contains(wireName);
  }

  /** The type of the event that records a run's end in this state, e.g. run.succeeded. */
  public String endEventType() {
    return "run." + wireName();
  }

  public static Optional<RunStatus> parse(String text) {
    for (RunStatus status : ALL) {
      if (status.wireName().equals(text)) {
        return Optional.of(status);
      }
    }
    return Optional.empty();
  }
}
