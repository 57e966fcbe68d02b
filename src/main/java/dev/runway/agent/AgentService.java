package dev.runway.agent;

import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.SqlErrors;
import dev.runway.http.ApiException;
import dev.runway.quota.Quota;
import dev.runway.quota.QuotaDao;
import dev.runway.quota.Quotas;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.core.Jdbi;

/** Creates, replaces, reads and archives agent definitions within a workspace. */
public final class AgentService {
  private final Jdbi jdbi;
  private final Quotas quotas;

  public AgentService(Jdbi jdbi, Quotas quotas) {
    this.jdbi = jdbi;
    this.quotas = quotas;
  }

  /** The outcome of a put: the stored agent and whether it was new. */
  public record Saved(Agent agent, boolean created) {}

  /** Creates or replaces the agent; putting an archived agent restores it. */
  public Saved put(String workspaceId, String id, AgentDefinition definition) {
    // Two first puts of one id race to insert; the loser retries and finds the winner's row.
    return SqlErrors.retryOnUniqueViolation(() -> jdbi.inTransaction(h -> {
      Instant now = Time.now();
      quotas.lock(h, workspaceId, now); // the workspace made if new, then locked
      AgentDao dao = h.attach(AgentDao.class);
      Optional<Agent> existing = dao.findForUpdate(workspaceId, id);
      if (existing.isEmpty() || existing.get().archived()) { // a new or restored agent counts
        quotas.check(Quota.AGENTS, workspaceId, h.attach(QuotaDao.class).agents(workspaceId));
      }
      Agent agent = new Agent(workspaceId, id, definition.name(), definition.description(),
          Json.string(definition.toJson()), existing.map(Agent::createdAt).orElse(now), now, null);
      if (existing.isEmpty()) {
        dao.insert(agent);
        return new Saved(agent, true);
      }
      Agent old = existing.get();
      if (!old.archived() && old.name().equals(agent.name()) && old.description().equals(agent.description())
          && old.definition().equals(agent.definition())) {
        return new Saved(old, false);
      }
      dao.update(agent);
      return new Saved(agent, false);
    }));
  }

  /** The agent, archived or not; another workspace's does not exist. */
  public Agent get(String workspaceId, String id) {
    return jdbi.withExtension(AgentDao.class, dao -> dao.find(workspaceId, id)).orElseThrow(() -> notFound(workspaceId, id));
  }

  public List<Agent> page(String workspaceId, String after, boolean includeArchived, int limit) {
    return jdbi.withExtension(AgentDao.class,
        dao -> dao.page(workspaceId, after == null ? "" : after, includeArchived, limit));
  }

  /** Archives the agent: new runs are refused, existing runs stay readable. Archiving twice is fine. */
  public Agent archive(String workspaceId, String id) {
    return jdbi.inTransaction(h -> {
      AgentDao dao = h.attach(AgentDao.class);
      dao.archive(workspaceId, id, Time.now());
      return dao.find(workspaceId, id).orElseThrow(() -> notFound(workspaceId, id));
    });
  }

  static ApiException notFound(String workspaceId, String id) {
    return ApiException.notFound("agent_not_found", "no agent '" + id + "' in workspace '" + workspaceId + "'");
  }
}
