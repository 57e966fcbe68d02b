package dev.runway.webhook;

import dev.runway.core.FairShares;
import dev.runway.core.Time;
import dev.runway.instance.Leases;
import dev.runway.outbound.OutboundHttp;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
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
 * through the group commit, together with the others that ended meanwhile (see {@link
 * DeliveryOutcomes}); a crash before that leaves the lease to expire, and the delivery is attempted
 * again (at least once). A workspace holds at most its fair share of the instance's places (see
 * {@link FairShares}): its deliveries past it wait, and the due deliveries of other workspaces are
 * claimed past them.
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
  /** Looking past the endpoints without room (see claimAndSend) takes at most 1/this of the dispatcher's time... */
  private static final long LOOK_PAST_SHARE = 10;
  /** ...and happens at most this often: the wait after a look that found something. */
  private static final long LOOK_PAST_MIN_NANOS = 50_000_000;
  /**
   * How large a body a claim counts on before reading it: a run event's data is at most 64 KiB
   * (RunView.MAX_EVENT_DATA_CHARS), with its envelope.
   */
  private static final long PAYLOAD_ESTIMATE = 66 * 1024;

  private final WebhookService service;
  private final WebhookSettings settings;
  private final OutboundHttp outbound;
  private final Leases leases;
  /** This instance's id: a delivery's lease owner is it, a colon and the claim's round. */
  private final String owner;
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
   * Each workspace's attempts in this instance (in its lanes, handed over and not yet taken up,
   * leased by the transaction being committed, or being claimed), of those that hold any: a
   * workspace holds at most its fair share of webhooks.max_in_flight (see FairShares), so that one
   * with hundreds of endpoints cannot take every place. A place is counted from the moment it is
   * given, by {@link #lease} on the group commit's thread or by a claim on the dispatcher's, each
   * deciding under {@link #shares}: neither can give a place that the other gave meanwhile.
   */
  private final Map<String, Integer> heldByWorkspace = new ConcurrentHashMap<>();
  private final Object shares = new Object();
  private final DeliveryOutcomes outcomes;
  private final EndpointSecrets secrets;
  private final RefusedEndpoints refusedEndpoints = new RefusedEndpoints();
  /** Deliveries handed over after the commits that stored them leased (see {@link #handOver}), to be sent. */
  private final Queue<WebhookOutbox.Handed> handed = new ConcurrentLinkedQueue<>();
  /** How many of them: they count against the bounds before they are taken up. */
  private final AtomicInteger handedCount = new AtomicInteger();
  /** The lease owner of deliveries stored leased to this dispatcher. */
  private final String handedToken;
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
   * retries coming due, leases run out). A round runs at every outcome and every handover, and a
   * look reads the deliveries in flight too (they stay in the due index until their outcomes are
   * recorded): looking at every round would read them all for nothing.
   */
  private volatile boolean dueMaybe = true;
  private long lastLook = System.nanoTime();
  private volatile boolean closing;

  private WebhookDispatcher(WebhookService service, OutboundHttp outbound, boolean singleProcess, Leases leases) {
    this.service = service;
    this.leases = leases;
    this.owner = leases.instanceId();
    this.handedToken = owner + ":h";
    this.singleProcess = singleProcess;
    this.settings = service.settings();
    this.outbound = outbound;
    this.outcomes = new DeliveryOutcomes(service, new RetrySchedule(settings.retryBase()), leases, this::release);
    this.secrets = new EndpointSecrets(service::secrets);
    this.stopListening = service.committer().addCommitListener(workspaces -> {
      if (service.outbox().takeStored()) {
        wake();
      }
    });
    this.thread = new Thread(this::loop, "runway-webhooks");
    thread.setDaemon(true);
  }

  /**
   * Starts attempting deliveries under this instance's {@code leases}. {@code singleProcess} (H2):
   * no other process shares the database, so claims ride on the group commit.
   */
  public static WebhookDispatcher start(WebhookService service, boolean singleProcess, Leases leases) {
    WebhookSettings s = service.settings();
    OutboundHttp outbound = new OutboundHttp(OutboundHttp.AddressPolicy.publicOnly(s.allowPrivateNetworks()),
        s.maxInFlight(), s.maxInFlight(), null);
    WebhookDispatcher dispatcher = new WebhookDispatcher(service, outbound, singleProcess, leases);
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
      waitMillis = Math.min(waitMillis, outcomes.millisUntilDue());
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
   * means reading past every due delivery of those endpoints (the index is by due time), which
   * behind a large backlog costs far more than the deliveries it finds, and mostly finds none. So a
   * round looks past them only once {@link #LOOK_PAST_SHARE} times as long as the last such look
   * took has gone by (it then takes at most a tenth of this thread's time), and at least {@link
   * #LOOK_PAST_MIN_NANOS} after a look that found deliveries, twice as long as the time before
   * after one that found none, up to webhooks.poll_interval_ms; it goes on looking as long as it
   * finds full batches. Another endpoint's deliveries wait that long at most behind the backlog of
   * a busy or slow one.
   */
  private boolean claimAndSend() {
    if (outcomes.dueNow(inFlight.get() + CLAIM_BATCH > settings.maxInFlight())) {
      outcomes.recordWaiting();
    }
    sendHanded();
    long bytesRoom = settings.maxBytesInFlight() - bytesInFlight.get();
    // Bodies are read with the claim: as many as fit if each were as large as a run event may be.
    int room = (int) Math.min(Math.min(CLAIM_BATCH, settings.maxInFlight() - inFlight.get()),
        Math.max(1, bytesRoom / PAYLOAD_ESTIMATE));
    if (room <= 0 || bytesRoom <= 0 || !leases.live()) {
      return false; // not live: no beat recorded lately, and its leases may lapse under it
    }
    int perEndpoint = 2 * settings.maxInFlightPerEndpoint(); // in flight, and as many waiting for a place
    Set<String> full = new HashSet<>();
    lanes.forEach((id, lane) -> {
      if (lane.held() >= perEndpoint) {
        full.add(id);
      }
    });
    Set<String> fullWorkspaces = FairShares.atTheirShare(Map.copyOf(heldByWorkspace), settings.maxInFlight(),
        Integer.MAX_VALUE);
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
    // No more per endpoint than it has room for, nor per workspace than its fair share; the places
    // taken are the workspaces' from now on (see heldByWorkspace), until claimed or not.
    Map<String, Integer> taken = new HashMap<>();
    Map<String, String> reserved = new HashMap<>(); // delivery id to workspace
    Map<String, String> lapsed = new HashMap<>();
    int leftBehind = 0;
    synchronized (shares) {
      for (DispatchQueries.Due d : due) {
        int used = lane(d.endpointId(), d.workspaceId()).held();
        int n = taken.getOrDefault(d.endpointId(), 0) + 1;
        if (used + n <= perEndpoint && FairShares.mayTakeAnother(settings.maxInFlight(), heldByWorkspace.size(),
            heldByWorkspace.getOrDefault(d.workspaceId(), 0), Integer.MAX_VALUE)) {
          reserved.put(d.id(), d.workspaceId());
          hold(d.workspaceId(), 1);
          if (d.lapsedOwner() != null && !d.lapsedOwner().startsWith(owner + ":")) {
            lapsed.put(d.id(), d.lapsedOwner()); // another instance's, whose lease lapsed: dead or paused
          }
          taken.put(d.endpointId(), n);
        } else {
          leftBehind++;
        }
      }
    }
    List<String> ids = List.copyOf(reserved.keySet());
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
    try {
      claimAndStart(ids, lapsed, now);
    } finally {
      reserved.values().forEach(ws -> hold(ws, -1)); // held in their lanes now, or not claimed
    }
    return fullBatch && (leftBehind == 0 || lookPast);
  }

  /** Claims the deliveries {@code ids} (those of {@code lapsed} from another instance) and sends those claimed. */
  private void claimAndStart(List<String> ids, Map<String, String> lapsed, Instant now) {
    String token = owner + ":" + rounds.incrementAndGet();
    // A claimed delivery may wait for a place (see Lane) until the attempts in flight before it have
    // ended, a timeout at most, and then take a timeout itself.
    Instant leaseUntil = leaseUntil(now);
    if (singleProcess) {
      // H2: the leases are written by the group commit, with whatever else commits then, rather than
      // making a commit (a chunk written to the file) of their own every round.
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
      leases.hold(Leases.DELIVERIES, c.id(), token);
      if (lapsed.containsKey(c.id())) {
        LOG.info("webhook delivery {}: the lease of {} lapsed; taking the delivery over", c.id(), lapsed.get(c.id()));
        leases.tookOver(Leases.DELIVERIES, 1);
      }
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
  }

  /**
   * How long a delivery is leased: one lease, renewed by the heartbeat while the delivery waits
   * for a place (see Lane) and while its attempt is out, however long.
   */
  private Instant leaseUntil(Instant now) {
    return leases.until(now);
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
    Lane lane = lanes.get(endpointId);
    int held = (lane == null ? 0 : lane.held()) + alreadyLeased;
    if (held >= 2 * settings.maxInFlightPerEndpoint()) {
      return null;
    }
    synchronized (shares) { // its fair share, counting the places this transaction leased it already
      if (!FairShares.mayTakeAnother(settings.maxInFlight(), heldByWorkspace.size(),
          heldByWorkspace.getOrDefault(workspaceId, 0), Integer.MAX_VALUE)) {
        return null;
      }
      hold(workspaceId, 1);
    }
    return new WebhookOutbox.Lease(handedToken, leaseUntil(now));
  }

  @Override
  public void giveBack(List<String> workspaceIds) {
    workspaceIds.forEach(ws -> hold(ws, -1));
    signal(); // room for a claim
  }

  /**
   * The commit that stored them leased is done (on the group commit's thread, before it starts the
   * next transaction): to be sent at once. Their workspaces' places are held since {@link #lease};
   * the instance's are counted from now on ({@link #handedCount}).
   */
  @Override
  public void handOver(List<WebhookOutbox.Handed> deliveries) {
    if (deliveries.isEmpty()) {
      return;
    }
    if (closing) { // committed as the dispatcher stopped: given back (else their leases expire); one statement, at the stop only
      deliveries.forEach(d -> hold(d.claimed().workspaceId(), -1));
      try {
        service.jdbi().useHandle(h -> DispatchQueries.release(h.getConnection(),
            deliveries.stream().map(d -> d.claimed().id()).toList(), handedToken));
      } catch (RuntimeException e) {
        LOG.warn("could not give back {} webhook deliveries not attempted: {}", deliveries.size(), e.getMessage());
      }
      return;
    }
    deliveries.forEach(d -> leases.hold(Leases.DELIVERIES, d.claimed().id(), d.owner())); // their places are held since lease
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
      Lane lane = lane(h.endpoint().id(), h.claimed().workspaceId());
      Attempt attempt = new Attempt(h.claimed(), h.owner(), h.endpoint());
      boolean sendNow = lane.startOrWait(attempt, settings.maxInFlightPerEndpoint());
      hold(h.claimed().workspaceId(), -1); // held in its lane from now on
      if (sendNow) {
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
      headers.put("webhook-signature", Signatures.header(secrets.live(endpoint, started), c.eventId(), timestamp, body));
      call = new OutboundHttp.Call("POST", URI.create(endpoint.url()), headers, body, settings.timeout(),
          DeliveryOutcomes.MAX_RESPONSE_EXCERPT);
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
    DeliveryOutcomes.Outcome outcome = outcomes.of(c, token, endpoint, started, status, answer, error, now);
    service.metrics().webhookDelivery(outcome.outcome(), outcome.attempt() != null, Duration.between(started, now));
    bytesInFlight.addAndGet(-c.weight());
    outcomes.add(outcome);
    signal(); // the next round hands it to the group commit
  }

  /** Outcomes were recorded (or given up on: their leases expire): the instance has their places again. */
  private void release(int n) {
    inFlight.addAndGet(-n);
    signal();
  }

  /**
   * Stops claiming; the deliveries still waiting for a place are given back, and attempts in flight
   * get up to shutdown.grace_seconds to be recorded (the rest are handed back with the instance's
   * other work as it stops).
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
        leases.release(Leases.DELIVERIES, a.c().id(), a.token());
        unsent.computeIfAbsent(a.token(), k -> new ArrayList<>()).add(a.c().id());
        bytesInFlight.addAndGet(-a.c().weight());
      }));
      int n = unsent.values().stream().mapToInt(List::size).sum();
      // Handed over and not taken up (not counted in flight): given back with the others.
      int notTaken = 0;
      for (WebhookOutbox.Handed h = handed.poll(); h != null; h = handed.poll()) {
        leases.release(Leases.DELIVERIES, h.claimed().id(), h.owner());
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
      long until = System.nanoTime() + settings.shutdownGrace().toNanos();
      while (inFlight.get() > 0 && System.nanoTime() < until) {
        outcomes.recordWaiting();
        Thread.sleep(20);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    outbound.close();
  }
}
