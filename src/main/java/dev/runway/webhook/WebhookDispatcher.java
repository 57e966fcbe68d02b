package dev.runway.webhook;

import dev.runway.core.Time;
import dev.runway.db.OverloadedException;
import dev.runway.db.Tx;
import dev.runway.outbound.OutboundHttp;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Attempts due deliveries. One thread claims them (a lease in the database, so that one instance
 * attempts each at a time) and sends them asynchronously: a delivery waiting for its answer holds
 * no thread and no pooled connection. Each endpoint has its own bound of attempts in flight, so a
 * slow or dead endpoint holds only its own places. An attempt's outcome is recorded through the
 * group commit; a crash before that leaves the lease to expire, and the delivery is attempted
 * again (at least once).
 */
public final class WebhookDispatcher implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(WebhookDispatcher.class);
  /** Most deliveries claimed in one round. */
  private static final int CLAIM_BATCH = 100;
  /** Retry delays grow four times per attempt, up to this. */
  private static final Duration MAX_DELAY = Duration.ofHours(10);
  private static final Duration MAX_RETRY_AFTER = Duration.ofHours(24);
  static final int MAX_RESPONSE_EXCERPT = 2048;

  private final WebhookService service;
  private final WebhookSettings settings;
  private final OutboundHttp outbound;
  private final String owner = "webhooks-" + UUID.randomUUID();
  private final AtomicLong rounds = new AtomicLong();
  private final AtomicInteger inFlight = new AtomicInteger();
  private final Map<String, AtomicInteger> inFlightByEndpoint = new ConcurrentHashMap<>();
  private final Thread thread;
  private final Runnable stopListening;
  private final Object signal = new Object();
  private boolean woken;
  private volatile boolean closing;

  private WebhookDispatcher(WebhookService service, OutboundHttp outbound) {
    this.service = service;
    this.settings = service.settings();
    this.outbound = outbound;
    this.stopListening = service.committer().addCommitListener(workspaces -> {
      if (service.outbox().takeStored()) {
        wake();
      }
    });
    this.thread = new Thread(this::loop, "runway-webhooks");
    thread.setDaemon(true);
  }

  /**
   * Starts attempting deliveries. {@code singleProcess} (H2): no other process shares the
   * database, so leases left by a crash are dropped at once instead of waiting for them to expire.
   */
  public static WebhookDispatcher start(WebhookService service, boolean singleProcess) {
    WebhookSettings s = service.settings();
    OutboundHttp outbound = new OutboundHttp(OutboundHttp.AddressPolicy.publicOnly(s.allowPrivateNetworks()),
        s.maxInFlight(), s.maxInFlight(), null);
    if (singleProcess) {
      int released = service.jdbi().withExtension(WebhookDao.class, WebhookDao::releaseAllLeases);
      if (released > 0) {
        LOG.info("released {} webhook deliveries leased before the last stop", released);
      }
    }
    WebhookDispatcher dispatcher = new WebhookDispatcher(service, outbound);
    dispatcher.thread.start();
    return dispatcher;
  }

  /** Looks for due deliveries now. */
  public void wake() {
    synchronized (signal) {
      woken = true;
      signal.notifyAll();
    }
  }

  private void loop() {
    while (!closing) {
      try {
        while (!closing && claimAndSend()) {
          // a full round: there may be more due at once
        }
      } catch (RuntimeException e) {
        LOG.warn("webhook dispatch round failed: {}", e.getMessage());
      }
      synchronized (signal) {
        if (!woken && !closing) {
          try {
            signal.wait(settings.pollInterval().toMillis());
          } catch (InterruptedException e) {
            return;
          }
        }
        woken = false;
      }
    }
  }

  /** One round: claims what this instance has room for and sends it; true if it found a full batch. */
  private boolean claimAndSend() {
    int room = Math.min(CLAIM_BATCH, settings.maxInFlight() - inFlight.get());
    if (room <= 0) {
      return false;
    }
    Set<String> full = new HashSet<>();
    inFlightByEndpoint.forEach((id, n) -> {
      if (n.get() >= settings.maxInFlightPerEndpoint()) {
        full.add(id);
      }
    });
    Instant now = Time.now();
    List<WebhookDao.Due> due = service.jdbi().withExtension(WebhookDao.class,
        dao -> full.isEmpty() ? dao.due(now, room) : dao.dueOutside(now, full, room));
    if (due.isEmpty()) {
      return false;
    }
    // No more per endpoint than it has room for.
    Map<String, Integer> taken = new HashMap<>();
    List<String> ids = new ArrayList<>();
    for (WebhookDao.Due d : due) {
      int used = inFlightByEndpoint.computeIfAbsent(d.endpointId(), k -> new AtomicInteger()).get();
      int n = taken.merge(d.endpointId(), 1, Integer::sum);
      if (used + n <= settings.maxInFlightPerEndpoint()) {
        ids.add(d.id());
      }
    }
    if (ids.isEmpty()) {
      return true; // every one of them is of an endpoint now full: the next round leaves those out
    }
    String token = owner + ":" + rounds.incrementAndGet();
    Instant leaseUntil = now.plus(settings.timeout()).plusSeconds(30);
    List<WebhookDao.Claimed> claimed = service.jdbi().inTransaction(h -> {
      WebhookDao dao = h.attach(WebhookDao.class);
      dao.claim(ids, token, leaseUntil, now);
      return dao.claimed(ids, token);
    });
    if (claimed.isEmpty()) {
      return due.size() == room;
    }
    Map<String, WebhookEndpoint> endpoints = service.jdbi().withExtension(WebhookDao.class,
        dao -> dao.endpointsById(claimed.stream().map(WebhookDao.Claimed::endpointId).collect(Collectors.toSet())))
        .stream().collect(Collectors.toMap(WebhookEndpoint::id, Function.identity()));
    for (WebhookDao.Claimed c : claimed) {
      WebhookEndpoint endpoint = endpoints.get(c.endpointId());
      inFlight.incrementAndGet();
      inFlightByEndpoint.computeIfAbsent(c.endpointId(), k -> new AtomicInteger()).incrementAndGet();
      if (endpoint == null || !endpoint.enabled()) {
        finish(c, token, endpoint, Time.now(), null, null, "the endpoint was disabled");
        continue;
      }
      send(c, token, endpoint);
    }
    return due.size() == room;
  }

  private void send(WebhookDao.Claimed c, String token, WebhookEndpoint endpoint) {
    Instant started = Time.now();
    long timestamp = started.getEpochSecond();
    byte[] body = c.payload().getBytes(StandardCharsets.UTF_8);
    OutboundHttp.Call call;
    try {
      Map<String, String> headers = new HashMap<>();
      headers.put("Content-Type", "application/json");
      headers.put("webhook-id", c.eventId());
      headers.put("webhook-timestamp", Long.toString(timestamp));
      headers.put("webhook-signature", Signatures.header(service.secrets(endpoint, started), c.eventId(), timestamp,
          body));
      call = new OutboundHttp.Call("POST", URI.create(endpoint.url()), headers, body, settings.timeout(),
          MAX_RESPONSE_EXCERPT);
    } catch (RuntimeException e) {
      finish(c, token, endpoint, started, null, null, "the delivery could not be made: " + e.getMessage());
      return;
    }
    outbound.send(call).whenComplete((answer, failure) -> {
      if (answer != null) {
        finish(c, token, endpoint, started, answer.status(), answer, null);
      } else {
        Throwable cause = failure instanceof java.util.concurrent.CompletionException ? failure.getCause() : failure;
        finish(c, token, endpoint, started, null, null, cause instanceof OutboundHttp.NoAnswer noAnswer
            ? noAnswer.getMessage() : "the delivery failed: " + cause.getClass().getSimpleName());
      }
    });
  }

  /** Records an attempt's outcome (and what it means for the endpoint), then frees its place. */
  private void finish(WebhookDao.Claimed c, String token, WebhookEndpoint endpoint, Instant started, Integer status,
      OutboundHttp.Answer answer, String error) {
    Instant now = Time.now();
    int attempts = c.attempts() + (endpoint != null && endpoint.enabled() ? 1 : 0);
    boolean succeeded = status != null && status >= 200 && status < 300;
    boolean gone = status != null && status == 410;
    String why = error != null ? error : succeeded ? null
        : status >= 300 && status < 400 ? "answered " + status + " (redirects are not followed)" : "answered " + status;
    Instant next = null;
    String outcome = WebhookDelivery.SUCCEEDED;
    if (!succeeded) {
      next = gone || endpoint == null || !endpoint.enabled() ? null : now.plus(delay(attempts, answer));
      outcome = next == null || next.isAfter(c.giveUpAt()) ? WebhookDelivery.FAILED : WebhookDelivery.PENDING;
      if (outcome.equals(WebhookDelivery.FAILED)) {
        next = null;
      }
    }
    String finalOutcome = outcome;
    Instant nextAttempt = next;
    WebhookAttempt attempt = endpoint == null || !endpoint.enabled() ? null : new WebhookAttempt(c.id(), attempts,
        started, (int) Duration.between(started, now).toMillis(), status, excerpt(answer), why);
    try {
      service.committer().submit(c.workspaceId(), tx -> {
        record(tx, c, token, endpoint, finalOutcome, attempts, nextAttempt, status, why, attempt, gone, now);
        return null;
      }).whenComplete((ok, failed) -> {
        if (failed != null) {
          LOG.warn("could not record the attempt of webhook delivery {}: {}", c.id(), failed.getMessage());
        }
        release(c.endpointId());
      });
    } catch (OverloadedException e) {
      release(c.endpointId()); // the lease expires and the delivery is attempted again
    }
  }

  private void record(Tx tx, WebhookDao.Claimed c, String token, WebhookEndpoint endpoint, String outcome,
      int attempts, Instant next, Integer status, String why, WebhookAttempt attempt, boolean gone, Instant now) {
    WebhookDao dao = tx.dao(WebhookDao.class);
    if (dao.attempted(c.id(), token, outcome, attempts, next, status, why == null ? null : cut(why, 500), now) == 0) {
      return; // the lease ran out and another attempt has it now
    }
    if (attempt == null) {
      return;
    }
    dao.insertAttempt(attempt);
    if (outcome.equals(WebhookDelivery.SUCCEEDED)) {
      if (endpoint.failingSince() != null) {
        dao.notFailing(endpoint.id());
      }
    } else if (gone) {
      WebhookService.disable(tx, endpoint, "gone", now);
    } else {
      dao.failingSince(endpoint.id(), now);
      // Read again: the endpoint may have been enabled anew (failing_since cleared) since the claim.
      WebhookEndpoint current = dao.endpoint(endpoint.workspaceId(), endpoint.id()).orElse(null);
      if (current != null && current.failingSince() != null
          && !current.failingSince().plus(settings.disableAfter()).isAfter(now)) {
        WebhookService.disable(tx, current, "failing", now);
      }
    }
  }

  private void release(String endpointId) {
    inFlight.decrementAndGet();
    AtomicInteger n = inFlightByEndpoint.get(endpointId);
    if (n != null) {
      n.decrementAndGet();
    }
    wake();
  }

  /**
   * The wait before the next attempt: Retry-After when the endpoint sent one (at most a day),
   * else the base delay times four per attempt made, at most 10 hours, with jitter of ±20%.
   */
  Duration delay(int attempts, OutboundHttp.Answer answer) {
    Duration retryAfter = answer == null ? null : retryAfter(answer.retryAfter(), Time.now());
    if (retryAfter != null) {
      return retryAfter;
    }
    double factor = Math.pow(4, Math.min(attempts - 1, 20));
    double millis = Math.min(settings.retryBase().toMillis() * factor, MAX_DELAY.toMillis());
    return Duration.ofMillis((long) (millis * ThreadLocalRandom.current().nextDouble(0.8, 1.2)));
  }

  /** Retry-After as seconds or an HTTP date, between 0 and a day; null when absent or unreadable. */
  static Duration retryAfter(String value, Instant now) {
    if (value == null || value.isBlank()) {
      return null;
    }
    Duration d;
    try {
      d = Duration.ofSeconds(Long.parseLong(value.trim()));
    } catch (NumberFormatException e) {
      try {
        d = Duration.between(now, ZonedDateTime.parse(value.trim(), DateTimeFormatter.RFC_1123_DATE_TIME).toInstant());
      } catch (DateTimeParseException unreadable) {
        return null;
      }
    }
    return d.isNegative() ? Duration.ZERO : d.compareTo(MAX_RETRY_AFTER) > 0 ? MAX_RETRY_AFTER : d;
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

  /** Stops claiming; attempts in flight get a few seconds to be recorded (else their leases expire). */
  @Override
  public void close() {
    closing = true;
    stopListening.run();
    wake();
    try {
      thread.join(5_000);
      long until = System.nanoTime() + 5_000_000_000L;
      while (inFlight.get() > 0 && System.nanoTime() < until) {
        Thread.sleep(20);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    outbound.close();
  }
}
