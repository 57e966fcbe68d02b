package dev.runway.webhook;

import dev.runway.core.FairShares;
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
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Attempts due deliveries. One thread claims them (a lease in the database, so that one instance
 * attempts each at a time) and sends them asynchronously: a delivery waiting for its answer holds
 * no thread and no pooled connection. Each endpoint has its own bound of attempts in flight, so a
 * slow or dead endpoint holds only its own places; as many more of its deliveries may be claimed
 * and wait in this instance for a place (see {@link Lane}). An attempt's outcome is recorded
 * through the group commit, together with the others that ended meanwhile; a crash before that
 * leaves the lease to expire, and the delivery is attempted again (at least once). A workspace
 * holds at most its fair share of the instance's places (see {@link FairShares}): its deliveries
 * past it wait, and the due deliveries of other workspaces are claimed past them.
 *
 * <p>A delivery stored by this instance's own commits is, when there is room for it, stored leased
 * to the dispatcher already and handed to it after the commit (see {@link WebhookOutbox.Handoff}):
 * it needs no claim. The others (stored when there was no room, retries, redeliveries, those of
 * other instances or of leases that expired) are claimed.
 */
public final class WebhookDispatcher implements AutoCloseable, WebhookOutbox.Handoff {
  private static final Logger LOG = LoggerFactory.getLogger(WebhookDispatcher.class);
  /** Most deliveries claimed in one round. */
  private static final int CLAIM_BATCH = 100;
  /** Retry delays grow four times per attempt, up to this. */
  private static final Duration MAX_DELAY = Duration.ofHours(10);
  private static final Duration MAX_RETRY_AFTER = Duration.ofHours(24);
  static final int MAX_RESPONSE_EXCERPT = 2048;
  /** Looking past the endpoints without room (see claimAndSend) takes at most 1/this of the dispatcher's time... */
  private static final long LOOK_PAST_SHARE = 10;
  /** ...and happens at most this often: the wait after a look that found something. */
  private static final long LOOK_PAST_MIN_NANOS = 50_000_000;
  /** Most outcomes recorded in one write. */
  private static final int RECORD_BATCH = 256;
  /**
   * Outcomes wait up to this long to be recorded together (unless a batch is waiting, or the
   * instance's places run short). Each group commit that records some writes the pages of the
   * deliveries, their due and updated indexes and the attempts (H2 writes them all at each commit);
   * recorded at every round, outcomes were in nearly every commit, and under start-run load with an
   * endpoint enabled run starts lost two thirds of their throughput instead of half.
   */
  private static final long RECORD_EVERY_NANOS = 25_000_000;
  /**
   * How large a body a claim counts on before reading it: a run event's data is at most 64 KiB
   * (RunView.MAX_EVENT_DATA_CHARS), with its envelope.
   */
  private static final long PAYLOAD_ESTIMATE = 66 * 1024;
  /** Endpoints whose decrypted secrets are kept; past it the keeping starts afresh. */
  private static final int MAX_KEPT_SECRETS = 10_000;

  private final WebhookService service;
  private final WebhookSettings settings;
  private final OutboundHttp outbound;
  private final String owner = "webhooks-" + UUID.randomUUID();
  private final boolean singleProcess;
  private final AtomicLong rounds = new AtomicLong();
  /** Deliveries claimed and not yet recorded (sent, waiting to be sent, or their outcome waiting to be recorded). */
  private final AtomicInteger inFlight = new AtomicInteger();
  /**
   * The bodies (characters of payload) of the deliveries claimed or handed over and not yet
   * attempted: at most about webhooks.max_bytes_in_flight. Counted from the claim or handover to the
   * attempt's end (its outcome keeps no body).
   */
  private final AtomicLong bytesInFlight = new AtomicLong();
  /** Each endpoint's attempts in this instance. */
  private final Map<String, Lane> lanes = new ConcurrentHashMap<>();
  /**
   * Each workspace's attempts in this instance (in its lanes, and handed over and not yet taken up),
   * of those that hold any: a workspace holds at most its fair share of webhooks.max_in_flight
   * (see FairShares), so that one with hundreds of endpoints cannot take every place.
   */
  private final Map<String, Integer> heldByWorkspace = new ConcurrentHashMap<>();
  /** Outcomes not yet handed to the group commit, in the order their attempts ended. */
  private final Queue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
  private final AtomicInteger outcomeCount = new AtomicInteger();
  /** When outcomes were last handed to the group commit (the dispatcher's thread only). */
  private long recordedAt = System.nanoTime();
  /** Each endpoint's live secrets, decrypted, with the stored values they were decrypted from. */
  private final Map<String, Secrets> secrets = new ConcurrentHashMap<>();
  private final RefusedEndpoints refusedEndpoints = new RefusedEndpoints();
  /** Deliveries handed over after the commits that stored them leased (see {@link #handOver}), to be sent. */
  private final Queue<WebhookOutbox.Handed> handed = new ConcurrentLinkedQueue<>();
  /** How many of them: they count against the bounds before they are taken up. */
  private final AtomicInteger handedCount = new AtomicInteger();
  /** The lease owner of deliveries stored leased to this dispatcher. */
  private final String handedToken = owner + ":h";
  private final Thread thread;
  private final Runnable stopListening;
  private final Object signal = new Object();
  private boolean woken;
  /** Looking past the deliveries of endpoints at their bound (see claimAndSend): when next, whether going on, wanted. */
  private long lookPastAt = System.nanoTime();
  private long lookPastEvery = LOOK_PAST_MIN_NANOS;
  private boolean lookingPast;
  private boolean lookPastWanted;
  /**
   * Whether deliveries may be due that the last look did not find: set when this instance stored
   * or made due some (a commit with {@link WebhookOutbox#takeStored}) and while the looks find
   * some; else the dispatcher looks every webhooks.poll_interval_ms (for those of other instances,
   * retries coming due, leases run out). A round runs at every outcome and every handover: with
   * the deliveries in flight held in the due index (until their outcomes are recorded), a look
   * read them all to find nothing, round after round.
   */
  private volatile boolean dueMaybe = true;
  private long lastLook = System.nanoTime();
  private volatile boolean closing;

  private WebhookDispatcher(WebhookService service, OutboundHttp outbound, boolean singleProcess) {
    this.service = service;
    this.singleProcess = singleProcess;
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
    WebhookDispatcher dispatcher = new WebhookDispatcher(service, outbound, singleProcess);
    dispatcher.thread.start();
    service.outbox().handOffTo(dispatcher);
    return dispatcher;
  }

  /** The bodies of the deliveries claimed and not yet attempted, in characters (for tests and metrics). */
  public long bytesInFlight() {
    return bytesInFlight.get();
  }

  /** Looks for due deliveries now. */
  public void wake() {
    dueMaybe = true;
    signal();
  }

  /** Runs a round now (outcomes to record, deliveries handed over, room made), looking for due ones only if {@link #dueMaybe}. */
  private void signal() {
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
        dueMaybe = true; // its look may not have been made
      }
      long waitMillis = lookPastWanted ? Math.max(1, (lookPastAt - System.nanoTime()) / 1_000_000)
          : settings.pollInterval().toMillis();
      if (outcomeCount.get() > 0) { // to be recorded when their wait is over
        waitMillis = Math.min(waitMillis, Math.max(1, (recordedAt + RECORD_EVERY_NANOS - System.nanoTime()) / 1_000_000));
      }
      synchronized (signal) {
        if (!woken && !closing) {
          try {
            signal.wait(waitMillis);
          } catch (InterruptedException e) {
            return;
          }
        }
        woken = false;
      }
    }
  }

  /**
   * One round: claims what this instance has room for and sends it; true if there may be more
   * due that it could take at once.
   *
   * <p>The deliveries due first may all be of endpoints that have no room. Finding the others then
   * means reading past every due delivery of those endpoints (the index is by due time): under a
   * backlog of ten thousands, that cost far more than the deliveries it found, and with one busy
   * endpoint nearly every round did it and found none. So a round looks past them only once
   * {@link #LOOK_PAST_SHARE} times as long as the last such look took has gone by (it then takes at
   * most a tenth of this thread's time), and at least {@link #LOOK_PAST_MIN_NANOS} after a look that
   * found deliveries, twice as long as the time before after one that found none, up to
   * webhooks.poll_interval_ms; it goes on looking as long as it finds full batches. Another
   * endpoint's deliveries wait that long at most behind the backlog of a busy or slow one.
   */
  private boolean claimAndSend() {
    long sinceRecorded = System.nanoTime() - recordedAt;
    if (sinceRecorded >= RECORD_EVERY_NANOS || outcomeCount.get() >= RECORD_BATCH
        || inFlight.get() + CLAIM_BATCH > settings.maxInFlight()) {
      recordOutcomes();
    }
    sendHanded();
    long bytesRoom = settings.maxBytesInFlight() - bytesInFlight.get();
    // Bodies are read with the claim: as many as fit if each were as large as a run event may be.
    int room = (int) Math.min(Math.min(CLAIM_BATCH, settings.maxInFlight() - inFlight.get()),
        Math.max(1, bytesRoom / PAYLOAD_ESTIMATE));
    if (room <= 0 || bytesRoom <= 0) {
      return false;
    }
    int perEndpoint = 2 * settings.maxInFlightPerEndpoint(); // in flight, and as many waiting for a place
    Set<String> full = new HashSet<>();
    lanes.forEach((id, lane) -> {
      if (lane.held() >= perEndpoint) {
        full.add(id);
      }
    });
    Map<String, Integer> holding = Map.copyOf(heldByWorkspace);
    Set<String> fullWorkspaces = FairShares.atTheirShare(holding, settings.maxInFlight(), Integer.MAX_VALUE);
    long started = System.nanoTime();
    boolean lookPast = (!full.isEmpty() || !fullWorkspaces.isEmpty()) && (lookingPast || started - lookPastAt >= 0);
    if (!lookPast && !dueMaybe && started - lastLook < settings.pollInterval().toNanos()) {
      return false; // nothing can have become due since the last look found none
    }
    dueMaybe = false; // before the look: a commit storing more during it sets it again
    lastLook = started;
    Instant now = Time.now();
    List<DispatchQueries.Due> due = service.jdbi().withHandle(h ->
        DispatchQueries.due(h.getConnection(), now, lookPast ? full : Set.of(), lookPast ? fullWorkspaces : Set.of(),
            room));
    if (lookPast) {
      lookPastEvery = due.isEmpty() ? Math.min(2 * lookPastEvery, settings.pollInterval().toNanos()) : LOOK_PAST_MIN_NANOS;
      lookPastAt = System.nanoTime() + Math.max(lookPastEvery, (System.nanoTime() - started) * LOOK_PAST_SHARE);
      lookingPast = due.size() == room;
    }
    // No more per endpoint than it has room for, nor per workspace than its fair share.
    Map<String, Integer> taken = new HashMap<>();
    Map<String, Integer> takenByWorkspace = new HashMap<>();
    int holders = holding.size();
    List<String> ids = new ArrayList<>();
    int leftBehind = 0;
    for (DispatchQueries.Due d : due) {
      int used = lane(d.endpointId(), d.workspaceId()).held();
      int n = taken.getOrDefault(d.endpointId(), 0) + 1;
      int ofWorkspace = holding.getOrDefault(d.workspaceId(), 0) + takenByWorkspace.getOrDefault(d.workspaceId(), 0);
      if (used + n <= perEndpoint
          && FairShares.mayTakeAnother(settings.maxInFlight(), holders, ofWorkspace, Integer.MAX_VALUE)) {
        ids.add(d.id());
        taken.put(d.endpointId(), n);
        takenByWorkspace.merge(d.workspaceId(), 1, Integer::sum);
        holders += ofWorkspace == 0 ? 1 : 0;
      } else {
        leftBehind++;
      }
    }
    boolean fullBatch = due.size() == room;
    if (!due.isEmpty() || lookPast) {
      // Perhaps more: look again at the next round. (A look past the endpoints without room left
      // out their deliveries, due as they may be, for when their lanes have room again.)
      dueMaybe = true;
    }
    // Due deliveries were left behind for want of room: others may wait behind them.
    lookPastWanted = fullBatch && leftBehind > 0 && !lookPast;
    if (ids.isEmpty()) {
      return false;
    }
    String token = owner + ":" + rounds.incrementAndGet();
    // A claimed delivery may wait for a place (see Lane) until the attempts in flight before it have
    // ended, a timeout at most, and then take a timeout itself.
    Instant leaseUntil = leaseUntil(now);
    if (singleProcess) {
      // H2: the leases are written by the group commit, with whatever else commits then; in a
      // transaction of their own they were a commit (a chunk written to the file) for every round.
      service.committer().commit(List.of(), tx -> DispatchQueries.claim(tx.connection(), ids, token, leaseUntil, now));
    } else {
      // PostgreSQL: in a transaction of their own, so that another instance claiming the same
      // deliveries at the same moment waits for this commit alone, not for a whole group commit.
      service.jdbi().useTransaction(h -> DispatchQueries.claim(h.getConnection(), ids, token, leaseUntil, now));
    }
    Map<String, WebhookEndpoint> endpoints = new HashMap<>();
    List<DispatchQueries.Claimed> claimed = service.jdbi().withHandle(h -> {
      List<DispatchQueries.Claimed> ours = DispatchQueries.claimed(h.getConnection(), ids, token);
      if (!ours.isEmpty()) {
        DispatchQueries.endpoints(h.getConnection(),
            ours.stream().map(DispatchQueries.Claimed::endpointId).collect(Collectors.toSet()))
            .forEach(e -> endpoints.put(e.id(), e));
      }
      return ours;
    });
    for (DispatchQueries.Claimed c : claimed) {
      WebhookEndpoint endpoint = endpoints.get(c.endpointId());
      inFlight.incrementAndGet();
      bytesInFlight.addAndGet(c.weight());
      if (endpoint == null || !endpoint.enabled()) {
        finish(c, token, endpoint, Time.now(), null, null, "the endpoint was disabled");
        continue;
      }
      Lane lane = lane(c.endpointId(), c.workspaceId());
      Attempt attempt = new Attempt(c, token, endpoint);
      if (lane.startOrWait(attempt, settings.maxInFlightPerEndpoint())) {
        send(lane, attempt);
      }
    }
    return fullBatch && (leftBehind == 0 || lookPast);
  }

  /**
   * How long a delivery is leased: it may wait for a place (see Lane) until the attempts in flight
   * before it have ended, a timeout at most, and then take a timeout itself.
   */
  private Instant leaseUntil(Instant now) {
    return now.plus(settings.timeout().multipliedBy(2)).plusSeconds(30);
  }

  /**
   * Called in the transaction storing a new delivery (on the group commit's thread): a lease when
   * this instance has room for it, under the same bounds as a claim (webhooks.max_in_flight, and
   * twice max_in_flight_per_endpoint held per endpoint: in flight, and as many waiting for a place),
   * counting those the transaction leased already and those handed over and not yet taken up.
   */
  @Override
  public WebhookOutbox.Lease lease(String workspaceId, String endpointId, int alreadyLeased, int leasedInAll,
      Instant now) {
    if (closing || inFlight.get() + handedCount.get() + leasedInAll >= settings.maxInFlight()
        || bytesInFlight.get() + (long) leasedInAll * PAYLOAD_ESTIMATE >= settings.maxBytesInFlight()) {
      return null;
    }
    // Its fair share, counting every delivery the transaction leased as the workspace's (it is at
    // most stored due instead, for a claim).
    Integer mine = heldByWorkspace.get(workspaceId);
    int ofWorkspace = (mine == null ? 0 : mine) + leasedInAll;
    int holders = heldByWorkspace.size() + (mine == null && ofWorkspace > 0 ? 1 : 0);
    if (!FairShares.mayTakeAnother(settings.maxInFlight(), holders, ofWorkspace, Integer.MAX_VALUE)) {
      return null;
    }
    Lane lane = lanes.get(endpointId);
    int held = (lane == null ? 0 : lane.held()) + alreadyLeased;
    if (held >= 2 * settings.maxInFlightPerEndpoint()) {
      return null;
    }
    return new WebhookOutbox.Lease(handedToken, leaseUntil(now));
  }

  /** After the commit that stored them leased (on the thread that tells committers): to be sent at once. */
  @Override
  public void handOver(List<WebhookOutbox.Handed> deliveries) {
    if (deliveries.isEmpty()) {
      return;
    }
    if (closing) { // committed as the dispatcher stopped: given back (else their leases expire)
      try {
        service.jdbi().useHandle(h -> DispatchQueries.release(h.getConnection(),
            deliveries.stream().map(d -> d.claimed().id()).toList(), handedToken));
      } catch (RuntimeException e) {
        LOG.warn("could not give back {} webhook deliveries not attempted: {}", deliveries.size(), e.getMessage());
      }
      return;
    }
    deliveries.forEach(d -> hold(d.claimed().workspaceId(), 1));
    handedCount.addAndGet(deliveries.size());
    bytesInFlight.addAndGet(deliveries.stream().mapToLong(d -> d.claimed().weight()).sum());
    handed.addAll(deliveries);
    signal();
  }

  /** Sends the deliveries handed over (see {@link #handOver}), on the dispatcher's thread. */
  private void sendHanded() {
    for (WebhookOutbox.Handed h = handed.poll(); h != null; h = handed.poll()) {
      inFlight.incrementAndGet();
      handedCount.decrementAndGet();
      hold(h.claimed().workspaceId(), -1); // held in its lane from now on
      Lane lane = lane(h.endpoint().id(), h.claimed().workspaceId());
      Attempt attempt = new Attempt(h.claimed(), h.owner(), h.endpoint());
      if (lane.startOrWait(attempt, settings.maxInFlightPerEndpoint())) {
        send(lane, attempt);
      }
    }
  }

  /** A claimed delivery, to be attempted. */
  private record Attempt(DispatchQueries.Claimed c, String token, WebhookEndpoint endpoint) {}

  /**
   * An endpoint's attempts in this instance: those in flight, at most max_in_flight_per_endpoint,
   * and as many more claimed that wait for a place. When an attempt ends, the next one waiting is
   * sent at once, on the thread that took up the answer: a busy endpoint's places do not wait for
   * a claim round (a query, a commit and another query), which comes once for many attempts.
   */
  private final class Lane {
    private final String workspaceId;
    private int sending;
    private final ArrayDeque<Attempt> waiting = new ArrayDeque<>();

    Lane(String workspaceId) {
      this.workspaceId = workspaceId;
    }

    /** In flight and waiting. */
    synchronized int held() {
      return sending + waiting.size();
    }

    /** True if the attempt may be sent now; else it waits for a place. */
    synchronized boolean startOrWait(Attempt a, int places) {
      hold(workspaceId, 1);
      if (sending < places) {
        sending++;
        return true;
      }
      waiting.add(a);
      return false;
    }

    /** An attempt ended: the next one to send in its place, if any (none once the dispatcher closes). */
    synchronized Attempt ended(boolean closing) {
      sending--;
      hold(workspaceId, -1);
      Attempt next = closing ? null : waiting.poll();
      if (next != null) {
        sending++;
      }
      return next;
    }

    /** Takes every attempt still waiting (at close). */
    synchronized List<Attempt> takeWaiting() {
      List<Attempt> out = new ArrayList<>(waiting);
      hold(workspaceId, -out.size());
      waiting.clear();
      return out;
    }
  }

  /** The endpoint's lane (an endpoint belongs to one workspace). */
  private Lane lane(String endpointId, String workspaceId) {
    return lanes.computeIfAbsent(endpointId, k -> new Lane(workspaceId));
  }

  /** Counts {@code n} more (or fewer) attempts held by the workspace; none held: it is no longer counted. */
  private void hold(String workspaceId, int n) {
    heldByWorkspace.compute(workspaceId, (ws, held) -> {
      int now = (held == null ? 0 : held) + n;
      return now <= 0 ? null : now;
    });
  }

  /** An attempt in the lane ended: sends the next one waiting, else asks for a round (the lane has room). */
  private void ended(Lane lane) {
    Attempt next = lane.ended(closing);
    if (next != null) {
      send(lane, next);
    } else {
      signal();
    }
  }

  private void send(Lane lane, Attempt a) {
    DispatchQueries.Claimed c = a.c();
    String token = a.token();
    WebhookEndpoint endpoint = a.endpoint();
    Instant started = Time.now();
    long timestamp = started.getEpochSecond();
    byte[] body = c.payload().getBytes(StandardCharsets.UTF_8);
    OutboundHttp.Call call;
    try {
      Map<String, String> headers = new HashMap<>();
      headers.put("Content-Type", "application/json");
      headers.put("webhook-id", c.eventId());
      headers.put("webhook-timestamp", Long.toString(timestamp));
      headers.put("webhook-signature", Signatures.header(secrets(endpoint, started), c.eventId(), timestamp, body));
      call = new OutboundHttp.Call("POST", URI.create(endpoint.url()), headers, body, settings.timeout(),
          MAX_RESPONSE_EXCERPT);
    } catch (RuntimeException e) {
      ended(lane);
      finish(c, token, endpoint, started, null, null, "the delivery could not be made: " + e.getMessage());
      return;
    }
    outbound.send(call).whenComplete((answer, failure) -> {
      ended(lane);
      if (answer != null) {
        finish(c, token, endpoint, started, answer.status(), answer, null);
      } else {
        Throwable cause = failure instanceof java.util.concurrent.CompletionException ? failure.getCause() : failure;
        if (cause instanceof OutboundHttp.NoAnswer refused && refused.failure() == OutboundHttp.Failure.REFUSED) {
          refusedEndpoints.refused(endpoint, refused.getMessage());
        }
        finish(c, token, endpoint, started, null, null, cause instanceof OutboundHttp.NoAnswer noAnswer
            ? noAnswer.getMessage() : "the delivery failed: " + cause.getClass().getSimpleName());
      }
    });
  }

  /**
   * The attempt is over (its endpoint's place is free already): queues its outcome, and what it
   * means for the endpoint, to be recorded. The instance's place is freed once it is.
   */
  private void finish(DispatchQueries.Claimed c, String token, WebhookEndpoint endpoint, Instant started,
      Integer status, OutboundHttp.Answer answer, String error) {
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
    WebhookAttempt attempt = endpoint == null || !endpoint.enabled() ? null : new WebhookAttempt(c.id(), attempts,
        started, (int) Duration.between(started, now).toMillis(), status, excerpt(answer), why);
    service.metrics().webhookDelivery(outcome, attempt != null, Duration.between(started, now));
    bytesInFlight.addAndGet(-c.weight());
    outcomes.add(new Outcome(c.withoutPayload(), token, endpoint, outcome, attempts, next, status, why, attempt, gone, now));
    outcomeCount.incrementAndGet();
    signal(); // the next round hands it to the group commit
  }

  /** An attempt's outcome, to be recorded. */
  private record Outcome(DispatchQueries.Claimed c, String token, WebhookEndpoint endpoint, String outcome,
      int attempts, Instant next, Integer status, String why, WebhookAttempt attempt, boolean gone, Instant now) {
    /** A success of an attempt made: all it changes is the delivery, its attempts and perhaps failing_since. */
    boolean plainSuccess() {
      return attempt != null && outcome.equals(WebhookDelivery.SUCCEEDED);
    }
  }

  /**
   * Hands the outcomes waiting to the group commit, one write per workspace (of the dispatcher's
   * thread, at the start of each round; of the closing thread at close). The round's claim follows
   * at once, so on H2 both usually share one commit: outcomes recorded on their own were a commit
   * (a chunk written to the file) for every few deliveries.
   */
  private void recordOutcomes() {
    recordedAt = System.nanoTime();
    while (!outcomes.isEmpty()) {
      List<Outcome> batch = new ArrayList<>();
      for (Outcome o = outcomes.poll(); o != null; o = batch.size() < RECORD_BATCH ? outcomes.poll() : null) {
        batch.add(o);
      }
      outcomeCount.addAndGet(-batch.size());
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
            release(theirs.size());
          });
        } catch (OverloadedException overloaded) {
          release(theirs.size()); // the leases expire and the deliveries are attempted again
        }
      }
    }
  }

  /**
   * Records outcomes in the order their attempts ended: a run of plain successes in one batch
   * (DispatchQueries.recordSuccesses), anything else (a failure, a 410, a delivery of a disabled
   * endpoint) on its own, after the successes before it.
   */
  private void record(Tx tx, List<Outcome> batch) {
    List<Outcome> successes = new ArrayList<>();
    for (Outcome o : batch) {
      if (o.plainSuccess()) {
        successes.add(o);
        continue;
      }
      recordSuccesses(tx, successes);
      successes.clear();
      record(tx, o.c(), o.token(), o.endpoint(), o.outcome(), o.attempts(), o.next(), o.status(), o.why(), o.attempt(),
          o.gone(), o.now());
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
    if (!recovered.isEmpty()) { // rare: attaching the DAO costs more than the batches above
      WebhookDao dao = tx.dao(WebhookDao.class);
      recovered.forEach(dao::notFailing);
    }
  }

  private void record(Tx tx, DispatchQueries.Claimed c, String token, WebhookEndpoint endpoint, String outcome,
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
  /** Outcomes were recorded (or given up on: their leases expire): the instance has their places again. */
  private void release(int n) {
    inFlight.addAndGet(-n);
    signal();
  }

  /** The stored secrets an endpoint's live secrets were decrypted from, and those. */
  private record Secrets(String secret, String previousSecret, boolean previousLive, List<String> live) {}

  /** The endpoint's live secrets, decrypted once per stored value (not at each attempt). */
  private List<String> secrets(WebhookEndpoint e, Instant now) {
    boolean previousLive = e.previousSecret() != null && e.previousSecretUntil() != null
        && e.previousSecretUntil().isAfter(now);
    Secrets kept = secrets.get(e.id());
    if (kept == null || !kept.secret().equals(e.secret()) || !Objects.equals(kept.previousSecret(), e.previousSecret())
        || kept.previousLive() != previousLive) {
      if (secrets.size() >= MAX_KEPT_SECRETS) {
        secrets.clear();
      }
      kept = new Secrets(e.secret(), e.previousSecret(), previousLive, service.secrets(e, now));
      secrets.put(e.id(), kept);
    }
    return kept.live();
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

  /**
   * Stops claiming; the deliveries still waiting for a place are given back, and attempts in flight
   * get a few seconds to be recorded (else their leases expire).
   */
  @Override
  public void close() {
    closing = true;
    service.outbox().handOffTo(null);
    stopListening.run();
    wake();
    try {
      thread.join(5_000);
      // Given back due as they were, for another instance (or the next start) to attempt at once
      // rather than when their leases run out.
      Map<String, List<String>> unsent = new HashMap<>();
      lanes.values().forEach(lane -> lane.takeWaiting().forEach(a -> {
        unsent.computeIfAbsent(a.token(), k -> new ArrayList<>()).add(a.c().id());
        bytesInFlight.addAndGet(-a.c().weight());
      }));
      int n = unsent.values().stream().mapToInt(List::size).sum();
      // Handed over and not taken up (not counted in flight): given back with the others.
      int notTaken = 0;
      for (WebhookOutbox.Handed h = handed.poll(); h != null; h = handed.poll()) {
        unsent.computeIfAbsent(h.owner(), k -> new ArrayList<>()).add(h.claimed().id());
        bytesInFlight.addAndGet(-h.claimed().weight());
        notTaken++;
      }
      if (n + notTaken > 0) {
        try {
          service.jdbi().useHandle(h -> unsent.forEach((token, ids) ->
              DispatchQueries.release(h.getConnection(), ids, token)));
        } catch (RuntimeException e) {
          LOG.warn("could not give back {} webhook deliveries not attempted: {}", n + notTaken, e.getMessage());
        }
        inFlight.addAndGet(-n);
      }
      long until = System.nanoTime() + 5_000_000_000L;
      while (inFlight.get() > 0 && System.nanoTime() < until) {
        recordOutcomes();
        Thread.sleep(20);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    outbound.close();
  }
}
