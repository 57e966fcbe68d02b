package dev.runway.events;

import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.run.AgentRunMachine;
import dev.runway.run.Event;
import dev.runway.run.EventDao;
import dev.runway.run.RunService;
import java.util.List;
import org.jdbi.v3.core.Jdbi;

/** Reads events: a run's timeline, a workspace's feed, and where a stream of them starts. */
public final class EventReads {
  private final Jdbi jdbi;
  private final RunService runs;

  public EventReads(Jdbi jdbi, RunService runs) {
    this.jdbi = jdbi;
    this.runs = runs;
  }

  /** The run's timeline, oldest first, after the event {@code startingAfter} (null: from the start). */
  public List<Event> events(Principal caller, String runId, String startingAfter, int limit) {
    runs.get(caller, runId);
    return jdbi.withExtension(EventDao.class,
        dao -> dao.ofRun(runId, afterSeq(dao, caller, startingAfter), limit));
  }

  /** The run's timeline, oldest first, without the pieces of its streamed answers (run.message.delta). */
  public List<Event> timeline(Principal caller, String runId, int limit) {
    runs.get(caller, runId);
    return jdbi.withExtension(EventDao.class, dao -> dao.ofRunWithout(runId, AgentRunMachine.MESSAGE_DELTA, limit));
  }

  /** The workspace's events, oldest first, after {@code startingAfter}; only the key's projects. */
  public List<Event> workspaceEvents(Principal caller, String startingAfter, int limit) {
    return jdbi.withExtension(EventDao.class,
        dao -> dao.ofWorkspace(caller.workspaceId(), afterSeq(dao, caller, startingAfter), caller.projects(), limit));
  }

  /**
   * Where a stream of events starts: after the event {@code eventId} (named by the request's
   * {@code param}), else from now on.
   */
  public long streamStart(Principal caller, String eventId, String param) {
    return jdbi.withExtension(EventDao.class, dao -> eventId == null ? dao.lastSeq(caller.workspaceId())
        : seqOf(dao, caller, eventId, param));
  }

  /** Where a stream of a run's events starts: after the event {@code eventId}, else from the run's first. */
  public long runStreamStart(Principal caller, String eventId, String param) {
    return eventId == null ? 0 : jdbi.withExtension(EventDao.class, dao -> seqOf(dao, caller, eventId, param));
  }

  private static long afterSeq(EventDao dao, Principal caller, String eventId) {
    return eventId == null ? 0 : seqOf(dao, caller, eventId, "starting_after");
  }

  private static long seqOf(EventDao dao, Principal caller, String eventId, String param) {
    return dao.find(caller.workspaceId(), eventId).map(Event::seq).orElseThrow(() ->
        DomainException.invalid(param, param + " names no event of this workspace"));
  }
}
