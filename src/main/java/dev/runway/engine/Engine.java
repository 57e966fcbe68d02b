package dev.runway.engine;

import dev.runway.core.FairShares;
import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.db.Slice;
import dev.runway.db.Tx;
import dev.runway.instance.Leases;
import dev.runway.outbound.OutboundHttp;
import dev.runway.run.CallPlaces;
import dev.runway.run.CrmWriter;
import dev.runway.run.Run;
import dev.runway.run.RunDao;
import dev.runway.run.RunMachine;
import dev.runway.run.RunMachines;
import dev.runway.run.SignalUrls;
import dev.runway.secret.SecretSource;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs workflow steps. Its state lives in the database: a dispatcher claims due runs with a lease
 * (a conditional UPDATE, so several instances on one database never take the same run), and their
 * calls go out without holding a thread; what comes back is taken up by a few worker threads. The
 * lease is this instance's ({@link Leases}): renewed by its heartbeat while the call is out, however
 * long; a crashed instance's leases lapse (or are handed back at once when its liveness lock shows
 * it gone) and other instances take over. A run that a commit of this process stores standing at a
 * due call comes to the engine in that commit, with no claim, when the engine has a place for it
 * (see {@link #places}).
 *
 * <p>Calls in flight are bounded per instance ({@code engine.max_calls_in_flight}) and per workspace
 * ({@code engine.max_calls_in_flight_per_workspace}): a workspace whose tools hang holds at most its
 * share, and the runs of other workspaces are claimed past it (a workspace at its share is left out
 * of the claim's query, so its many due runs cannot crowd the others out of the batch either). The
 * share is fair ({@link FairShares}): with others holding calls a workspace holds at most about
 * max_calls_in_flight / (holders + 1), so that many workspaces cannot take every place either.
 */
public final class Engine implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Engine.class);
  /** Due runs read and moved per round. */
  private static final int BATCH = 256;
  /**
   * Most stored JSON of the runs read per round (at least one run): 256 runs near their 512 KB
   * bound would be 128 MB, the whole heap, before any is parsed.
   */
  static final long BATCH_BYTES = 8L * 1024 * 1024;
  /** Where {@link #backlog} stops counting: a count costs a walk of the due runs' index. */
  public static final int BACKLOG_COUNT_LIMIT = 100_000;

  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final EngineSettings settings;
  private final OutboundHttp outbound;
  private final Leases leases;
  private final String owner;
  /** The runs this engine holds (their calls out), to give up at its stop. */
  private final Set<Leases.Hold> held = ConcurrentHashMap.newKeySet();
  private final Set<String> heldRuns = ConcurrentHashMap.newKeySet();
  private final List<AutoCloseable> closeAfter = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final StepRunner steps;
  private final AgentRunner agents;
  private final ModelClient model;
  private final ExecutorService workers;
  private final Thread dispatcher;
  private final Semaphore wakeUp = new Semaphore(0);
  private final AtomicInteger calls = new AtomicInteger();
  /** Runs handed to this engine by the commits that stored them (see {@link #places}). */
  private final AtomicLong handedOver = new AtomicLong();
  private final ConcurrentHashMap<String, Integer> callsByWorkspace = new ConcurrentHashMap<>();
  private final CallMemory memory;
  private final RunMachines machines;
  private final CallPlaces places = this::takePlace;
  private volatile boolean running = true;

  private Engine(Jdbi jdbi, GroupCommitter committer, EngineSettings settings, SecretSource secrets, CrmWriter crm,
      OutboundHttp outbound, ModelSettings modelSettings, Leases leases, SignalUrls signalUrls) {
    this.jdbi = jdbi;
    this.leases = leases;
    this.owner = leases.instanceId();
    this.committer = committer;
    this.settings = settings;
    this.outbound = outbound;
    this.memory = new CallMemory(settings.maxCallBytesInFlight(), settings.maxCallBytesInFlightPerWorkspace());
    AtomicInteger n = new AtomicInteger();
    this.workers = Executors.newFixedThreadPool(settings.workers(), r -> {
      Thread t = new Thread(r, "runway-engine-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    this.machines = new RunMachines(settings.approvalTimeoutSeconds(), modelSettings.allowed(), this::wake, crm,
        places, signalUrls, modelSettings.threadWindow());
    this.steps = new StepRunner(committer, settings,
        new HttpStepCaller(outbound, secrets, settings.maxResponseBytes()), machines, leases, workers);
    // One trusted endpoint serves every model call: it is bounded by the calls in flight, not per host.
    this.model = ModelClient.of(modelSettings, settings.maxCallsInFlight(), settings.maxCallsInFlight());
    this.agents = new AgentRunner(jdbi, committer, settings, modelSettings, model,
        new AgentToolCaller(outbound, secrets, settings.maxResponseBytes()),
        new McpClient(outbound, secrets, settings.maxResponseBytes()), machines, leases, workers);
    this.dispatcher = new Thread(this::dispatch, "runway-engine-dispatcher");
    this.dispatcher.setDaemon(true);
  }

  /**
   * Starts the engine, calling tools through an outbound client made from the settings; crm steps
   * write their records through {@code crm}.
   */
  public static Engine start(Jdbi jdbi, GroupCommitter committer, EngineSettings settings, ModelSettings model,
      SecretSource secrets, CrmWriter crm, Leases leases) {
    return start(jdbi, committer, settings, model, secrets, crm, settings.outbound(null), leases, SignalUrls.NONE);
  }

  /** As above; templates see runs' signal URLs as {@code signalUrls} makes them. */
  public static Engine start(Jdbi jdbi, GroupCommitter committer, EngineSettings settings, ModelSettings model,
      SecretSource secrets, CrmWriter crm, Leases leases, SignalUrls signalUrls) {
    return start(jdbi, committer, settings, model, secrets, crm, settings.outbound(null), leases, signalUrls);
  }

  /**
   * Starts the engine; it closes {@code outbound} when it closes. Its leases are this instance's
   * {@code leases}, renewed by the instance's heartbeat.
   */
  public static Engine start(Jdbi jdbi, GroupCommitter committer, EngineSettings settings, ModelSettings model,
      SecretSource secrets, CrmWriter crm, OutboundHttp outbound, Leases leases) {
    return start(jdbi, committer, settings, model, secrets, crm, outbound, leases, SignalUrls.NONE);
  }

  /** As above, with the signal URLs templates see. */
  public static Engine start(Jdbi jdbi, GroupCommitter committer, EngineSettings settings, ModelSettings model,
      SecretSource secrets, CrmWriter crm, OutboundHttp outbound, Leases leases, SignalUrls signalUrls) {
    Engine engine = new Engine(jdbi, committer, settings, secrets, crm, outbound, model, leases, signalUrls);
    engine.dispatcher.start();
    LOG.info("engine {} started: {} calls in flight at most, {} per workspace", engine.owner,
        settings.maxCallsInFlight(), settings.maxCallsInFlightPerWorkspace());
    return engine;
  }

  /** Closes {@code other} after this engine (an embedding program's heartbeat, say); returns this engine. */
  public Engine closing(AutoCloseable other) {
    closeAfter.add(other);
    return this;
  }

  /** Tells the engine a run is due now, so it looks before the next poll. */
  public void wake() {
    wakeUp.release();
  }

  private void dispatch() {
    while (running) {
      try {
        // Not live (no beat recorded lately): its leases may lapse under it, so it takes nothing new.
        if (!leases.live() || !claimAndSubmit()) {
          wakeUp.tryAcquire(settings.pollInterval().toMillis(), TimeUnit.MILLISECONDS);
          wakeUp.drainPermits();
        }
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        LOG.warn("engine could not claim runs: {}", e.getMessage());
        sleepQuietly();
      }
    }
  }

  /** One due run as this round would save it, how (with the moves' events and messages), and whether its call is then due. */
  record Claim(Run save, Function<Tx, Boolean> write, boolean call) {
    static Claim of(RunMachine m, Run save, boolean call) {
      return new Claim(save, tx -> m.saveIn(tx, save), call);
    }
  }

  /**
   * Takes the due runs that no live lease holds and saves each one's moves that need no waiting,
   * each as a write of its own in one group commit (a run the database refuses fails alone); a run
   * that stands at an http call is saved with this instance's lease and its call goes out. Every
   * save is conditional on the run's version, so of two instances (or an engine and a caller) only
   * one move stands. Returns true when more may be due at once.
   */
  private boolean claimAndSubmit() {
    Instant now = Time.now();
    int free = settings.maxCallsInFlight() - calls.get();
    // A workspace past its fair share of the calls (see FairShares) or of their memory is left out.
    Map<String, Integer> holding = Map.copyOf(callsByWorkspace);
    Set<String> atTheirShare = new HashSet<>(FairShares.atTheirShare(holding, settings.maxCallsInFlight(),
        settings.maxCallsInFlightPerWorkspace()));
    holding.keySet().stream().filter(memory::full).forEach(atTheirShare::add);
    // Enough rows for the free places and a batch of moves without calls; not more, since every row
    // read is parsed, and most wake-ups come from a call that just ended.
    int limit = Math.min(BATCH, Math.max(32, free * 4));
    Slice<Run> batch = jdbi.withExtension(RunDao.class, dao -> dao.dueRuns(now, atTheirShare, limit, BATCH_BYTES));
    List<Run> due = batch.rows();
    if (due.isEmpty()) {
      return false;
    }
    steps.newRound();
    agents.newRound();
    List<Claim> claims = new ArrayList<>();
    List<CallMemory.Reservation> rooms = new ArrayList<>();
    List<String> lapsedOwners = new ArrayList<>();
    for (Run run : due) {
      if (heldRuns.contains(run.id())) {
        continue; // its lease lapsed (a stall) but its call is still out here: no second call beside it
      }
      Claim claim = claim(run, now);
      CallMemory.Reservation room = null;
      if (claim.call()) {
        room = takeCall(run.workspaceId(), runnerOf(run).weight(claim.save()));
        if (room == null) {
          continue; // no place or no memory for its call now: the run stays due for a later round
        }
      }
      claims.add(claim);
      rooms.add(room);
      // Held by another instance whose lease lapsed (it stopped beating: dead or paused), or by none.
      lapsedOwners.add(run.leaseOwner() != null && !run.leaseOwner().equals(owner) ? run.leaseOwner() : null);
    }
    List<CompletableFuture<Boolean>> saves = new ArrayList<>();
    for (Claim claim : claims) {
      saves.add(save(claim));
    }
    for (int i = 0; i < claims.size(); i++) {
      boolean won = won(saves.get(i), claims.get(i));
      if (won && lapsedOwners.get(i) != null) {
        LOG.info("run {}: the lease of instance {} lapsed; took the run over", claims.get(i).save().id(),
            lapsedOwners.get(i));
        leases.tookOver(Leases.RUNS, 1);
      }
      if (won && claims.get(i).call()) {
        call(claims.get(i).save(), rooms.get(i));
      } else if (rooms.get(i) != null) {
        giveBack(claims.get(i).save().workspaceId(), rooms.get(i));
      }
    }
    // As many read as asked for, and something moved: more may be due at once.
    return batch.more() && !claims.isEmpty();
  }

  /** The run's moves as of now; a run that cannot even be read fails, rather than stay due for ever. */
  private Claim claim(Run run, Instant now) {
    try {
      return runnerOf(run).claim(run, now);
    } catch (RuntimeException e) {
      LOG.error("run {} cannot be read or moved; it fails with internal_error", run.id(), e);
      RunMachine.Moved failed = RunMachine.failedUnreadable(run, now);
      return new Claim(failed.run(), tx -> machines.saveEnded(tx, failed), false);
    }
  }

  private CompletableFuture<Boolean> save(Claim claim) {
    try {
      return committer.submit(claim.save().workspaceId(), claim.write());
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e); // too many writes waiting: the run stays due
    }
  }

  private static boolean won(CompletableFuture<Boolean> save, Claim claim) {
    try {
      return save.join();
    } catch (RuntimeException e) {
      LOG.warn("could not save run {}: {}", claim.save().id(), e.getMessage());
      return false;
    }
  }

  /**
   * A place for a call of the workspace, with {@code weight} of memory, if the engine has one now:
   * within its calls in flight, the workspace's fair share of them (see {@link FairShares}) and of
   * the memory. The place is counted from now on (claims and the commits that hand runs over, see
   * {@link #places}, decide on one count), until the call ends ({@link #call}) or it is given back.
   */
  private CallMemory.Reservation takeCall(String workspaceId, long weight) {
    synchronized (callsByWorkspace) {
      if (calls.get() >= settings.maxCallsInFlight() || !FairShares.mayTakeAnother(settings.maxCallsInFlight(),
          callsByWorkspace.size(), callsByWorkspace.getOrDefault(workspaceId, 0), settings.maxCallsInFlightPerWorkspace())) {
        return null;
      }
      CallMemory.Reservation room = memory.reserve(workspaceId, weight);
      if (room != null) {
        calls.incrementAndGet();
        callsByWorkspace.merge(workspaceId, 1, Integer::sum);
      }
      return room;
    }
  }

  /** A place taken by {@link #takeCall} whose call will not be made: free again. */
  private void giveBack(String workspaceId, CallMemory.Reservation room) {
    room.release();
    callEnded(workspaceId);
  }

  /**
   * Where the commits of this process hand this engine the runs they store standing at a due call
   * (see {@link CallPlaces}): the services' run starts and child runs, and this engine's own.
   */
  public CallPlaces places() {
    return places;
  }

  /** A place for the call of a new run stored in a commit of this process (see {@link CallPlaces}). */
  private CallPlaces.Place takePlace(Run run) {
    if (!running || run.isAgent() || !leases.live()) {
      return null;
    }
    CallMemory.Reservation room = takeCall(run.workspaceId(), steps.weight(run));
    if (room == null) {
      return null;
    }
    Instant until = leases.until(Time.now());
    return new CallPlaces.Place() {
      @Override
      public String owner() {
        return owner;
      }

      @Override
      public Instant until() {
        return until;
      }

      @Override
      public void start(Run stored) {
        if (running) {
          handedOver.incrementAndGet();
          call(stored, room);
        } else {
          giveBack(); // stopping: the run is handed back with the instance's other work
        }
      }

      @Override
      public void giveBack() {
        Engine.this.giveBack(run.workspaceId(), room);
      }
    };
  }

  /**
   * Sends the run's call, for which this instance took a place ({@link #takeCall}); the call holds it
   * (its workspace's too) and its room in memory until the run waits or ends.
   */
  private void call(Run run, CallMemory.Reservation room) {
    Leases.Hold hold = leases.hold(Leases.RUNS, run.id(), owner);
    held.add(hold);
    heldRuns.add(run.id());
    runnerOf(run).call(run, room, hold).whenComplete((done, failure) -> {
      room.release();
      leases.release(hold);
      held.remove(hold);
      heldRuns.remove(run.id());
      if (failure != null) {
        // No longer renewed, the lease lapses and the run is taken up again then.
        LOG.warn("engine failed on run {}: {}", run.id(), failure.toString());
      }
      callEnded(run.workspaceId());
    });
  }

  /** A call of the workspace ended (or its place was given back): its place is free. */
  private void callEnded(String workspaceId) {
    callsByWorkspace.computeIfPresent(workspaceId, (ws, n) -> n <= 1 ? null : n - 1);
    calls.decrementAndGet();
    wakeUp.release();
  }

  private RunAdvancer runnerOf(Run run) {
    return run.isAgent() ? agents : steps;
  }

  /** Calls in flight now (for tests and operators). */
  public int callsInFlight() {
    return calls.get();
  }

  /** Runs whose calls this engine took from the commits that stored them, with no claim (for tests and operators). */
  public long handedOver() {
    return handedOver.get();
  }

  /** The memory the calls in flight hold now, as reserved (for tests and operators). */
  public long callBytesInFlight() {
    return memory.used();
  }

  /**
   * Runs due now that no lease holds, of every instance on the database: those waiting for an
   * engine to take them, counted up to {@link #BACKLOG_COUNT_LIMIT}. Reads the database.
   */
  public int backlog() {
    return jdbi.withExtension(RunDao.class, dao -> dao.countDue(Time.now(), BACKLOG_COUNT_LIMIT));
  }

  private void sleepQuietly() {
    try {
      Thread.sleep(settings.pollInterval().toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Stops claiming, lets the calls in flight finish for up to shutdown.grace_seconds (their answers
   * are saved), then stops. The runs of calls still open then are no longer held: the instance's
   * heartbeat hands them back as it stops (or their leases lapse), and another instance makes those
   * calls again.
   */
  @Override
  public void close() {
    running = false;
    steps.stop();
    agents.stop();
    wakeUp.release();
    try {
      // The dispatcher first: once it has stopped, no call starts any more.
      dispatcher.join(5_000);
      long deadline = System.nanoTime() + settings.shutdownGrace().toNanos();
      while (calls.get() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (!held.isEmpty()) {
      LOG.info("engine stops with {} calls still out; their runs are given back", held.size());
      held.forEach(leases::release);
    }
    outbound.close();
    model.close();
    workers.shutdown();
    try {
      if (!workers.awaitTermination(5, TimeUnit.SECONDS)) {
        workers.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      workers.shutdownNow();
    }
    for (AutoCloseable other : closeAfter) {
      try {
        other.close();
      } catch (Exception e) {
        LOG.warn("could not close {}: {}", other, e.getMessage());
      }
    }
  }
}
