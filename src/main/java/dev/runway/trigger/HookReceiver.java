package dev.runway.trigger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.RateLimiter;
import dev.runway.core.Sha256;
import dev.runway.core.Time;
import dev.runway.core.WeighedCache;
import dev.runway.db.GroupCommitter;
import dev.runway.db.SqlErrors;
import dev.runway.http.FormFields;
import dev.runway.quota.Quotas;
import dev.runway.run.RunStarts;
import dev.runway.secret.SecretSource;
import dev.runway.workflow.Hook;
import dev.runway.workflow.HookDao;
import dev.runway.workflow.Workflow;
import dev.runway.workflow.WorkflowService;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Function;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes inbound webhook deliveries ({@code POST /hooks/<hook id>}): finds the hook by the SHA-256 of
 * its id, checks the sender's signature against the workspace secret the trigger names, and starts
 * one run of the workflow per delivery, in the commit that records the delivery's id, so a sender's
 * retry (or concurrent copies) of one delivery within {@link #DEDUPLICATION} starts one run.
 */
public final class HookReceiver {
  private static final Logger LOG = LoggerFactory.getLogger(HookReceiver.class);
  /** How long a delivery id is remembered: a retry of it within this starts no second run. */
  public static final Duration DEDUPLICATION = Duration.ofHours(24);
  /** The longest delivery id kept; a longer one is kept as its SHA-256. */
  private static final int MAX_DELIVERY_ID = 200;

  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final WorkflowService workflows;
  private final RunStarts runs;
  private final SecretSource secrets;
  private final Quotas quotas;
  private final RateLimiter perHook;
  /**
   * Hooks' rows by the SHA-256 of their id, found or not (about 2 MB), and the secrets they check
   * with (about 1 MB), each trusted {@link #CACHE_NANOS}: a delivery then reads nothing but its
   * duplicate check. A hook rotated or removed, or a secret changed, through another instance
   * takes effect within that time, as a workflow's edit does (see WorkflowService#findActive).
   */
  private final WeighedCache<String, Cached<HookDao.Row>> rows = new WeighedCache<>(2_000_000, (k, v) -> 600);
  private final WeighedCache<String, Cached<String>> secretValues = new WeighedCache<>(1_000_000,
      (k, v) -> k.length() + 100 + v.value().map(String::length).orElse(0));
  private static final long CACHE_NANOS = 1_000_000_000L;

  /** A value read, kept until {@code expiresAtNanos} while no hook changed through this instance since ({@code changes}). */
  private record Cached<T>(Optional<T> value, long expiresAtNanos, long changes) {}

  public HookReceiver(Jdbi jdbi, GroupCommitter committer, WorkflowService workflows, RunStarts runs,
      SecretSource secrets, Quotas quotas, HookSettings settings) {
    this.jdbi = jdbi;
    this.committer = committer;
    this.workflows = workflows;
    this.runs = runs;
    this.secrets = secrets;
    this.quotas = quotas;
    this.perHook = settings.perSecond() == 0 ? null : new RateLimiter(settings.perSecond(), settings.burst());
  }

  /** A delivery as it came: its content type, its headers (by name, any case; null when absent) and body. */
  public record Delivery(String contentType, Function<String, String> headers, byte[] body) {}

  /** What a delivery started: {@code runId}, the run of an earlier copy when {@code duplicate}. */
  public record Received(String runId, boolean duplicate) {}

  /**
   * Takes a delivery to hook {@code hookId}: 404 hook_not_found for an unknown, replaced or ended
   * hook (or its workflow archived), 429 past the hook's rate, 401 for a bad signature, 415 or 400
   * for a body it cannot read. The future completes once the run is committed.
   */
  public CompletableFuture<Received> receive(String hookId, Delivery delivery) {
    Instant now = Time.now();
    HookDao.Row row = hook(hookId, now);
    String triggerKey = row.workspaceId() + "/" + row.workflowId() + "/" + row.triggerIndex();
    if (perHook != null) {
      RateLimiter.Quota quota = perHook.take(triggerKey);
      if (!quota.allowed()) {
        throw DomainException.tooMany("rate_limited", "this hook takes " + quota.limit() + " deliveries at once and "
            + "fewer a second on average; retry after " + quota.retryAfterSeconds() + " s", quota.retryAfterSeconds());
      }
    }
    Workflow workflow = workflows.findActive(row.workspaceId(), row.workflowId()).orElseThrow(HookReceiver::notFound);
    JsonNode stored = Json.tree(workflow.triggers()).path(row.triggerIndex());
    if (!stored.has("webhook")) {
      throw notFound(); // the trigger was changed since the row was read
    }
    Hook hook = Hook.ofStored(row.triggerIndex(), stored);
    verify(row, hook, delivery, now);
    JsonNode body = body(delivery);
    String deliveryId = deliveryId(hook.verify(), delivery, body);
    quotas.takeRunStart(row.workspaceId());
    ObjectNode inputs = Json.MAPPER.createObjectNode();
    inputs.set("body", body);
    ObjectNode headers = inputs.putObject("headers");
    for (String name : hook.headers()) {
      String value = delivery.headers().apply(name);
      if (value != null) {
        headers.put(name, value);
      }
    }
    return start(row, workflow, hook, inputs, deliveryId, now, false);
  }

  /**
   * Stores the run and the delivery's id in one commit. A copy of the delivery committed first (on
   * this instance or another) makes the insert of the id fail on its unique key: then its run is
   * the answer, or, when that copy is past {@link #DEDUPLICATION} and not swept yet, its id is taken
   * over ({@code replaceOld}).
   */
  private CompletableFuture<Received> start(HookDao.Row row, Workflow workflow, Hook hook, ObjectNode inputs,
      String deliveryId, Instant now, boolean replaceOld) {
    String runId = Ids.newId("run", Time.now().toEpochMilli());
    return committer.submit(row.workspaceId(), tx -> {
      if (deliveryId != null) {
        HookDeliveryDao dao = tx.dao(HookDeliveryDao.class);
        if (replaceOld) {
          dao.deleteOld(row.workspaceId(), row.workflowId(), row.triggerIndex(), deliveryId, now.minus(DEDUPLICATION));
        }
        dao.insert(row.workspaceId(), row.workflowId(), row.triggerIndex(), deliveryId, runId, now);
      }
      return runs.startHooked(tx, runId, workflow, hook.project(), inputs.deepCopy(), row.triggerIndex(), deliveryId);
    }).handle((callDue, failure) -> {
      if (failure == null) {
        if (callDue) {
          runs.runsBecameDue();
        }
        return CompletableFuture.completedFuture(new Received(runId, false));
      }
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
      if (deliveryId != null && !replaceOld && SqlErrors.isUniqueViolation(cause)) {
        Optional<Taken> first = taken(row, deliveryId);
        if (first.isPresent() && first.get().receivedAt().isAfter(now.minus(DEDUPLICATION))) {
          return CompletableFuture.completedFuture(new Received(first.get().runId(), true));
        }
        return start(row, workflow, hook, inputs, deliveryId, now, true);
      }
      throw cause instanceof RuntimeException r ? r : new CompletionException(cause);
    }).thenCompose(received -> received);
  }

  /** A delivery id as stored: the run it started, and when. */
  public record Taken(String runId, Instant receivedAt) {}

  private Optional<Taken> taken(HookDao.Row row, String deliveryId) {
    return jdbi.withExtension(HookDeliveryDao.class, dao -> dao.find(row.workspaceId(), row.workflowId(),
        row.triggerIndex(), deliveryId));
  }

  /**
   * The hook's row: 404 for an id not of a hook's form, unknown, or ended. Rows are read by the
   * SHA-256 of the id and kept {@link #CACHE_NANOS}, whether found or not, so every id, known or
   * not, takes the same path.
   */
  private HookDao.Row hook(String hookId, Instant now) {
    if (!Hook.ID.matcher(hookId).matches()) {
      throw notFound();
    }
    String hash = Sha256.hex(hookId);
    long nanos = System.nanoTime();
    long changes = workflows.hookChanges();
    Cached<HookDao.Row> cached = rows.get(hash);
    Optional<HookDao.Row> row;
    if (cached != null && nanos - cached.expiresAtNanos() < 0 && cached.changes() == changes) {
      row = cached.value();
    } else {
      row = jdbi.withExtension(HookDao.class, dao -> dao.find(hash));
      rows.put(hash, new Cached<>(row, nanos + CACHE_NANOS, changes));
    }
    return row.filter(r -> r.expiresAt() == null || r.expiresAt().isAfter(now)).orElseThrow(HookReceiver::notFound);
  }

  private void verify(HookDao.Row row, Hook hook, Delivery delivery, Instant now) {
    if (hook.verify() == Hook.Verify.NONE) {
      return;
    }
    String secret = secret(row, hook.secret());
    HookSignatures.Refusal refusal = secret == null || secret.isEmpty()
        ? new HookSignatures.Refusal("signature_invalid", "the signature cannot be checked")
        : HookSignatures.check(hook.verify(), secret, name -> delivery.headers().apply(name), delivery.body(), now);
    if (refusal != null) {
      throw new DomainException(Kind.UNAUTHENTICATED, refusal.code(), refusal.detail());
    }
  }

  /** The workspace secret's value, kept {@link #CACHE_NANOS}; null when it is not set or cannot be read (logged). */
  private String secret(HookDao.Row row, String name) {
    String key = row.workspaceId() + "/" + name;
    long nanos = System.nanoTime();
    Cached<String> cached = secretValues.get(key);
    if (cached != null && nanos - cached.expiresAtNanos() < 0) {
      return cached.value().orElse(null);
    }
    Optional<String> value;
    try {
      value = Optional.of(secrets.values(row.workspaceId(), Set.of(name)).get(name).value());
    } catch (SecretSource.Unavailable e) {
      // The operator's fault, not the sender's: told in the log; the sender sees only a refusal.
      LOG.warn("hook of trigger {} of workflow '{}' in workspace '{}' cannot check signatures: {}", row.triggerIndex(),
          row.workflowId(), row.workspaceId(), e.getMessage());
      value = Optional.empty();
    }
    secretValues.put(key, new Cached<>(value, nanos + CACHE_NANOS, 0));
    return value.orElse(null);
  }

  /** The body as the run's {@code inputs.body}: JSON as sent, or a form's fields (a repeated one as an array). */
  static JsonNode body(Delivery delivery) {
    String type = delivery.contentType() == null ? "" : delivery.contentType().split(";", 2)[0].trim()
        .toLowerCase(Locale.ROOT);
    if (type.equals("application/json") || type.endsWith("+json")) {
      try {
        return Json.MAPPER.readTree(delivery.body());
      } catch (java.io.IOException | RuntimeException e) {
        throw DomainException.invalid("body", "the body is not JSON");
      }
    }
    if (type.equals("application/x-www-form-urlencoded")) {
      return form(new String(delivery.body(), StandardCharsets.UTF_8));
    }
    throw new DomainException(Kind.UNSUPPORTED_FORMAT, "unsupported_media_type", "a hook takes application/json or "
        + "application/x-www-form-urlencoded bodies, not " + (type.isEmpty() ? "a body without Content-Type" : type));
  }

  private static ObjectNode form(String text) {
    List<Map.Entry<String, String>> pairs;
    try {
      pairs = FormFields.parse(text);
    } catch (IllegalArgumentException e) {
      throw DomainException.invalid("body", "the form body has a broken %-escape");
    }
    ObjectNode fields = Json.MAPPER.createObjectNode();
    for (Map.Entry<String, String> pair : pairs) {
      JsonNode before = fields.get(pair.getKey());
      if (before == null) {
        fields.put(pair.getKey(), pair.getValue());
      } else if (before.isArray()) {
        ((ArrayNode) before).add(pair.getValue());
      } else {
        fields.putArray(pair.getKey()).add(before).add(pair.getValue());
      }
    }
    return fields;
  }

  /**
   * The sender's id of the delivery, which its retries repeat: {@code webhook-id} (Standard Webhooks),
   * {@code X-GitHub-Delivery}, the Stripe event's {@code id}; for {@code none}, an {@code Idempotency-Key}
   * or {@code webhook-id} header. Null when there is none (each such delivery starts a run).
   */
  static String deliveryId(Hook.Verify scheme, Delivery delivery, JsonNode body) {
    String id = switch (scheme) {
      case STANDARD_WEBHOOKS -> delivery.headers().apply("webhook-id");
      case GITHUB -> delivery.headers().apply("x-github-delivery");
      case STRIPE -> body.path("id").isTextual() ? body.path("id").textValue() : null;
      case NONE -> delivery.headers().apply("idempotency-key") != null ? delivery.headers().apply("idempotency-key")
          : delivery.headers().apply("webhook-id");
    };
    if (id == null || id.isBlank()) {
      return null;
    }
    return id.length() > MAX_DELIVERY_ID || id.indexOf('\0') >= 0 ? "sha256:" + Sha256.hex(id) : id;
  }

  /** Deletes the delivery ids older than {@link #DEDUPLICATION} and the ended hooks (the housekeeping sweep). */
  public int sweep() {
    Instant now = Time.now();
    return jdbi.withExtension(HookDeliveryDao.class, dao -> dao.deleteBefore(now.minus(DEDUPLICATION)))
        + jdbi.withExtension(HookDao.class, dao -> dao.deleteExpired(now));
  }

  private static DomainException notFound() {
    return DomainException.notFound("hook_not_found", "no such hook: the URL is wrong, or the hook was rotated or "
        + "removed");
  }
}
