package dev.runway.run;

import dev.runway.db.Tx;
import dev.runway.metrics.Metrics;
import java.util.List;
import java.util.function.Supplier;

/**
 * Stores a run's events and publishes each to the transaction's outbox (webhooks), with the run
 * record as it is after them, without its steps' outputs, as the event's data (see RunView#eventData). Every run event passes here, so here runs are
 * counted as started and ended (metrics), once the transaction has committed: a write that rolls
 * back counts nothing.
 */
public final class RunEvents {
  private RunEvents() {}

  /** {@code run}: the run as this transaction leaves it. */
  public static void store(Tx tx, Run run, List<Event> events) {
    if (events.isEmpty()) {
      return;
    }
    EventDao.insert(tx, events);
    Supplier<String> record = new Supplier<>() {
      private String json;

      @Override
      public String get() {
        if (json == null) {
          json = RunView.eventData(run);
        }
        return json;
      }
    };
    for (Event e : events) {
      tx.outbox().publish(tx, run.workspaceId(), e.id(), e.type(), e.createdAt(), record);
    }
    Metrics metrics = tx.metrics();
    String kind = run.kind();
    tx.afterCommit(() -> {
      for (Event e : events) {
        metrics.runEvent(kind, e.type());
      }
    });
  }
}
