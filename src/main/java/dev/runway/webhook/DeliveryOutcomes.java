package dev.runway.webhook;

import dev.runway.db.OverloadedException;
import dev.runway.db.Tx;
import dev.runway.instance.Leases;
import dev.runway.outbound.OutboundHttp;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the attempts' outcomes mean for their deliveries and endpoints (retry, fail, disable), recorded
 * in batches through the group commit.
 */
final class DeliveryOutcomes {
  private static final Logger LOG = LoggerFactory.getLogger(DeliveryOutcomes.class);
  /** The most of a receiver's answer kept in the delivery log. */
  static final int MAX_RESPONSE_EXCERPT = 2048;
  /** Most outcomes recorded in one write. */
  private static final int RECORD_BATCH = 256;
  /**
   * Outcomes wait up to this long to be recorded together (unless a batch is waiting, or the
   * instance's places run short): each group commit that records some writes the deliveries' pages,
   * their due and updated indexes and the attempts, a cost that run starts sharing those commits pay.
   */
  private static final long RECORD_EVERY_NANOS = 25_000_000;

  /** An attempt's outcome, to be recorded. */
  record Outcome(DispatchQueries.Claimed c, String token, WebhookEndpoint endpoint, String outcome,
      int attempts, Instant next, Integer status, String why, WebhookAttempt attempt, boolean gone, Instant now) {
    /** A success of an attempt made: all it changes is the delivery, its attempts and perhaps failing_since. */
    boolean plainSuccess() {
      return attempt != null && outcome.equals(WebhookDelivery.SUCCEEDED);
    }
  }

  private final WebhookService service;
  private final Duration disableAfter;
  private final RetrySchedule schedule;
  private final Leases leases;
  private final IntConsumer released;
  /** Outcomes not yet handed to the group commit, in the order their attempts ended. */
  private final Queue<Outcome> waiting = new ConcurrentLinkedQueue<>();
  private final AtomicInteger waitingCount = new AtomicInteger();
  /** When outcomes were last handed to the group commit (by the dispatcher's thread, or the closing one after it). */
  private long recordedAt = System.nanoTime();

  /**
   * {@code released}: told how many outcomes were recorded or given up on, whose places the
   * instance has again (given up on, their leases expire and the deliveries are attempted again).
   */
  DeliveryOutcomes(WebhookService service, RetrySchedule schedule, Leases leases, IntConsumer released) {
    this.service = service;
    this.leases = leases;
    this.disableAfter = service.settings().disableAfter();
    this.schedule = schedule;
    this.released = released;
  }

  /**
   * The outcome of an attempt that is over: an answer's {@code status} and {@code answer}, or the
   * {@code error} that kept it from one. A delivery of an endpoint disabled (or deleted) since it
   * was stored is failed without an attempt.
   */
  Outcome of(DispatchQueries.Claimed c, String token, WebhookEndpoint endpoint, Instant started,
      Integer status, OutboundHttp.Answer answer, String error, Instant now) {
    int attempts = c.attempts() + (endpoint != null && endpoint.enabled() ? 1 : 0);
    boolean succeeded = status != null && status >= 200 && status < 300;
    boolean gone = status != null && status == 410;
    String why = error != null ? error : succeeded ? null
        : status >= 300 && status < 400 ? "answered " + status + " (redirects are not followed)" : "answered " + status;
    Instant next = null;
    String outcome = WebhookDelivery.SUCCEEDED;
    if (!succeeded) {
      next = gone || endpoint == null || !endpoint.enabled() ? null
          : now.plus(schedule.delay(attempts, answer == null ? null : answer.retryAfter(), now));
      outcome = next == null || next.isAfter(c.giveUpAt()) ? WebhookDelivery.FAILED : WebhookDelivery.PENDING;
      if (outcome.equals(WebhookDelivery.FAILED)) {
        next = null;
      }
    }
    WebhookAttempt attempt = endpoint == null || !endpoint.enabled() ? null : new WebhookAttempt(c.id(), attempts,
        started, (int) Duration.between(started, now).toMillis(), status, excerpt(answer), why);
    return new Outcome(c.withoutPayload(), token, endpoint, outcome, attempts, next, status, why, attempt, gone, now);
  }

  /** Queues the outcome to be recorded with the others that ended meanwhile. */
  void add(Outcome o) {
    waiting.add(o);
    waitingCount.incrementAndGet();
  }

  /** Whether to record the outcomes waiting now: they waited long enough, fill a batch, or {@code placesShort}. */
  boolean dueNow(boolean placesShort) {
    return System.nanoTime() - recordedAt >= RECORD_EVERY_NANOS || waitingCount.get() >= RECORD_BATCH || placesShort;
  }

  /** How long until the outcomes waiting are to be recorded, at least 1 ms; none waiting: {@link Long#MAX_VALUE}. */
  long millisUntilDue() {
    if (waitingCount.get() <= 0) {
      return Long.MAX_VALUE;
    }
    return Math.max(1, (recordedAt + RECORD_EVERY_NANOS - System.nanoTime()) / 1_000_000);
  }

  /**
   * Hands the outcomes waiting to the group commit, one write per workspace (by the dispatcher's
   * thread, at the start of a round; by the closing thread at close). The round's claim follows at
   * once, so on H2 both usually share one commit rather than each making its own.
   */
  void recordWaiting() {
    recordedAt = System.nanoTime();
    while (!waiting.isEmpty()) {
      List<Outcome> batch = new ArrayList<>();
      for (Outcome o = waiting.poll(); o != null; o = batch.size() < RECORD_BATCH ? waiting.poll() : null) {
        batch.add(o);
      }
      waitingCount.addAndGet(-batch.size());
      Map<String, List<Outcome>> byWorkspace = new LinkedHashMap<>();
      batch.forEach(o -> byWorkspace.computeIfAbsent(o.c().workspaceId(), k -> new ArrayList<>()).add(o));
      for (Map.Entry<String, List<Outcome>> e : byWorkspace.entrySet()) {
        List<Outcome> theirs = e.getValue();
        try {
          service.committer().submit(e.getKey(), tx -> {
            record(tx, theirs);
            return (Void) null;
          }).whenComplete((ok, failed) -> {
            if (failed != null) {
              LOG.warn("could not record the attempts of {} webhook deliveries: {}", theirs.size(),
                  failed.getMessage());
            }
            let(theirs);
          });
        } catch (OverloadedException overloaded) {
          let(theirs); // their leases lapse and the deliveries are attempted again
        }
      }
    }
  }

  /** Recorded or given up on: no longer held, and their places free again. */
  private void let(List<Outcome> theirs) {
    theirs.forEach(o -> leases.release(Leases.DELIVERIES, o.c().id(), o.token()));
    released.accept(theirs.size());
  }

  /**
   * Records outcomes in the order their attempts ended: a run of plain successes in one batch
   * (DispatchQueries.recordSuccesses), anything else (a failure, a 410, a delivery of a disabled
   * endpoint) on its own, after the successes before it. An outcome of a delivery this instance
   * gave up (its heartbeat stalled past a lease) is not recorded, nor one another instance took over
   * (the statements check the lease's owner): that instance records its own attempt.
   */
  private void record(Tx tx, List<Outcome> batch) {
    List<Outcome> successes = new ArrayList<>();
    for (Outcome o : batch) {
      if (!leases.holds(Leases.DELIVERIES, o.c().id(), o.token())) {
        LOG.warn("webhook delivery {}: this instance gave it up after its heartbeat stalled; its attempt is not recorded",
            o.c().id());
        continue;
      }
      if (o.plainSuccess()) {
        successes.add(o);
        continue;
      }
      recordSuccesses(tx, successes);
      successes.clear();
      record(tx, o);
    }
    recordSuccesses(tx, successes);
  }

  private static void recordSuccesses(Tx tx, List<Outcome> successes) {
    if (successes.isEmpty()) {
      return;
    }
    boolean[] recorded = DispatchQueries.recordSuccesses(tx.connection(), successes.stream()
        .map(o -> new DispatchQueries.Success(o.c().id(), o.token(), o.attempts(), o.status(), o.now(), o.attempt()))
        .toList());
    Set<String> recovered = new HashSet<>();
    for (int i = 0; i < recorded.length; i++) {
      WebhookEndpoint endpoint = successes.get(i).endpoint();
      if (recorded[i] && endpoint.failingSince() != null) {
        recovered.add(endpoint.id());
      }
    }
    if (!recovered.isEmpty()) { // rare: the DAO is attached only when an endpoint recovered
      WebhookDao dao = tx.dao(WebhookDao.class);
      recovered.forEach(dao::notFailing);
    }
  }

  /**
   * Records one outcome. A failure marks its endpoint failing, and disables it once failing for
   * webhooks.disable_after_hours; a 410 disables it at once.
   */
  private void record(Tx tx, Outcome o) {
    WebhookDao dao = tx.dao(WebhookDao.class);
    WebhookEndpoint endpoint = o.endpoint();
    if (dao.attempted(o.c().id(), o.token(), o.outcome(), o.attempts(), o.next(), o.status(),
        o.why() == null ? null : cut(o.why(), 500), o.now()) == 0) {
      return; // the lease ran out and another attempt has it now
    }
    if (o.attempt() == null) {
      return;
    }
    dao.insertAttempt(o.attempt());
    if (o.outcome().equals(WebhookDelivery.SUCCEEDED)) {
      if (endpoint.failingSince() != null) {
        dao.notFailing(endpoint.id());
      }
    } else if (o.gone()) {
      WebhookService.disable(tx, endpoint, "gone", o.now());
    } else {
      dao.failingSince(endpoint.id(), o.now());
      // Read again: the endpoint may have been enabled anew (failing_since cleared) since the claim.
      WebhookEndpoint current = dao.endpoint(endpoint.workspaceId(), endpoint.id()).orElse(null);
      if (current != null && current.failingSince() != null
          && !current.failingSince().plus(disableAfter).isAfter(o.now())) {
        WebhookService.disable(tx, current, "failing", o.now());
      }
    }
  }

  private static String excerpt(OutboundHttp.Answer answer) {
    if (answer == null || answer.body() == null || answer.body().length == 0) {
      return null;
    }
    String text = new String(answer.body(), 0, Math.min(answer.body().length, MAX_RESPONSE_EXCERPT),
        StandardCharsets.UTF_8).replace('\0', ' ');
    return cut(text, MAX_RESPONSE_EXCERPT);
  }

  private static String cut(String text, int max) {
    return text.length() <= max ? text : text.substring(0, max);
  }
}
