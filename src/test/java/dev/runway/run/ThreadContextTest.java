package dev.runway.run;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which of a thread's recent messages a run is given: whole tool-call turns only. */
class ThreadContextTest {
  private static ThreadMessage m(String run, int idx, String role, String toolCalls, String toolCallId) {
    return new ThreadMessage(run, idx, role, role + idx, toolCalls, toolCallId, Instant.EPOCH);
  }

  private static String calls(String... ids) {
    StringBuilder s = new StringBuilder("[");
    for (String id : ids) {
      s.append(s.length() > 1 ? "," : "").append("{\"id\":\"").append(id)
          .append("\",\"type\":\"function\",\"function\":{\"name\":\"t\",\"arguments\":\"{}\"}}");
    }
    return s.append("]").toString();
  }

  private static List<String> keys(List<ThreadMessage> messages) {
    return messages.stream().map(x -> x.runId() + "/" + x.idx()).toList();
  }

  @Test
  void a_tool_result_whose_call_fell_out_of_the_window_is_dropped() {
    List<ThreadMessage> window = List.of(m("r1", 3, "tool", null, "a"), m("r1", 4, "tool", null, "b"),
        m("r1", 5, "assistant", null, null), m("r2", 1, "user", null, null));
    assertEquals(List.of("r1/5", "r2/1"), keys(Threads.whole(window)));
  }

  @Test
  void an_answer_whose_calls_all_have_results_is_kept_with_them() {
    List<ThreadMessage> window = List.of(m("r1", 1, "user", null, null), m("r1", 2, "assistant", calls("a", "b"), null),
        m("r1", 3, "tool", null, "b"), m("r1", 4, "tool", null, "a"), m("r1", 5, "assistant", null, null));
    assertEquals(List.of("r1/1", "r1/2", "r1/3", "r1/4", "r1/5"), keys(Threads.whole(window)));
  }

  @Test
  void an_answer_whose_calls_lack_results_is_dropped_with_the_results_it_has() {
    // r1 ended (failed, canceled) between its calls: the model must not see calls without results.
    List<ThreadMessage> window = List.of(m("r1", 1, "user", null, null), m("r1", 2, "assistant", calls("a", "b"), null),
        m("r1", 3, "tool", null, "a"), m("r2", 1, "user", null, null), m("r2", 2, "assistant", calls("c"), null));
    assertEquals(List.of("r1/1", "r2/1"), keys(Threads.whole(window)));
  }

  @Test
  void a_result_of_another_run_does_not_answer_a_call() {
    List<ThreadMessage> window = List.of(m("r1", 2, "assistant", calls("a"), null), m("r2", 3, "tool", null, "a"),
        m("r2", 4, "user", null, null));
    assertEquals(List.of("r2/4"), keys(Threads.whole(window)));
  }
}
