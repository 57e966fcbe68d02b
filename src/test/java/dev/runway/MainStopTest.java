package dev.runway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayDeque;
import java.util.List;
import java.util.Queue;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.event.EventRecordingLogger;
import org.slf4j.event.Level;
import org.slf4j.event.SubstituteLoggingEvent;
import org.slf4j.helpers.MessageFormatter;
import org.slf4j.helpers.SubstituteLogger;

/**
 * The exit code of the stop that SIGTERM starts. The stop itself is tested on a real process in
 * {@code EngineRestartIT} and {@code KillNineIT}; a failing close cannot be brought about there.
 */
class MainStopTest {
  private static final String STOPPING = "SIGTERM: stopping (finishing requests in flight, committing what is waiting)";

  private final Queue<SubstituteLoggingEvent> events = new ArrayDeque<>();
  private final Logger log = new EventRecordingLogger(new SubstituteLogger("main", events, false), events);

  @Test
  void a_stop_that_closes_everything_exits_0() {
    int[] closes = {0};

    int code = Main.stop(() -> closes[0]++, log, "SIGTERM");

    assertEquals(0, code);
    assertEquals(1, closes[0]);
    assertEquals(List.of(STOPPING, "stopped cleanly"), messages());
  }

  @Test
  void a_stop_whose_close_fails_exits_1_and_logs_why() {
    IllegalStateException failure = new IllegalStateException("pool would not close");

    int code = Main.stop(() -> { throw failure; }, log, "SIGTERM");

    assertEquals(1, code);
    assertEquals(List.of(STOPPING, "the stop failed"), messages());
    SubstituteLoggingEvent last = List.copyOf(events).get(1);
    assertEquals(Level.ERROR, last.getLevel());
    assertSame(failure, last.getThrowable());
  }

  private List<String> messages() {
    return events.stream()
        .map(e -> MessageFormatter.basicArrayFormat(e.getMessage(), e.getArgumentArray()))
        .toList();
  }
}
