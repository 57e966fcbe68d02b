package dev.runway.agent;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.core.DefinitionFiles;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.Slice;
import dev.runway.db.SqlErrors;
import dev.runway.quota.Quota;
import dev.runway.quota.QuotaDao;
import dev.runway.quota.Quotas;
import dev.runway.secret.SecretUse;
import dev.runway.usage.TokenQuota;
import java.time.Instant;
import java.util.Optional;
import org.jdbi.v3.core.Jdbi;

/**
 * Creates, replaces, reads and archives agent definitions within a workspace, and keeps what agents
 * may spend: the models they may name and the workspace's tokens of the day.
 */
public final class AgentService {
  private final Jdbi jdbi;
  private final AllowedModels allowedModels;
  private final TokenQuota tokens;
  private final Quotas quotas;

  public AgentService(Jdbi jdbi, AllowedModels allowedModels, TokenQuota tokens, Quotas quotas) {
    this.jdbi = jdbi;
    this.allowedModels = allowedModels;
    this.tokens = tokens;
    this.quotas = quotas;
  }

  public TokenQuota tokens() {
    return tokens;
  }

  /**
   * The agent files of a directory (config/agents), put into {@code workspaceId}: each checked as
   * the API checks a definition, its model too; a bad one stops the start naming the file and field.
   */
  public DefinitionFiles<AgentDefinition> files(String workspaceId) {
    return new DefinitionFiles<>("agent", (String id, ObjectNode body) -> checked(AgentDefinition.parse(id, body)),
        (String id, AgentDefinition agent) -> put(workspaceId, id, agent));
  }

  /** Refuses a definition whose model is not in agents.model.allowed (400 naming model). */
  public AgentDefinition checked(AgentDefinition definition) {
    allowedModels.check(definition.model(), "model", "model");
    return definition;
  }

  /**
   * Refuses to start a run of {@code definition} asking for {@code requestedModel} (null: the
   * agent's): a model not allowed is a 400 naming model (also the agent's own, saved before the list
   * changed), a workspace whose tokens of the day are used up a 429 token_quota_exceeded.
   */
  public void checkStart(String workspaceId, AgentDefinition definition, String requestedModel, Instant now) {
    if (requestedModel != null) {
      allowedModels.check(requestedModel, "model", "model");
    } else {
      allowedModels.check(definition.model(), "model", "the agent's model");
    }
    tokens.requireRoom(workspaceId, now);
  }

  /** The outcome of a put: the stored agent and whether it was new. */
  public record Saved(Agent agent, boolean created) {}

  /**
   * Creates or replaces the agent for an API caller: a definition whose tools refer to secrets needs
   * secrets:use (or admin), else 403 insufficient_scope naming the field.
   */
  public Saved put(Principal caller, String id, AgentDefinition definition) {
    SecretUse.require(caller, definition.secretFields());
    return put(caller.workspaceId(), id, definition);
  }

  /** Creates or replaces the agent, trusted (definition files loaded at start); putting an archived agent restores it. */
  public Saved put(String workspaceId, String id, AgentDefinition definition) {
    checked(definition);
    // Two first puts of one id race to insert; the loser retries and finds the winner's row.
    return SqlErrors.retryOnUniqueViolation(() -> jdbi.inTransaction(h -> {
      Instant now = Time.now();
      quotas.lock(h, workspaceId, now); // the workspace made if new, then locked
      AgentDao dao = h.attach(AgentDao.class);
      Optional<Agent> existing = dao.findForUpdate(workspaceId, id);
      if (existing.isEmpty() || existing.get().archived()) { // a new or restored agent counts
        quotas.check(Quota.AGENTS, workspaceId, () -> h.attach(QuotaDao.class).agents(workspaceId));
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

  /** Up to {@code limit} agents by id, fewer when their stored JSON would pass {@code maxBytes} (at least one). */
  public Slice<Agent> page(String workspaceId, String after, boolean includeArchived, int limit, long maxBytes) {
    return jdbi.withExtension(AgentDao.class,
        dao -> dao.page(workspaceId, after == null ? "" : after, includeArchived, limit, maxBytes));
  }

  /** Archives the agent: new runs are refused, existing runs stay readable. Archiving twice is fine. */
  public Agent archive(String workspaceId, String id) {
    return jdbi.inTransaction(h -> {
      AgentDao dao = h.attach(AgentDao.class);
      dao.archive(workspaceId, id, Time.now());
      return dao.find(workspaceId, id).orElseThrow(() -> notFound(workspaceId, id));
    });
  }

  static DomainException notFound(String workspaceId, String id) {
    return DomainException.notFound("agent_not_found", "no agent '" + id + "' in workspace '" + workspaceId + "'");
  }
}
