package dev.runway.engine;

import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.run.AgentRunMachine;
import dev.runway.run.EventDao;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pieces of one streamed model answer, stored as {@code run.message.delta} events as they
 * arrive, so that every stream of the run's events (SSE on any instance, GET …/events) has them
 * in order. One write at a time: pieces that arrive while one is being committed go together in
 * the next, so a fast model makes fewer, larger events rather than a write per token. The pieces
 * are not part of the run's state (its transcript is stored whole with the answer, as without
 * streaming): they are not sent to webhook endpoints, and a write refused because the server is
 * overloaded drops them rather than holding the answer up.
 */
final class MessageDeltas {
  private static final Logger LOG = LoggerFactory.getLogger(MessageDeltas.class);

  private final GroupCommitter committer;
  private final AgentRunMachine run;
  private final StringBuilder pending = new StringBuilder();
  private int index;
  private boolean writing;
  /** Completes once nothing is pending or being written. */
  private CompletableFuture<Void> idle = CompletableFuture.completedFuture(null);

  MessageDeltas(GroupCommitter committer, AgentRunMachine run) {
    this.committer = committer;
    this.run = run;
  }

  /** A piece of the answer's text: written at once, or with the next write when one is under way. */
  synchronized void add(String text) {
    pending.append(text);
    if (!writing) {
      idle = new CompletableFuture<>();
      write();
    }
  }

  /** Completes once every piece added so far is stored (or dropped). */
  synchronized CompletableFuture<Void> flushed() {
    return idle;
  }

  private void write() {
    String text = pending.toString();
    pending.setLength(0);
    writing = true;
    CompletableFuture<Void> written;
    try {
      var event = run.messageDelta(index++, text, Time.now());
      written = committer.submit(run.workspaceId(), tx -> {
        EventDao.insert(tx, List.of(event));
        return null;
      });
    } catch (RuntimeException e) {
      written = CompletableFuture.failedFuture(e);
    }
    written.whenComplete((v, failure) -> {
      if (failure != null) {
        LOG.debug("run {}: a piece of the streamed answer was not stored: {}", run.runId(), failure.toString());
      }
      synchronized (this) {
        if (pending.length() > 0) {
          write();
        } else {
          writing = false;
          idle.complete(null);
        }
      }
    });
  }
}
