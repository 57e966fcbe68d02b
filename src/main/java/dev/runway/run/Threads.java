package dev.runway.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.Tx;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Threads of agent runs: one run of a thread is active at a time, the others wait {@code queued}
 * and start in creation order, each in the commit that ends the one before; and a run that begins
 * (at its start, or when its turn comes) is given the thread's most recent earlier messages, within
 * the window. The thread's place is a concurrency_slot row ({@link #SLOT}, the thread id as its
 * key, limit 1), moved by ConcurrencyDao's conditional updates as a workflow's concurrency key is,
 * so two instances on one database cannot both start a run of one thread. No thread or timer waits.
 *
 * <p>What a run is given is chosen once, when it begins, and kept in its progress document
 * ({@code thread_context}: runs and index ranges of their messages): every model call of the run,
 * after a restart or on another instance too, reads the same messages, which never change (their
 * runs have ended).
 */
public final class Threads {
  /** The workflow_id of threads' concurrency_slot rows: not a slug, so no workflow's. */
  static final String SLOT = "~thread";
  /** The queued runs a freed place looks at, at most (a run canceled meanwhile is passed over). */
  private static final int LOOK_AHEAD = 20;

  private final RunMachines machines;
  private final long approvalTimeoutSeconds;
  private final Runnable runDue;
  private final ThreadWindow window;

  Threads(RunMachines machines, long approvalTimeoutSeconds, Runnable runDue, ThreadWindow window) {
    this.machines = machines;
    this.approvalTimeoutSeconds = approvalTimeoutSeconds;
    this.runDue = runDue;
    this.window = window;
  }

  /**
   * Decides in {@code tx} for a new agent run of a thread, which its first moves left as
   * {@code stored}: the run to store with its events and messages as made ({@code queued} false;
   * given the thread's earlier messages when it takes the thread's place), or, when another run of
   * the thread is active, {@code fresh} (the run as created) stored {@code queued} instead, with
   * its {@code run.queued} event and no messages. {@code newThread}: the run starts its thread,
   * whose row (and place) this commit makes.
   */
  Admitted admit(Tx tx, Run fresh, Run stored, boolean newThread, String actor) {
    String ws = stored.workspaceId();
    String thread = stored.threadId();
    if (newThread) {
      tx.dao(ThreadDao.class).insert(ws, thread, stored.project(), stored.createdAt());
      tx.dao(ConcurrencyDao.class).insertTaken(ws, SLOT, thread);
      if (stored.isEnded()) {
        tx.dao(ConcurrencyDao.class).giveBack(ws, SLOT, thread);
      }
      return new Admitted(stored, null);
    }
    if (stored.isEnded()) { // ended at once (a token quota): it takes no place and was given nothing
      return new Admitted(stored, null);
    }
    if (tx.dao(ConcurrencyDao.class).take(ws, SLOT, thread, 1) == 1) {
      return new Admitted(withContext(tx, stored), null);
    }
    Run queued = fresh.queued();
    return new Admitted(queued, RunMachine.event(queued, "run.queued", actor, Map.of("thread_id", thread),
        queued.createdAt()));
  }

  /** What {@link #admit} decided: the run to store, and the event of its queueing (null when it goes on). */
  record Admitted(Run run, Event queuedEvent) {}

  /**
   * After {@code ended} was saved in {@code tx}, a run of a thread that held the thread's place: the
   * place goes to the thread's oldest queued run, which begins in this commit, or is given back.
   */
  void released(Tx tx, Run ended) {
    tx.flush(); // the ended run's messages, and a queued run stored in this transaction, may wait in batches
    RunDao runs = tx.dao(RunDao.class);
    String ws = ended.workspaceId();
    for (String id : tx.dao(ThreadDao.class).runs(ws, ended.threadId(), List.of(RunStatus.QUEUED.wireName()),
        LOOK_AHEAD)) {
      Optional<Run> queued = runs.findForUpdate(ws, id);
      if (queued.isPresent() && RunStatus.QUEUED.wireName().equals(queued.get().status())) {
        start(tx, queued.get());
        return;
      }
    }
    tx.dao(ConcurrencyDao.class).giveBack(ws, SLOT, ended.threadId());
  }

  /**
   * Begins queued run {@code queued} in {@code tx}, as a new run begins: its clock (timeout_s)
   * starts now, its first messages and moves are made, the thread's messages so far are given to it.
   */
  private void start(Tx tx, Run queued) {
    Instant now = Time.now();
    AgentRunMachine.Definition definition = machines.agent(queued, now).definition();
    // Its clock starts now; whether its model streams is what its start asked.
    Run begun = queued.dequeued(now).withProgress(AgentRunMachine.initialProgress(
        now.plusSeconds(definition.agent().limits().timeoutSeconds()),
        AgentRunMachine.streams(Json.tree(queued.steps()))));
    AgentRunMachine m = machines.agent(withContext(tx, begun), now);
    m.begin(Json.tree(queued.inputs()));
    boolean due = m.moveUntilWaiting(approvalTimeoutSeconds, 1) != AgentRunMachine.Next.NOTHING;
    m.events().add(0, RunMachine.started(begun, RunMachine.ENGINE));
    ChildRuns.save(tx, m, m.toRun(null, null));
    if (due) {
      tx.afterCommit(runDue);
    }
  }

  /**
   * {@code run} (about to begin, holding its thread's place) given the thread's most recent earlier
   * messages within the window: the messages of the thread's runs that have ended (every other run
   * of the thread has, or waits queued), system messages left out, oldest first. Older messages are
   * dropped, never a tool result without the assistant message that asked for it, nor an assistant
   * message whose tool calls lack results (a run that ended in the middle of its tool calls).
   */
  private Run withContext(Tx tx, Run run) {
    tx.flush();
    List<ThreadMessage> newestFirst = tx.dao(ThreadDao.class).recent(run.workspaceId(), run.threadId(), run.id(),
        window.messages());
    List<ThreadMessage> chosen = new ArrayList<>();
    long chars = 0;
    for (ThreadMessage m : newestFirst) {
      if (chars + m.chars() > window.chars()) {
        break;
      }
      chars += m.chars();
      chosen.add(0, m);
    }
    List<ThreadMessage> kept = whole(chosen);
    ObjectNode progress = (ObjectNode) Json.tree(run.steps());
    progress.set("thread_context", ranges(kept));
    long keptChars = kept.stream().mapToLong(ThreadMessage::chars).sum();
    progress.put("thread_context_messages", kept.size()).put("thread_context_chars", keptChars);
    return run.withProgress(Json.string(progress));
  }

  /**
   * {@code messages} (oldest first) without tool results whose assistant message is not among
   * them, and without assistant messages with tool calls some of which have no result among them
   * (with the results they have).
   */
  static List<ThreadMessage> whole(List<ThreadMessage> messages) {
    List<ThreadMessage> kept = new ArrayList<>();
    List<ThreadMessage> group = new ArrayList<>(); // an assistant message with tool calls and its results so far
    Set<String> unanswered = new HashSet<>();
    for (ThreadMessage m : messages) {
      boolean tool = m.role().equals("tool");
      if (tool && !group.isEmpty() && m.runId().equals(group.get(0).runId()) && unanswered.remove(m.toolCallId())) {
        group.add(m);
        continue;
      }
      closeGroup(kept, group, unanswered);
      if (tool) {
        continue; // its assistant message was dropped (older than the window), or it is answered already
      }
      if (m.role().equals("assistant") && m.toolCalls() != null) {
        group.add(m);
        for (JsonNode call : Json.tree(m.toolCalls())) {
          unanswered.add(call.path("id").asText());
        }
      } else {
        kept.add(m);
      }
    }
    closeGroup(kept, group, unanswered);
    return kept;
  }

  private static void closeGroup(List<ThreadMessage> kept, List<ThreadMessage> group, Set<String> unanswered) {
    if (!group.isEmpty() && unanswered.isEmpty()) {
      kept.addAll(group);
    }
    group.clear();
    unanswered.clear();
  }

  /** {@code messages} (oldest first) as runs and ranges of indexes: [{run_id, from, to}]. */
  private static ArrayNode ranges(List<ThreadMessage> messages) {
    ArrayNode ranges = Json.MAPPER.createArrayNode();
    ObjectNode last = null;
    for (ThreadMessage m : messages) {
      if (last != null && last.get("run_id").asText().equals(m.runId()) && last.get("to").asInt() == m.idx() - 1) {
        last.put("to", m.idx());
      } else {
        last = ranges.addObject().put("run_id", m.runId()).put("from", m.idx()).put("to", m.idx());
      }
    }
    return ranges;
  }

  /**
   * The messages a run was given from its thread (see {@link #withContext}), oldest first, read with
   * {@code range} (ThreadDao#range); none for a run that continues no thread.
   */
  public static List<RunMessage> context(JsonNode progress, RangeReader range) {
    List<RunMessage> messages = new ArrayList<>();
    for (JsonNode r : progress.path("thread_context")) {
      for (ThreadMessage m : range.read(r.get("run_id").asText(), r.get("from").asInt(), r.get("to").asInt())) {
        messages.add(new RunMessage(m.runId(), m.idx(), m.role(), m.content(), m.toolCalls(), m.toolCallId(),
            m.createdAt()));
      }
    }
    return messages;
  }

  /** Reads a run's messages from index {@code from} to {@code to}, oldest first. */
  @FunctionalInterface
  public interface RangeReader {
    List<ThreadMessage> read(String runId, int from, int to);
  }
}
