package dev.runway.run;

import java.util.Arrays;
import java.util.Optional;

/** The states of a run (see the state table in docs/api.md). */
public enum RunStatus {
  RUNNING, AWAITING_APPROVAL, SUCCEEDED, FAILED, CANCELED, REJECTED;

  public String wireName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  public static Optional<RunStatus> parse(String text) {
    return Arrays.stream(values()).filter(s -> s.wireName().equals(text)).findFirst();
  }
}
