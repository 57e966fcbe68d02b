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
import dev.runway.db.GroupCommitter;
import dev.runway.db.SqlErrors;
import dev.runway.db.Tx;
import dev.runway.quota.Quotas;
import dev.runway.run.RunStarts;
import dev.runway.secret.SecretSource;
import dev.runway.workflow.Hook;
import dev.runway.workflow.HookDao;
import dev.runway.workflow.Workflow;
import dev.runway.workflow.WorkflowService;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
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
    if (deliveryId != null) {
      String earlier = jdbi.withExtension(HookDeliveryDao.class, dao -> dao.runOf(row.workspaceId(), row.workflowId(),
          row.triggerIndex(), deliveryId, now.minus(DEDUPLICATION))).orElse(null);
      if (earlier != null) {
        return CompletableFuture.completedFuture(new Received(earlier, true));
      }
    }
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
    String runId = Ids.newId("run", now.toEpochMilli());
    return committer.submit(row.workspaceId(), tx -> start(tx, row, workflow, hook, inputs, deliveryId, runId, now))
        .handle((started, failure) -> {
          if (failure == null) {
            if (started.callDue()) {
              runs.runsBecameDue();
            }
            return started.received();
          }
          Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
          if (deliveryId != null && SqlErrors.isUniqueViolation(cause)) { // a copy on another instance was first
            String first = jdbi.withExtension(HookDeliveryDao.class, dao -> dao.runOf(row.workspaceId(),
                row.workflowId(), row.triggerIndex(), deliveryId, now.minus(DEDUPLICATION))).orElse(null);
            if (first != null) {
              return new Received(first, true);
            }
          }
          throw cause instanceof RuntimeException r ? r : new CompletionException(cause);
        });
  }

  private record Started(Received received, boolean callDue) {}

  /** In the commit: the delivery's id recorded (unless a copy in the same or an earlier commit has it), then the run. */
  private Started start(Tx tx, HookDao.Row row, Workflow workflow, Hook hook, ObjectNode inputs, String deliveryId,
      String runId, Instant now) {
    if (deliveryId != null) {
      HookDeliveryDao dao = tx.dao(HookDeliveryDao.class);
      String earlier = dao.runOf(row.workspaceId(), row.workflowId(), row.triggerIndex(), deliveryId,
          now.minus(DEDUPLICATION)).orElse(null);
      if (earlier != null) {
        return new Started(new Received(earlier, true), false);
      }
      dao.deleteOld(row.workspaceId(), row.workflowId(), row.triggerIndex(), deliveryId, now.minus(DEDUPLICATION));
      dao.insert(row.workspaceId(), row.workflowId(), row.triggerIndex(), deliveryId, runId, now);
    }
    boolean callDue = runs.startHooked(tx, runId, workflow, hook.project(), inputs.deepCopy(), row.triggerIndex(),
        deliveryId);
    return new Started(new Received(runId, false), callDue);
  }

  /** The hook's row: 404 for an id not of a hook's form, unknown, or ended (all take one indexed read by hash). */
  private HookDao.Row hook(String hookId, Instant now) {
    if (!Hook.ID.matcher(hookId).matches()) {
      throw notFound();
    }
    String hash = Sha256.hex(hookId);
    return jdbi.withExtension(HookDao.class, dao -> dao.find(hash))
        .filter(r -> r.expiresAt() == null || r.expiresAt().isAfter(now))
        .orElseThrow(HookReceiver::notFound);
  }

  private void verify(HookDao.Row row, Hook hook, Delivery delivery, Instant now) {
    if (hook.verify() == Hook.Verify.NONE) {
      return;
    }
    String secret;
    try {
      secret = secrets.values(row.workspaceId(), Set.of(hook.secret())).get(hook.secret()).value();
    } catch (SecretSource.Unavailable e) {
      // The operator's fault, not the sender's: told in the log; the sender sees only a refusal.
      LOG.warn("hook of trigger {} of workflow '{}' in workspace '{}' cannot check signatures: {}", row.triggerIndex(),
          row.workflowId(), row.workspaceId(), e.getMessage());
      throw new DomainException(Kind.UNAUTHENTICATED, "signature_invalid", "the signature cannot be checked");
    }
    HookSignatures.Refusal refusal = secret.isEmpty()
        ? new HookSignatures.Refusal("signature_invalid", "the signature cannot be checked")
        : HookSignatures.check(hook.verify(), secret, name -> delivery.headers().apply(name), delivery.body(), now);
    if (refusal != null) {
      throw new DomainException(Kind.UNAUTHENTICATED, refusal.code(), refusal.detail());
    }
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
    ObjectNode fields = Json.MAPPER.createObjectNode();
    for (String pair : text.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name;
      String value;
      try {
        name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
        value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      } catch (IllegalArgumentException e) {
        throw DomainException.invalid("body", "the form body has a broken %-escape");
      }
      JsonNode before = fields.get(name);
      if (before == null) {
        fields.put(name, value);
      } else if (before.isArray()) {
        ((ArrayNode) before).add(value);
      } else {
        fields.putArray(name).add(before).add(value);
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
