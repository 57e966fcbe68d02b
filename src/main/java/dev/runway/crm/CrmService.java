package dev.runway.crm;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.db.Slice;
import dev.runway.db.Tx;
import dev.runway.idempotency.IdempotencyStore;
import dev.runway.metrics.Metrics;
import dev.runway.quota.Quota;
import dev.runway.quota.QuotaDao;
import dev.runway.quota.Quotas;
import dev.runway.run.WorkflowRunMachine;
import dev.runway.trigger.RunRequest;
import dev.runway.trigger.RunRequestDao;
import dev.runway.workflow.Trigger;
import dev.runway.workflow.WorkflowDao;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * CRM records of a workspace: batch upserts by external id (sync), tombstones, reads, the change
 * feed, and the requests for the workflow runs that record changes trigger, queued in the same commit.
 */
public final class CrmService {
  private static final Logger LOG = LoggerFactory.getLogger(CrmService.class);
  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final Runnable runsDue;
  private final IdempotencyStore idempotency;
  private final Duration changesRetention;
  private final Metrics metrics;
  private final RecordStatistics statistics;
  private final Quotas quotas;
  /** How many changes one transaction of pruning removes at most. */
  private static final int PRUNE_PART = 5_000;

  /** The event a write that changed records publishes (for webhooks): what changed, record by record. */
  static final String CHANGED_EVENT = "crm.records.changed";

  /**
   * The change feed keeps changes for {@code changesRetention} (see {@link #prune}); syncs' records
   * are counted by outcome in {@code metrics}. {@code postgres}: the database is PostgreSQL (see
   * {@link RecordStatistics}). {@code runsDue} wakes the trigger processor when a write queued runs.
   */
  public CrmService(Jdbi jdbi, GroupCommitter committer, Runnable runsDue, IdempotencyStore idempotency,
      Duration changesRetention, Metrics metrics, boolean postgres, Quotas quotas) {
    this.jdbi = jdbi;
    this.quotas = quotas;
    this.committer = committer;
    this.runsDue = runsDue;
    this.idempotency = idempotency;
    this.changesRetention = changesRetention;
    this.metrics = metrics;
    this.statistics = new RecordStatistics(jdbi, postgres);
  }

  public Duration changesRetention() {
    return changesRetention;
  }

  /** A sync's answer (JSON), and whether it is the stored answer of an earlier request with the same Idempotency-Key. */
  public record Synced(String body, boolean replayed) {}

  /** What a sync's transaction did: its answer, whether it queued triggered runs, and its plan. */
  private record Applied(String body, boolean runsDue, SyncPlan plan) {}

  /**
   * Applies a batch. The records are read and the outcome worked out before the transaction, and
   * checked inside it: if a record changed in between, the outcome is worked out again there. A
   * batch that changes nothing (every record unchanged, stale or failed) writes nothing and waits
   * for no commit. Without an Idempotency-Key the future completes on the thread that wakes
   * committers (see {@link GroupCommitter#submit}).
   */
  public CompletableFuture<Synced> sync(Principal caller, String type, SyncRequest request, CrmSettings limits,
      String idempotencyKey, String requestHash) {
    if (idempotencyKey != null) {
      Optional<IdempotencyStore.Stored> replay = idempotency.replay(caller, idempotencyKey, requestHash);
      if (replay.isPresent()) {
        return CompletableFuture.completedFuture(new Synced(replay.get().body(), true));
      }
    }
    String ws = caller.workspaceId();
    List<String> ids = request.items().stream().filter(i -> i.error() == null).map(SyncRequest.Item::externalId).toList();
    Map<String, CrmRecord> before = ids.isEmpty() ? Map.of()
        : jdbi.withHandle(h -> CrmDao.findAll(h.getConnection(), ws, type, ids, false, CrmSettings.MAX_SYNC_CHARS));
    Instant now = Time.now();
    SyncPlan plan = SyncPlan.of(ws, type, request, before, now, limits);
    if (plan.writtenChars() > CrmSettings.MAX_SYNC_CHARS) {
      throw SyncPlan.tooLarge(CrmSettings.MAX_SYNC_CHARS);
    }
    if (plan.writes.isEmpty() && idempotencyKey == null) {
      count(plan);
      return CompletableFuture.completedFuture(new Synced(answer(plan), false));
    }
    java.util.function.Function<Tx, Applied> work = tx -> {
      SyncPlan current = plan;
      if (!ids.isEmpty() && !sameVersions(CrmDao.findAll(tx.connection(), ws, type, ids, true), before)) {
        current = SyncPlan.of(ws, type, request, CrmDao.findAll(tx.connection(), ws, type, ids, false), now, limits);
      }
      boolean runsDue = apply(tx, caller, type, current, now, limits.maxObjectTypes(), 1);
      String body = answer(current);
      if (idempotencyKey != null) {
        idempotency.store(tx, caller, idempotencyKey, requestHash, new IdempotencyStore.Stored(200, body), now);
      }
      return new Applied(body, runsDue, current);
    };
    if (idempotencyKey == null) {
      return committer.submit(ws, work).thenApply(applied -> synced(applied, ws, type));
    }
    try {
      return CompletableFuture.completedFuture(synced(committer.commit(ws, work), ws, type));
    } catch (RuntimeException e) {
      IdempotencyStore.Stored twin = idempotency.afterFailure(e, caller, idempotencyKey, requestHash);
      return CompletableFuture.completedFuture(new Synced(twin.body(), true));
    }
  }

  /** After the sync's commit. */
  private Synced synced(Applied applied, String ws, String type) {
    if (applied.runsDue()) {
      runsDue.run();
    }
    statistics.created(ws, type, count(applied.plan()).getOrDefault(SyncPlan.CREATED, 0));
    return new Synced(applied.body(), false);
  }

  /** Counts a sync's records by outcome, once it is done (committed, or nothing to write); the counts. */
  private Map<String, Integer> count(SyncPlan plan) {
    Map<String, Integer> byOutcome = new HashMap<>();
    plan.results.forEach(r -> byOutcome.merge(r.status(), 1, Integer::sum));
    byOutcome.forEach(metrics::crmRecordsSynced);
    return byOutcome;
  }

  /** Deletes a record (a tombstone, with its change and the requests for its triggered runs); 404 if there is none; deleting twice is fine. */
  public CrmRecord delete(Principal caller, String type, String externalId, CrmSettings limits) {
    String ws = caller.workspaceId();
    Deleted deleted = committer.commit(ws, tx -> {
      CrmRecord before = tx.dao(CrmDao.class).find(ws, type, externalId)
          .orElseThrow(() -> recordNotFound(ws, type, externalId));
      if (before.deleted()) {
        return new Deleted(before, false);
      }
      Instant now = Time.now();
      SyncRequest request = new SyncRequest(false, List.of(new SyncRequest.Item(0, externalId, null, true, null, null)));
      SyncPlan plan = SyncPlan.of(ws, type, request, Map.of(externalId, before), now, limits);
      return new Deleted(plan.writes.get(0).next(), apply(tx, caller, type, plan, now, limits.maxObjectTypes(), 1));
    });
    if (deleted.runsDue()) {
      runsDue.run();
    }
    return deleted.record();
  }

  private record Deleted(CrmRecord record, boolean runsDue) {}

  /**
   * A sync made by a workflow's crm step, in {@code tx}, the transaction that completes the step: as
   * {@link #sync} without an Idempotency-Key (the step's commit makes it once), its triggered runs
   * nesting {@code depth} deep. Returns the answer; refuses (having written nothing) a sync the
   * endpoint would refuse, or one whose answer would take more than {@code maxAnswerChars}.
   */
  String syncInTransaction(Tx tx, Principal caller, String type, SyncRequest request, CrmSettings limits, int depth,
      int maxAnswerChars) {
    String ws = caller.workspaceId();
    List<String> ids = request.items().stream().filter(i -> i.error() == null).map(SyncRequest.Item::externalId).toList();
    Map<String, CrmRecord> before = ids.isEmpty() ? Map.of()
        : CrmDao.findAll(tx.connection(), ws, type, ids, false, CrmSettings.MAX_SYNC_CHARS);
    Instant now = Time.now();
    SyncPlan plan = SyncPlan.of(ws, type, request, before, now, limits);
    if (plan.writtenChars() > CrmSettings.MAX_SYNC_CHARS) {
      throw SyncPlan.tooLarge(CrmSettings.MAX_SYNC_CHARS);
    }
    String body = answer(plan);
    if (body.length() > maxAnswerChars) {
      throw new DomainException(Kind.TOO_LARGE, "output_too_large", "the sync's answer would take " + body.length()
          + " characters, more than the run has room for (" + maxAnswerChars + "); write fewer records per step",
          "records");
    }
    if (apply(tx, caller, type, plan, now, limits.maxObjectTypes(), depth)) {
      tx.afterCommit(runsDue);
    }
    tx.afterCommit(() -> statistics.created(ws, type, count(plan).getOrDefault(SyncPlan.CREATED, 0)));
    return body;
  }

  /**
   * Stores the plan's writes with their changes, counts and requests for triggered runs (which nest
   * {@code depth} deep); true if it queued some. It refuses (quotas, object types) before it writes.
   */
  private boolean apply(Tx tx, Principal caller, String type, SyncPlan plan, Instant now, int maxObjectTypes,
      int depth) {
    if (plan.writes.isEmpty()) {
      return false;
    }
    String ws = caller.workspaceId();
    QuotaDao counts = tx.dao(QuotaDao.class);
    if (plan.liveDelta() > 0) { // counted under the workspace's lock the committer holds: exact
      quotas.checkAdding(Quota.CRM_RECORDS, ws, counts.crmRecords(ws), plan.liveDelta());
    }
    if (plan.liveCharsDelta > 0) {
      quotas.checkAddingMegabytes(Quota.CRM_MEGABYTES, ws, counts.crmChars(ws), plan.liveCharsDelta);
    }
    if (!CrmDao.addToCounts(tx.connection(), ws, type, plan.liveDelta(), plan.tombstoneDelta(), now)) {
      CrmDao dao = tx.dao(CrmDao.class);
      if (dao.countObjectTypes(ws) >= maxObjectTypes) {
        throw new DomainException(Kind.INVALID, "too_many_object_types", "this workspace has " + maxObjectTypes
            + " object types already, the most it may have (crm.max_object_types)", "object_type");
      }
      dao.insertObjectType(ws, type, plan.liveDelta(), plan.tombstoneDelta(), now);
    }
    if (plan.liveCharsDelta != 0) {
      counts.addCrmChars(ws, type, plan.liveCharsDelta);
    }
    CrmDao.write(tx, plan.writes);
    tx.outbox().publish(tx, ws, Ids.newId("evt", now.toEpochMilli()), CHANGED_EVENT, now, () -> changedData(type, plan));
    return queueTriggeredRuns(tx, caller, type, plan.writes, now, depth);
  }

  private static String changedData(String type, SyncPlan plan) {
    Map<String, Integer> summary = new LinkedHashMap<>();
    for (String change : List.of(SyncPlan.CREATED, SyncPlan.UPDATED, SyncPlan.DELETED)) {
      summary.put(change, 0);
    }
    List<Map<String, Object>> records = new java.util.ArrayList<>();
    for (SyncPlan.Write w : plan.writes) {
      summary.merge(w.change(), 1, Integer::sum);
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("external_id", w.next().externalId());
      r.put("change", w.change());
      r.put("version", w.next().version());
      records.add(r);
    }
    Map<String, Object> data = new LinkedHashMap<>();
    data.put("object_type", type);
    data.put("summary", summary);
    data.put("records", records);
    return Json.string(data);
  }

  /**
   * Queues, in the transaction of the changes, one run request per change that some trigger asks
   * for: the trigger processor makes the runs later, a few per commit (see TriggerProcessor), so a
   * write's commit stays small however many workflows listen. Only triggers whose project the
   * caller's key may use fire: a key limited to projects starts no run outside them this way
   * either. The runs nest {@code depth} deep: past {@link WorkflowRunMachine#MAX_DEPTH} (a chain of
   * crm steps whose changes trigger each other's workflows) none is queued. True if something was
   * queued (then wake the processor after the commit).
   */
  private boolean queueTriggeredRuns(Tx tx, Principal caller, String type, List<SyncPlan.Write> writes, Instant now,
      int depth) {
    String ws = caller.workspaceId();
    if (depth > WorkflowRunMachine.MAX_DEPTH) {
      LOG.info("run {} wrote {} records at depth {}: no workflow is triggered past depth {}", caller.keyId(), type,
          depth - 1, WorkflowRunMachine.MAX_DEPTH);
      return false;
    }
    List<TriggerRow> triggers = new ArrayList<>(CrmDao.triggers(tx.connection(), ws, type));
    if (triggers.isEmpty()) {
      return false;
    }
    triggers.sort(Comparator.comparing(TriggerRow::workflowId));
    List<Trigger> firing = new ArrayList<>();
    List<String> workflowIds = new ArrayList<>();
    for (TriggerRow row : triggers) {
      if (firing.size() == RunRequest.MAX_TARGETS) {
        LOG.warn("more than {} workflows of workspace {} listen to {}: only the first {} (by id) are started",
            RunRequest.MAX_TARGETS, ws, type, RunRequest.MAX_TARGETS);
        break;
      }
      if (caller.mayUseProject(row.project())
          && tx.dao(WorkflowDao.class).find(ws, row.workflowId()).filter(w -> !w.archived()).isPresent()) {
        firing.add(row.trigger());
        workflowIds.add(row.workflowId());
      }
    }
    boolean queued = false;
    for (SyncPlan.Write write : writes) {
      List<RunRequest.Target> targets = new ArrayList<>();
      for (int i = 0; i < firing.size(); i++) {
        if (firing.get(i).startsOn(write.change())) {
          targets.add(new RunRequest.Target(workflowIds.get(i), firing.get(i).project()));
        }
      }
      if (targets.isEmpty()) {
        continue;
      }
      ObjectNode inputs = Json.MAPPER.createObjectNode().put("change", write.change());
      ObjectNode record = Json.MAPPER.valueToTree(RecordView.of(write.next()));
      record.set("properties", write.properties() != null ? write.properties() : Json.tree(write.next().properties()));
      inputs.set("record", record);
      RunRequestDao.queue(tx, Ids.newId("rrq", now.toEpochMilli()), ws, targets, Json.string(inputs), caller.keyId(), depth,
          now);
      queued = true;
    }
    return queued;
  }

  private static String answer(SyncPlan plan) {
    Map<String, Integer> summary = new LinkedHashMap<>();
    for (String status : List.of(SyncPlan.CREATED, SyncPlan.UPDATED, SyncPlan.UNCHANGED, SyncPlan.DELETED,
        SyncPlan.STALE, SyncPlan.FAILED)) {
      summary.put(status, 0);
    }
    plan.results.forEach(r -> summary.merge(r.status(), 1, Integer::sum));
    return Json.string(new SyncAnswer(summary, plan.results));
  }

  /** The answer to a sync: how many records had each outcome, and each record's, in input order. */
  private record SyncAnswer(Map<String, Integer> summary, List<SyncPlan.Result> results) {}

  private static boolean sameVersions(Map<String, CrmRecord> now, Map<String, CrmRecord> before) {
    if (now.size() != before.size()) {
      return false;
    }
    for (CrmRecord r : now.values()) {
      CrmRecord then = before.get(r.externalId());
      if (then == null || then.version() != r.version()) {
        return false;
      }
    }
    return true;
  }

  /** The record, also a tombstone (deleted: true); 404 if there is none in this workspace. */
  public CrmRecord get(Principal caller, String type, String externalId) {
    return jdbi.withExtension(CrmDao.class, dao -> dao.find(caller.workspaceId(), type, externalId))
        .orElseThrow(() -> recordNotFound(caller.workspaceId(), type, externalId));
  }

  /**
   * Up to {@code limit} records by external id after {@code after} (null: from the first), fewer
   * when their properties would pass {@code maxBytes} (then {@link Slice#more()} says so).
   */
  public Slice<CrmRecord> list(Principal caller, String type, String after, Instant updatedAfter,
      boolean includeDeleted, int limit, long maxBytes) {
    return jdbi.withExtension(CrmDao.class,
        dao -> dao.page(caller.workspaceId(), type, after, updatedAfter, includeDeleted, limit, maxBytes));
  }

  public List<CrmObjectType> objectTypes(Principal caller) {
    return jdbi.withExtension(CrmDao.class, dao -> dao.objectTypes(caller.workspaceId()));
  }

  /**
   * Changes after the cursor {@code after} (0: the oldest kept), in commit order; 410
   * cursor_expired if changes after it were pruned. The changes are read before the prune mark: a
   * prune that removed some of them has then surely moved the mark.
   */
  public Slice<CrmChange> changes(Principal caller, String type, long after, int limit, long maxBytes) {
    String ws = caller.workspaceId();
    return jdbi.withExtension(CrmDao.class, dao -> {
      Slice<CrmChange> changes = dao.changes(ws, type, after, limit, maxBytes);
      long pruned = after == 0 ? 0 : dao.objectType(ws, type).map(CrmObjectType::prunedThrough).orElse(0L);
      if (after < pruned) {
        throw new DomainException(Kind.GONE, "cursor_expired",
            "changes after this cursor were pruned (they are kept for "
            + changesRetention.toHours() + " hours): read the records again with GET /v1/crm/" + type
            + "/records, then follow the changes from a cursor you read before that", "after");
      }
      return changes;
    });
  }

  /**
   * Removes changes made before {@code before}, and the tombstones of deletes among them, feed by
   * feed from each one's oldest change, in parts of a few thousand per transaction so that writers
   * wait little; returns how many changes.
   */
  public int prune(Instant before) {
    int removed = 0;
    for (CrmDao.Feed feed : jdbi.withExtension(CrmDao.class, CrmDao::feeds)) {
      String ws = feed.workspaceId();
      String type = feed.objectType();
      boolean mayBeEmpty = feed.liveRecords() == 0 && feed.deletedRecords() == 0;
      while (true) {
        List<CrmDao.Age> oldest = jdbi.withExtension(CrmDao.class, dao -> dao.oldest(ws, type, PRUNE_PART));
        long through = 0;
        int old = 0;
        while (old < oldest.size() && oldest.get(old).changedAt().isBefore(before)) {
          through = oldest.get(old++).seq();
        }
        if (old > 0) {
          long last = through;
          removed += committer.commit(ws, tx -> {
            CrmDao dao = tx.dao(CrmDao.class);
            int tombstones = dao.deleteTombstones(ws, type, last);
            int changes = dao.deleteChanges(ws, type, last);
            dao.pruned(ws, type, last, tombstones);
            return changes;
          });
          mayBeEmpty = feed.liveRecords() == 0;
        }
        if (old < PRUNE_PART) {
          break;
        }
      }
      if (mayBeEmpty) {
        committer.commit(ws, tx -> tx.dao(CrmDao.class).dropIfEmpty(ws, type));
      }
    }
    return removed;
  }

  static DomainException recordNotFound(String workspaceId, String type, String externalId) {
    return DomainException.notFound("record_not_found", "no " + type + " record '" + externalId + "' in workspace '"
        + workspaceId + "'");
  }
}
