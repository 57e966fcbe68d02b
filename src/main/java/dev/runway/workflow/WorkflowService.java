package dev.runway.workflow;

import dev.runway.agent.AllowedModels;
import dev.runway.auth.Principal;
import dev.runway.auth.Scope;
import dev.runway.core.DomainException;
import dev.runway.core.Time;
import dev.runway.core.WeighedCache;
import dev.runway.db.Slice;
import dev.runway.db.SqlErrors;
import dev.runway.quota.Quota;
import dev.runway.quota.QuotaDao;
import dev.runway.quota.Quotas;
import dev.runway.core.Sha256;
import dev.runway.http.PublicUrl;
import dev.runway.secret.SecretBox;
import dev.runway.secret.SecretUse;
import java.time.Instant;
import dev.runway.core.Json;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.Optional;
import java.util.function.Supplier;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;

/** Creates, replaces, reads and archives workflow definitions within a workspace. */
public final class WorkflowService {
  /** How long a workflow read for starting runs is trusted; edits on this instance apply at once. */
  private static final long CACHE_NANOS = 1_000_000_000L;

  private final Jdbi jdbi;
  private final Quotas quotas;
  /** The models agent steps may name (agents.model.allowed). */
  private final AllowedModels allowedModels;
  /** About 2 MB of workflows, by workspace and id: a workflow replaced here replaces its entry. */
  private final WeighedCache<String, Cached> active = new WeighedCache<>(2_000_000, (key, cached) ->
      key.length() + 100 + cached.workflow().map(w -> w.steps().length() + w.name().length()
          + w.description().length() + length(w.inputsSchema()) + length(w.output())).orElse(0));

  private static int length(String text) {
    return text == null ? 0 : text.length();
  }

  private record Cached(Optional<Workflow> workflow, long expiresAtNanos) {}

  /** Counts the changes of hooks made through this instance (see {@link #hookChanges}). */
  private final java.util.concurrent.atomic.AtomicLong hookChanges = new java.util.concurrent.atomic.AtomicLong();

  /**
   * How many times hooks were made, rotated or ended through this instance: what keeps hooks in
   * memory (HookReceiver) drops them when it changes, so such a change applies here at once.
   */
  public long hookChanges() {
    return hookChanges.get();
  }

  /** What seals hook ids (the credentials of the hooks' URLs) in the database: the secrets key. */
  private final Supplier<SecretBox> box;

  /** The server's address, which hooks' URLs start with. */
  private final PublicUrl publicUrl;

  public WorkflowService(Jdbi jdbi, Quotas quotas, AllowedModels allowedModels, Supplier<SecretBox> box,
      PublicUrl publicUrl) {
    this.jdbi = jdbi;
    this.box = box;
    this.publicUrl = publicUrl;
    this.quotas = quotas;
    this.allowedModels = allowedModels;
  }

  /**
   * The workflow runs may start from (not archived), read at most a second ago: starting a run
   * needs no database read. Edits made through this instance apply at once, those made through
   * another instance within a second.
   */
  public Optional<Workflow> findActive(String workspaceId, String id) {
    String key = workspaceId + "/" + id;
    long now = System.nanoTime();
    Cached cached = active.get(key);
    if (cached != null && now - cached.expiresAtNanos() < 0) {
      return cached.workflow();
    }
    Optional<Workflow> found = jdbi.withExtension(WorkflowDao.class, dao -> dao.find(workspaceId, id))
        .filter(w -> !w.archived());
    active.put(key, new Cached(found, now + CACHE_NANOS));
    return found;
  }

  /** The outcome of a put: the stored workflow and whether it was new. */
  public record Saved(Workflow workflow, boolean created) {}

  /**
   * Creates or replaces the workflow for an API caller: a definition that refers to secrets needs
   * secrets:use (or admin), one with a crm step crm:write (or admin), else 403 insufficient_scope
   * naming the field.
   */
  public Saved put(Principal caller, String id, WorkflowDefinition definition) {
    SecretUse.require(caller, definition.secretFields());
    requireCrmWrite(caller, definition.parsedSteps());
    return put(caller.workspaceId(), id, definition);
  }

  /**
   * Creates or replaces the workflow, trusted (definition files loaded at start); putting an
   * archived workflow restores it. An agent step naming a model not in agents.model.allowed is a 400
   * naming its {@code steps[i].model}.
   */
  public Saved put(String workspaceId, String id, WorkflowDefinition definition) {
    Step.walk(definition.parsedSteps(), "steps", (step, at) -> {
      if (step instanceof Step.Agent call && call.model() != null) {
        allowedModels.check(call.model(), at + ".model", at + ".model");
      }
    });
    // Two first puts of one id race to insert; the loser retries and finds the winner's row.
    Saved saved = SqlErrors.retryOnUniqueViolation(() -> putOnce(workspaceId, id, definition));
    active.remove(workspaceId + "/" + id);
    return saved;
  }

  private Saved putOnce(String workspaceId, String id, WorkflowDefinition definition) {
    return jdbi.inTransaction(h -> {
      Instant now = Time.now();
      quotas.lock(h, workspaceId, now); // the workspace made if new, then locked
      WorkflowDao dao = h.attach(WorkflowDao.class);
      refuseCycles(dao, workspaceId, id, definition.parsedSteps());
      Optional<Workflow> existing = dao.findForUpdate(workspaceId, id);
      Workflow workflow = new Workflow(workspaceId, id, definition.name(), definition.description(),
          definition.requiresApproval(), definition.stepsJson(), definition.triggers().json(),
          existing.map(Workflow::createdAt).orElse(now), now, null,
          WorkflowDefinition.jsonOrNull(definition.inputsSchema()), WorkflowDefinition.jsonOrNull(definition.output()),
          definition.concurrencyJson());
      if (existing.isPresent() && sameDefinition(existing.get(), workflow)) {
        return new Saved(existing.get(), false);
      }
      if (existing.isEmpty() || existing.get().archived()) { // a new or restored workflow counts
        quotas.check(Quota.WORKFLOWS, workspaceId, () -> h.attach(QuotaDao.class).workflows(workspaceId));
      }
      if (existing.isEmpty()) {
        dao.insert(workflow);
      } else {
        dao.update(workflow);
      }
      dao.deleteTriggers(workspaceId, id);
      definition.triggers().crm().forEach(t -> dao.insertTrigger(workspaceId, id, t));
      if (!definition.triggers().schedules().isEmpty() || existing.filter(WorkflowService::scheduled).isPresent()) {
        storeSchedules(h.attach(ScheduleDao.class), workspaceId, id, definition.triggers().schedules(), now);
      }
      if (!definition.triggers().hooks().isEmpty() || existing.filter(WorkflowService::hooked).isPresent()) {
        storeHooks(h.attach(HookDao.class), workspaceId, id, definition.triggers().hooks(), now);
        h.afterCommit(hookChanges::incrementAndGet);
      }
      return new Saved(workflow, existing.isEmpty());
    });
  }

  /**
   * Stores the workflow's schedules beside it: one left as it was keeps its next time (a put that
   * changes something else moves no schedule), a new or changed one gets its first time after
   * {@code now}, and a removed one goes.
   */
  private static void storeSchedules(ScheduleDao dao, String workspaceId, String id, List<Schedule> schedules,
      Instant now) {
    Map<Integer, ScheduleDao.Row> stored = new HashMap<>();
    dao.of(workspaceId, id).forEach(row -> stored.put(row.triggerIndex(), row));
    for (Schedule schedule : schedules) {
      String spec = Json.string(schedule.toJson());
      ScheduleDao.Row old = stored.remove(schedule.position());
      if (old != null && old.spec().equals(spec)) {
        continue;
      }
      if (old != null) {
        dao.delete(workspaceId, id, schedule.position());
      }
      dao.insert(new ScheduleDao.Row(workspaceId, id, schedule.position(), spec, schedule.next(now), null, null));
    }
    stored.keySet().forEach(index -> dao.delete(workspaceId, id, index));
  }

  /**
   * Gives each webhook trigger a hook: one the trigger's position had keeps its id (a put that
   * changes the scheme, the secret or the project keeps the URL the sender has), a new one gets a new
   * id, and the hook of a position that is no longer a webhook trigger stops at once.
   */
  private void storeHooks(HookDao dao, String workspaceId, String id, List<Hook> hooks, Instant now) {
    Set<Integer> current = new HashSet<>();
    dao.current(workspaceId, id).forEach(row -> current.add(row.triggerIndex()));
    for (Hook hook : hooks) {
      if (!current.remove(hook.position())) {
        insertHook(dao, workspaceId, id, hook.position(), now);
      }
    }
    current.forEach(index -> dao.expire(workspaceId, id, index, now));
  }

  private void insertHook(HookDao dao, String workspaceId, String workflowId, int triggerIndex, Instant now) {
    String hookId = Hook.newId();
    dao.insert(new HookDao.Row(Sha256.hex(hookId), box.get().encrypt(workspaceId, HOOK_SEAL, hookId), workspaceId,
        workflowId, triggerIndex, now, null));
  }

  /** The name hook ids are sealed under (bound, with the workspace, into each sealed id). */
  private static final String HOOK_SEAL = "workflow_hook";

  /** The most seconds a rotated hook's old URL may keep working. */
  public static final long MAX_ROTATION_GRACE_SECONDS = 86_400;

  /**
   * Gives webhook trigger {@code triggerIndex} of the workflow a new hook id (a new URL); the old
   * one keeps working {@code graceSeconds} more (0: it stops now). 404 for an archived or missing
   * workflow; 400 naming {@code trigger} when that trigger is not a webhook.
   */
  public Workflow rotateHook(String workspaceId, String id, int triggerIndex, long graceSeconds) {
    return jdbi.inTransaction(h -> {
      WorkflowDao dao = h.attach(WorkflowDao.class);
      Workflow workflow = dao.findForUpdate(workspaceId, id).filter(w -> !w.archived())
          .orElseThrow(() -> notFound(workspaceId, id));
      com.fasterxml.jackson.databind.JsonNode trigger = Json.tree(workflow.triggers()).path(triggerIndex);
      if (!trigger.has("webhook")) {
        throw DomainException.invalid("trigger", "trigger " + triggerIndex + " of workflow '" + id
            + "' is not a webhook trigger: only a webhook trigger has a URL to rotate");
      }
      Instant now = Time.now();
      HookDao hooks = h.attach(HookDao.class);
      hooks.expire(workspaceId, id, triggerIndex, now.plusSeconds(graceSeconds));
      insertHook(hooks, workspaceId, id, triggerIndex, now);
      h.afterCommit(hookChanges::incrementAndGet);
      return workflow;
    });
  }

  /** Whether the workflow's triggers include a webhook (then rows of workflow_hook go with it). */
  private static boolean hooked(Workflow workflow) {
    return workflow.triggers().contains("\"webhook\"");
  }

  /** Whether the workflow's triggers include a schedule (then rows of workflow_schedule go with it). */
  private static boolean scheduled(Workflow workflow) {
    return workflow.triggers().contains("\"schedule\"");
  }

  /** The workflow as the API shows it, with its schedules' next times and its hooks' URLs. */
  public WorkflowView view(Workflow workflow) {
    if (!scheduled(workflow) && !hooked(workflow)) {
      return WorkflowView.of(workflow, List.of(), Map.of());
    }
    return jdbi.withHandle(h -> {
      List<ScheduleDao.Row> schedules = scheduled(workflow)
          ? h.attach(ScheduleDao.class).of(workflow.workspaceId(), workflow.id()) : List.of();
      Map<Integer, String> hookUrls = new HashMap<>();
      if (hooked(workflow)) {
        for (HookDao.Row row : h.attach(HookDao.class).current(workflow.workspaceId(), workflow.id())) {
          String hookId = unseal(row);
          hookUrls.put(row.triggerIndex(), hookId == null ? null : publicUrl.base() + "/hooks/" + hookId);
        }
      }
      return WorkflowView.of(workflow, schedules, hookUrls);
    });
  }

  /** The hook's id; null when the secrets key that sealed it is not this server's (a rotation gives a new one). */
  private String unseal(HookDao.Row row) {
    try {
      return box.get().decrypt(row.workspaceId(), HOOK_SEAL, row.idSealed());
    } catch (SecretBox.Unreadable e) {
      return null;
    }
  }

  /**
   * A crm step writes records as a sync does, so saving one takes what a sync takes: crm:write (or
   * admin). With workflows:write alone a key could write any record through a run.
   */
  private static void requireCrmWrite(Principal caller, List<Step> steps) {
    if (caller.scopes().contains(Scope.CRM_WRITE) || caller.scopes().contains(Scope.ADMIN)) {
      return;
    }
    Step.walk(steps, "steps", (step, at) -> {
      if (step instanceof Step.Crm) {
        throw new DomainException(DomainException.Kind.FORBIDDEN, "insufficient_scope", at + " is a crm step: "
            + "saving a workflow that writes CRM records needs the scope " + Scope.CRM_WRITE.wireName()
            + " (or admin), which this API key lacks", at + ".object_type");
      }
    });
  }

  /** How many workflows a put follows through their workflow steps, looking for a way back to itself. */
  private static final int MAX_WORKFLOWS_FOLLOWED = 200;

  /**
   * Refuses a workflow that would call itself, directly or through the workflows its workflow steps
   * call as they are stored now: a 400 naming the step, with the way round. (A cycle made later by
   * editing another workflow is refused at that workflow's put; the run-time depth bound stops the rest.)
   */
  private static void refuseCycles(WorkflowDao dao, String workspaceId, String id, List<Step> steps) {
    Set<String> seen = new HashSet<>();
    Step.walk(steps, "steps", (step, at) -> {
      if (step instanceof Step.Workflow call) {
        List<String> way = wayBack(dao, workspaceId, id, call.workflow(), new ArrayList<>(List.of(id)), seen);
        if (way != null) {
          throw DomainException.invalid(at + ".workflow", at + ".workflow: workflow '" + id
              + "' would call itself (" + String.join(" → ", way) + "): a workflow may not call itself, "
              + "directly or through others");
        }
      }
    });
  }

  /** The way from {@code path} through {@code next} back to {@code target}, or null when there is none. */
  private static List<String> wayBack(WorkflowDao dao, String workspaceId, String target, String next,
      List<String> path, Set<String> seen) {
    path.add(next);
    if (next.equals(target)) {
      return path;
    }
    if (seen.add(next) && seen.size() <= MAX_WORKFLOWS_FOLLOWED) {
      Optional<Workflow> stored = dao.find(workspaceId, next).filter(w -> !w.archived());
      if (stored.isPresent()) {
        List<String> called = new ArrayList<>();
        Step.walk(Step.parseAll(Json.tree(stored.get().steps())), "steps", (step, at) -> {
          if (step instanceof Step.Workflow call) {
            called.add(call.workflow());
          }
        });
        for (String callee : called) {
          List<String> way = wayBack(dao, workspaceId, target, callee, path, seen);
          if (way != null) {
            return way;
          }
        }
      }
    }
    path.remove(path.size() - 1);
    return null;
  }

  private static boolean sameDefinition(Workflow a, Workflow b) {
    return !a.archived() && a.name().equals(b.name()) && a.description().equals(b.description())
        && a.requiresApproval() == b.requiresApproval() && a.steps().equals(b.steps())
        && a.triggers().equals(b.triggers()) && Objects.equals(a.inputsSchema(), b.inputsSchema())
        && Objects.equals(a.output(), b.output()) && Objects.equals(a.concurrency(), b.concurrency());
  }

  /** The workflow, archived or not; another workspace's does not exist. */
  public Workflow get(String workspaceId, String id) {
    return jdbi.withExtension(WorkflowDao.class, dao -> dao.find(workspaceId, id))
        .orElseThrow(() -> notFound(workspaceId, id));
  }

  /** Up to {@code limit} workflows by id, fewer when their stored JSON would pass {@code maxBytes} (at least one). */
  public Slice<Workflow> page(String workspaceId, String after, boolean includeArchived, int limit, long maxBytes) {
    return jdbi.withExtension(WorkflowDao.class,
        dao -> dao.page(workspaceId, after == null ? "" : after, includeArchived, limit, maxBytes));
  }

  /** Archives the workflow: new runs are refused, existing runs stay readable. Archiving twice is fine. */
  public Workflow archive(String workspaceId, String id) {
    Workflow archived = jdbi.inTransaction(h -> {
      WorkflowDao dao = h.attach(WorkflowDao.class);
      dao.archive(workspaceId, id, Time.now());
      h.attach(ScheduleDao.class).deleteAll(workspaceId, id); // an archived workflow is not scheduled
      return dao.find(workspaceId, id).orElseThrow(() -> notFound(workspaceId, id));
    });
    active.remove(workspaceId + "/" + id);
    return archived;
  }

  static DomainException notFound(String workspaceId, String id) {
    return DomainException.notFound("workflow_not_found", "no workflow '" + id + "' in workspace '" + workspaceId
        + "'");
  }
}
