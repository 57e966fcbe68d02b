#!/usr/bin/env python3
"""Webhook delivery latency and throughput on the packaged jar, to a receiver on the same machine.

Each database gets a Runway of its own, started as bench/crm.py starts it (a fresh H2 file database
in a temp dir, or a fresh PostgreSQL database made with psql and dropped afterwards;
config/jvm.options, MALLOC_ARENA_MAX=2, request log off, per-key rate limit off), with
engine.http.allow_private_networks=true (the receiver is on 127.0.0.1) and
http.max_in_flight_per_key raised as bench/run.sh does (one key sends all the load). Workflow
`hello` (config/workflows/hello.json: no steps, so a run succeeds as soon as the engine takes it)
is PUT into the key's workspace, and one webhook endpoint subscribed to `*` points at the
receiver: every run then makes two deliveries, run.started and run.succeeded (one, run.succeeded,
with --succeeded-only).

The receiver (bench/WebhookReceiver.java, run with single-file source launch) answers 204 at once,
checks every signature, and counts deliveries, repeated webhook-ids and bad signatures. Its own
ceiling is measured first: wrk posting a delivery-sized body to it at 16 connections
(webhooks.max_in_flight_per_endpoint).

After a warm-up (start-run load with the endpoint enabled, its backlog drained, then without),
each round measures:

  latency    --rate run starts a second (10) for --latency-seconds (15), one at a time: from just
             before POST /v1/workflows/hello/runs is sent to the receiver getting that run's
             run.succeeded delivery (both clocks are this machine's). Target: median <= 50 ms.
  off        start-run throughput with the endpoint disabled (no enabled endpoint: nothing is
             delivered): wrk -t2 -c--connections (32) -d--seconds (10) with bench/post.lua.
  on         the same with the endpoint enabled, and meanwhile the deliveries the receiver got per
             second; then the wait until the backlog is drained (every run's two deliveries in,
             and GET /v1/webhook_endpoints/{id}/deliveries?status=pending empty), bounded by
             --drain-timeout (120 s): the deliveries pending when the load stopped, the time to
             drain them and the rate they came in meanwhile (deliveries alone, no run starts).
             Targets: >= 2,000 deliveries/s during the load, while start-run keeps >= 70% of its
             `off` throughput.
  steady     the same two targets read at a steady 2,000 deliveries/s and a little more:
             --steady-rate (1,025) run starts a second, 2,050 deliveries (paced at exactly 1,000,
             the deliveries counted in a phase's window came to 1,998-2,001 a second), paced
             (start k due k / rate s after the first) on 8 connections of this script, in a second workspace, `hooks`, with its own endpoint on `*` at the same
             receiver; beside them wrk's start-run load as in `off`, in workspace bench, whose
             endpoint stays disabled. With hooks' endpoint disabled (steady off) and enabled
             (steady on), three phases a round, off-on-off or on-off-on, the figure of the kind
             run twice the mean of the two: the database grows under the load and each phase runs
             slower than the one before, by up to a fifth. This narrows that drift's effect but
             does not cancel it (the drift is steepest after the warm-up), so use an even number
             of rounds. Judged: wrk's start-run/s on over off (>= 0.70), and the deliveries/s
             received during the load (>= 2,000). In `on` every run wrk starts makes
             deliveries too, so the writer is saturated and the deliveries grow with it; here the
             delivery load is the target's and the start-run load is what is left.

Rounds alternate the order of `off` and `on`, so a drift of the machine's speed weighs on both.
With each phase: CPU used meanwhile, in cores (1.0 = one core busy all along), by the server, the
receiver, the load generator (wrk, or this script) and the whole machine. Everything shares the
machine's cores. With each steady phase also the group commit, from GET /metrics: commits a second,
writes per commit, ms per commit, the share of the time spent committing (busy), and the MB a
second the server wrote to its files (H2's chunks; wchar in /proc). Prints one table per database:
each round's figures and their median.

usage: python3 bench/webhooks.py [--db h2|postgresql|all] [--rounds N] [--seconds S] [--connections N]
                                 [--rate R] [--latency-seconds S] [--warmup S] [--drain-timeout S]
                                 [--steady-rate R] [--steady-only] [--succeeded-only]
  --steady-rate: the paced run starts a second of the steady phases; 0 leaves those phases out.
  --steady-only: only the steady phases (no latency phase, no `off` and `on`).
  --succeeded-only: the endpoint asks for run.succeeded alone, one delivery a run instead of two.
  RUNWAY_JAR, RUNWAY_JAVA_OPTS, BENCH_PG_*: as bench/crm.py. Needs wrk (Debian: apt-get install wrk).
Exit status 1 when a phase could not run (its reason on stderr); a target not met is printed as
MISSED; a backlog not drained within --drain-timeout is reported as such.
"""
import argparse, http.client, json, os, re, resource, shutil, signal, statistics, subprocess, sys, tempfile
import threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crm  # noqa: E402  (the same Runway, PostgreSQL and CPU helpers)
from crm import Fail  # noqa: E402

ROOT = crm.ROOT
BENCH = os.path.join(ROOT, "bench")
LATENCY_MS = 50
DELIVERIES_PER_S = 2000
KEEP_RATIO = 0.70
SUCCEEDED_ONLY = False  # --succeeded-only
RECEIVER_CONNECTIONS = 16  # webhooks.max_in_flight_per_endpoint's default
HOOKS = "hooks"  # the workspace of the steady phases' paced run starts and their endpoint


# ---------------------------------------------------------------- the receiver

class Receiver:
    """bench/WebhookReceiver.java in a JVM of its own on 127.0.0.1, any free port."""

    def __init__(self, work):
        self.log_path = os.path.join(work, "receiver.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(["java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC",
                                      os.path.join(BENCH, "WebhookReceiver.java"), "0", "2"],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline().strip()  # the port, once it listens
        if not line.isdigit():
            self.stop()
            raise Fail("the receiver did not start: %s" % self.log_tail())
        self.port = int(line)
        self.url = "http://127.0.0.1:%d/hook" % self.port
        self.conn = None

    def log_tail(self):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()[-2000:]

    def call(self, method, path, body=None):
        for attempt in (1, 2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                self.conn.request(method, path, body)
                resp = self.conn.getresponse()
                return resp.read().decode()
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt == 2:
                    raise Fail("the receiver does not answer %s %s%s" % (
                        method, path, "" if self.proc.poll() is None else ": it exited\n" + self.log_tail()))

    def stats(self):
        return json.loads(self.call("GET", "/_stats"))

    def reset(self):
        self.call("POST", "/_reset")

    def use_secret(self, secret):
        self.call("POST", "/_secret", secret)

    def succeeded(self):
        """{run id: arrival in epoch microseconds} of the run.succeeded deliveries since the last ask."""
        out = {}
        for line in self.call("GET", "/_succeeded").splitlines():
            run, micros = line.split()
            out.setdefault(run, int(micros))
        return out

    def cpu_seconds(self):
        return proc_cpu(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def proc_cpu(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


RECEIVER_LUA = r'''-- A delivery-sized POST to the receiver, a new webhook-id each time (its signature does not check).
wrk.method = "POST"
wrk.body = '{"id":"evt_ceiling","type":"run.started","created_at":"2026-11-24T02:46:35.285Z","data":{"id":"run_01ceiling","object":"run","workflow_id":"hello","project":"bench","status":"running","inputs":{},"steps":[],"created_at":"2026-11-24T02:46:35.285Z","updated_at":"2026-11-24T02:46:35.285Z"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["webhook-signature"] = "v1,bm90IGEgc2lnbmF0dXJl"
local n = 0
request = function()
  n = n + 1
  wrk.headers["webhook-id"] = "evt_" .. tostring(n) .. "_" .. tostring(math.random(1000000000))
  wrk.headers["webhook-timestamp"] = tostring(os.time())
  return wrk.format()
end
'''


def receiver_ceiling(receiver, work, seconds=5):
    """Requests/s the receiver answers from wrk at RECEIVER_CONNECTIONS connections, with a CPU report."""
    script = os.path.join(work, "receiver.lua")
    with open(script, "w") as f:
        f.write(RECEIVER_LUA)
    receiver.use_secret("whsec_" + "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")  # signatures checked, as in the run
    wrk(receiver.url, 2, RECEIVER_CONNECTIONS, script, threads=1)  # the receiver's JIT
    cpu = Cpu(receiver=receiver)
    out = wrk(receiver.url, seconds, RECEIVER_CONNECTIONS, script, threads=1)
    report = cpu.since()
    receiver.reset()
    return out, report


# ---------------------------------------------------------------- load

def wrk(url, seconds, connections, script, threads=2):
    """Runs wrk; returns {requests, ok, rps, p50, p99 (ms), seconds, client_cpu}."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(["wrk", "-t%d" % threads, "-c%d" % connections, "-d%ds" % seconds, "--latency",
                             "-s", script, url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise Fail("wrk failed (exit %d): %s" % (proc.returncode, out.strip()[-500:]))
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not m or not rps:
        raise Fail("cannot read wrk's output: %s" % out.strip()[-500:])
    requests = int(m.group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = int(non2xx.group(1)) if non2xx else 0
    return {"requests": requests, "ok": requests - errors, "errors": errors, "rps": float(rps.group(1)),
            "p50": wrk_ms(out, "50%"), "p99": wrk_ms(out, "99%"), "wall": wall,
            "client_cpu": (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / wall}


def wrk_ms(out, label):
    m = re.search(r"^\s*%s\s+([\d.]+)(us|ms|s)\s*$" % re.escape(label), out, re.M)
    if not m:
        return float("nan")
    return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]


class Cpu:
    """CPU used from its creation to since(), in cores: server, receiver, client (this script) and machine.
    The client's share of wrk is taken from wrk's own figures (see wrk())."""

    def __init__(self, runway=None, receiver=None):
        self.runway, self.receiver = runway, receiver
        self.wall, self.client = time.perf_counter(), time.process_time()
        self.server = runway.cpu_seconds() if runway else None
        self.recv = receiver.cpu_seconds() if receiver else None
        self.machine = crm.machine_ticks()

    def since(self):
        wall = time.perf_counter() - self.wall
        out = {"client": (time.process_time() - self.client) / wall}
        if self.runway and self.server is not None:
            now = self.runway.cpu_seconds()
            out["server"] = (now - self.server) / wall if now is not None else None
        if self.receiver and self.recv is not None:
            now = self.receiver.cpu_seconds()
            out["receiver"] = (now - self.recv) / wall if now is not None else None
        machine = crm.machine_ticks()
        if machine and self.machine and machine[1] > self.machine[1]:
            out["machine"] = (machine[0] - self.machine[0]) / (machine[1] - self.machine[1]) * (os.cpu_count() or 1)
        return out


class Commits:
    """The group commit from its creation to since(), read from GET /metrics (served to this machine):
    commits a second, writes per commit, ms per commit (from its begin to its commit), the share of
    the time the writer was committing, and the MB a second the server wrote to files (wchar in /proc:
    H2's chunks, before the operating system writes them to the disk; on PostgreSQL the database's
    own processes write them, and this counts only the server's own files)."""

    NAMES = ("runway_commit_seconds_count", "runway_commit_seconds_sum", "runway_commit_batch_writes_sum")

    def __init__(self, runway):
        self.runway = runway
        self.wall, self.start = time.perf_counter(), self.read()

    def written(self):
        try:
            with open("/proc/%d/io" % self.runway.proc.pid) as f:
                return next(int(line.split()[1]) for line in f if line.startswith("wchar:"))
        except (OSError, StopIteration, ValueError):
            return None

    def read(self):
        conn = self.runway.connect()
        try:
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
        finally:
            conn.close()
        out = {}
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name in self.NAMES:
                out[name] = float(value)
        out["wchar"] = self.written()
        return None if None in out.values() or len(out) <= len(self.NAMES) else out

    def since(self):
        wall, end = time.perf_counter() - self.wall, self.read()
        if not self.start or not end:
            return None
        d = {k: end[k] - self.start[k] for k in self.NAMES}
        n = d["runway_commit_seconds_count"]
        if not n:
            return None
        return {"per_s": n / wall, "writes": d["runway_commit_batch_writes_sum"] / n,
                "ms": d["runway_commit_seconds_sum"] / n * 1000, "busy": d["runway_commit_seconds_sum"] / wall,
                "mb_s": (end["wchar"] - self.start["wchar"]) / wall / 1e6}


def commit_text(c):
    return "-" if c is None else "%.0f/%.1f/%.2f/%.2f/%.1f" % (c["per_s"], c["writes"], c["ms"], c["busy"], c["mb_s"])


def cpu_text(c, client=None):
    parts = []
    for name in ("server", "receiver"):
        if c.get(name) is not None:
            parts.append("%s %.2f" % (name, c[name]))
    parts.append("client %.2f" % (client if client is not None else c["client"]))
    if c.get("machine") is not None:
        parts.append("machine %.2f" % c["machine"])
    return ", ".join(parts)


# ---------------------------------------------------------------- Runway's API

class Api:
    def __init__(self, runway, key=None):
        self.runway, self.key = runway, key
        self.conn = None

    def call(self, method, path, body=None, expect=(200, 201, 202)):
        data = None if body is None else json.dumps(body).encode()
        for attempt in (1, 2):
            try:
                if self.conn is None:
                    self.conn = self.runway.connect()
                self.conn.request(method, path, data, self.runway.headers(data is not None, self.key))
                resp = self.conn.getresponse()
                raw = resp.read()
                if resp.will_close:
                    self.conn.close()
                    self.conn = None
                break
            except (OSError, http.client.HTTPException) as e:
                self.conn = None
                if attempt == 2:
                    raise Fail("%s %s failed: %s%s" % (method, path, e, self.runway.died()))
        answer = crm.decoded(raw)
        if resp.status not in expect:
            raise Fail("%s %s answered %d: %s" % (method, path, resp.status, crm.short(answer)))
        return answer


# ---------------------------------------------------------------- phases

def latency_phase(api, receiver, rate, seconds, timeout=20.0):
    """Paced run starts, one at a time; returns (latencies in ms of start -> run.succeeded delivered, missing)."""
    receiver.succeeded()  # forget earlier arrivals
    sent = {}
    n = int(rate * seconds)
    t0 = time.perf_counter()
    for i in range(n):
        pause = t0 + i / rate - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        start = time.time_ns() // 1000
        run = api.call("POST", "/v1/workflows/hello/runs", {"project": "bench"})
        sent[run["id"]] = start
    arrived = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        arrived.update(receiver.succeeded())
        if all(r in arrived for r in sent):
            break
        time.sleep(0.1)
    ms = [(arrived[r] - t) / 1000 for r, t in sent.items() if r in arrived]
    return ms, len(sent) - len(ms)


class PacedStarts:
    """Run starts of workflow hello at `rate` a second from start() to stop(), on `connections` kept-alive
    connections with `key`: start k is due k / rate seconds after start() and goes out on whichever
    connection is free then."""

    def __init__(self, runway, key, rate, connections=8):
        self.runway, self.key, self.rate = runway, key, rate
        self.conns = [runway.connect() for _ in range(connections)]
        self.stopping = threading.Event()
        self.next = iter(range(10 ** 9)).__next__  # atomic under the GIL
        self.ok, self.failed, self.errors = 0, 0, []
        self.lock = threading.Lock()
        self.threads = []

    def start(self):
        self.t0 = time.perf_counter()
        self.threads = [threading.Thread(target=self.work, args=(c,), daemon=True) for c in self.conns]
        for t in self.threads:
            t.start()

    def work(self, conn):
        body = json.dumps({"project": "bench"}).encode()
        headers = self.runway.headers(True, self.key)
        ok = failed = 0
        try:
            while not self.stopping.is_set():
                pause = self.t0 + self.next() / self.rate - time.perf_counter()
                if pause > 0 and self.stopping.wait(pause):
                    break
                conn.request("POST", "/v1/workflows/hello/runs", body, headers)
                resp = conn.getresponse()
                resp.read()
                if resp.status == 201 or resp.status == 200:
                    ok += 1
                else:
                    failed += 1
        except (OSError, http.client.HTTPException) as e:
            self.errors.append("%s: %s%s" % (type(e).__name__, e, self.runway.died()))
        finally:
            with self.lock:
                self.ok += ok
                self.failed += failed
            conn.close()

    def stop(self):
        """Stops; returns the run starts answered 2xx a second."""
        self.stopping.set()
        for t in self.threads:
            t.join()
        if self.errors:
            raise Fail("a paced run start failed: " + self.errors[0])
        return self.ok / (time.perf_counter() - self.t0)


def set_enabled(api, endpoint, enabled):
    api.call("PATCH", "/v1/webhook_endpoints/%s" % endpoint, {"enabled": enabled})


def pending_any(api, endpoint):
    page = api.call("GET", "/v1/webhook_endpoints/%s/deliveries?status=pending&limit=1" % endpoint)
    return bool(page.get("data"))


def drained(api, receiver, endpoint, runs, timeout):
    """Waits until every run's deliveries are in and none is pending; (seconds, stats) or (None, stats)."""
    t0 = time.perf_counter()
    while True:
        s = receiver.stats()
        types = s["types"]
        started, succeeded = types.get("run.started", 0), types.get("run.succeeded", 0)
        if SUCCEEDED_ONLY:
            started = succeeded
        if started >= runs and succeeded >= started and not pending_any(api, endpoint):
            return time.perf_counter() - t0, s
        if time.perf_counter() - t0 > timeout:
            return None, s
        time.sleep(0.1 if started >= runs and succeeded >= started else 0.05)


def throughput_off(ctx):
    set_enabled(ctx.api, ctx.endpoint, False)
    cpu = Cpu(ctx.runway, ctx.receiver)
    out = wrk(ctx.start_url, ctx.args.seconds, ctx.args.connections, ctx.post_lua)
    out["cpu"] = cpu.since()
    return out


def throughput_on(ctx):
    set_enabled(ctx.api, ctx.endpoint, True)
    ctx.receiver.reset()
    before = ctx.receiver.stats()["distinct"]
    cpu = Cpu(ctx.runway, ctx.receiver)
    out = wrk(ctx.start_url, ctx.args.seconds, ctx.args.connections, ctx.post_lua)
    out["cpu"] = cpu.since()
    at_end = ctx.receiver.stats()["distinct"]
    out["during"] = (at_end - before) / out["wall"]
    drain_cpu = Cpu(ctx.runway, ctx.receiver)
    secs, s = drained(ctx.api, ctx.receiver, ctx.endpoint, out["ok"], ctx.args.drain_timeout)
    out["drain_cpu"] = drain_cpu.since()
    out["drain_s"] = secs
    out["total"] = s["distinct"] - before
    out["pending_at_end"] = s["distinct"] - at_end if secs is not None else None
    out["drain_rate"] = (s["distinct"] - at_end) / secs if secs else None
    out["repeats"], out["bad_signatures"] = s["repeats"], s["bad_signatures"]
    if secs is None:
        out["left"] = (1 if SUCCEEDED_ONLY else 2) * out["ok"] - (s["distinct"] - before)
    return out


def merged(phases):
    """One steady phase's figures from one or two runs of it: the means of the rates and CPU, the
    largest backlog and drain time, the sums of the repeats and bad signatures."""
    if len(phases) == 1:
        return phases[0]
    out = dict(phases[0])
    for k in ("rps", "paced", "during", "client_cpu"):
        if k in out:
            out[k] = statistics.mean(p[k] for p in phases)
    out["cpu"] = {k: statistics.mean(p["cpu"].get(k) or 0 for p in phases) for k in phases[0]["cpu"]}
    commits = [p.get("commits") for p in phases]
    out["commits"] = None if None in commits else {k: statistics.mean(c[k] for c in commits) for k in commits[0]}
    if "drain_s" in out:
        drains = [p["drain_s"] for p in phases]
        out["drain_s"] = None if None in drains else max(drains)
        out["pending_at_end"] = None if None in drains else max(p["pending_at_end"] for p in phases)
        out["repeats"] = sum(p["repeats"] for p in phases)
        out["bad_signatures"] = sum(p["bad_signatures"] for p in phases)
    return out


def steady(ctx, enabled):
    """Start-run throughput in workspace bench (wrk, its endpoint disabled) beside --steady-rate paced run
    starts in workspace hooks, whose endpoint on the same event types is enabled or not."""
    set_enabled(ctx.api, ctx.endpoint, False)
    set_enabled(ctx.hooks_api, ctx.hooks_endpoint, enabled)
    ctx.receiver.use_secret(ctx.hooks_secret)
    ctx.receiver.reset()
    paced = PacedStarts(ctx.runway, ctx.runway.keys[HOOKS], ctx.args.steady_rate)
    cpu, commits = Cpu(ctx.runway, ctx.receiver), Commits(ctx.runway)
    paced.start()
    try:
        out = wrk(ctx.start_url, ctx.args.seconds, ctx.args.connections, ctx.post_lua)
    finally:
        out_paced = paced.stop()
    out["cpu"], out["commits"] = cpu.since(), commits.since()
    out["paced"] = out_paced
    if enabled:
        at_end = ctx.receiver.stats()["distinct"]
        out["during"] = at_end / out["wall"]
        secs, s = drained(ctx.hooks_api, ctx.receiver, ctx.hooks_endpoint, paced.ok, ctx.args.drain_timeout)
        out["drain_s"] = secs
        out["pending_at_end"] = s["distinct"] - at_end if secs is not None else None
        out["repeats"], out["bad_signatures"] = s["repeats"], s["bad_signatures"]
    set_enabled(ctx.hooks_api, ctx.hooks_endpoint, False)
    ctx.receiver.use_secret(ctx.secret)
    return out


class Ctx:
    pass


def bench(db, args, receiver, work):
    pg = runway = stop_analyzing = None
    try:
        if db == "postgresql":
            pg = crm.PostgresDatabase(prefix="runway_bench_webhooks")
            where = "a fresh PostgreSQL database (%s on %s:%s)" % (pg.name, crm.PG_HOST, crm.PG_PORT)
        else:
            where = "a fresh H2 file database"
        extra = {"RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS": "true", "RUNWAY_HTTP_MAX_IN_FLIGHT_PER_KEY": "100000"}
        runway = crm.Runway(pg.url if pg else None, crm.PG_USER if pg else None, crm.PG_PASSWORD if pg else None,
                            extra_env=extra, other_workspaces=(HOOKS,))
        api, hooks_api = Api(runway), Api(runway, runway.keys[HOOKS])
        types = ["run.succeeded"] if SUCCEEDED_ONLY else ["*"]
        endpoints = []
        for a in (api, hooks_api):
            with open(os.path.join(ROOT, "config", "workflows", "hello.json")) as f:
                a.call("PUT", "/v1/workflows/hello", json.load(f))
            endpoints.append(a.call("POST", "/v1/webhook_endpoints", {"url": receiver.url, "event_types": types,
                                                                       "description": "bench/webhooks.py"}))
        endpoint, hooks_endpoint = endpoints
        set_enabled(hooks_api, hooks_endpoint["id"], False)
        receiver.use_secret(endpoint["secret"])
        ctx = Ctx()
        ctx.args, ctx.runway, ctx.api, ctx.receiver, ctx.endpoint = args, runway, api, receiver, endpoint["id"]
        ctx.secret, ctx.hooks_api, ctx.hooks_endpoint = endpoint["secret"], hooks_api, hooks_endpoint["id"]
        ctx.hooks_secret = hooks_endpoint["secret"]
        ctx.start_url = "http://127.0.0.1:%d/v1/workflows/hello/runs" % runway.port
        ctx.post_lua = os.path.join(BENCH, "post.lua")
        os.environ["RUNWAY_BENCH_KEY"] = runway.key
        print("%s: Runway on %s; endpoint %s (event_types %s: %s of each run)" % (db, where, endpoint["id"],
              json.dumps(types), "run.succeeded" if SUCCEEDED_ONLY else "run.started and run.succeeded"))
        sys.stdout.flush()

        if args.warmup:
            half = max(1, args.warmup // 2)
            t0 = time.perf_counter()
            receiver.reset()
            w = wrk(ctx.start_url, half, args.connections, ctx.post_lua)
            secs, _ = drained(api, receiver, ctx.endpoint, w["ok"], args.drain_timeout)
            set_enabled(api, ctx.endpoint, False)
            w2 = wrk(ctx.start_url, half, args.connections, ctx.post_lua)
            print("  warm-up %.0f s: start-run %.0f/s with the endpoint (its deliveries drained %s), %.0f/s without" % (
                time.perf_counter() - t0, w["rps"], "in %.1f s" % secs if secs is not None else "NOT within %d s"
                % args.drain_timeout, w2["rps"]))
            sys.stdout.flush()
        if pg:
            pg.analyze()
            stop_analyzing = pg.analyze_every(5)
            print("  (ANALYZE after the warm-up and every 5 s, as autovacuum would: see bench/crm.py)")

        rounds = []
        for r in range(args.rounds):
            row = {}
            order = ("off", "on") if r % 2 == 0 else ("on", "off")
            if not args.steady_only:
                set_enabled(api, ctx.endpoint, True)
                receiver.reset()
                cpu = Cpu(runway, receiver)
                ms, missing = latency_phase(api, receiver, args.rate, args.latency_seconds)
                row["lat_cpu"] = cpu.since()
                row["lat"], row["lat_missing"] = ms, missing
                s = receiver.stats()
                row["lat_repeats"], row["lat_bad"] = s["repeats"], s["bad_signatures"]
                for phase in order:
                    row[phase] = throughput_off(ctx) if phase == "off" else throughput_on(ctx)
            if args.steady_rate:
                # Three phases, the first kind again last: the database grows under the load and each
                # phase runs a little slower than the one before, a drift the mean of the outer two cancels.
                done = {"off": [], "on": []}
                for phase in order + order[:1]:
                    done[phase].append(steady(ctx, phase == "on"))
                row["s_off"], row["s_on"] = merged(done["off"]), merged(done["on"])
                row["s_order"] = "-".join(order + order[:1])
            rounds.append(row)
            parts = []
            if not args.steady_only:
                on, off = row["on"], row["off"]
                parts.append("latency median %.1f ms (%d runs%s); start-run %.0f/s off, %.0f/s on (%.2f); "
                             "%.0f deliveries/s during the load; %s" % (
                                 statistics.median(ms) if ms else float("nan"), len(ms),
                                 ", %d never delivered" % missing if missing else "", off["rps"], on["rps"],
                                 on["rps"] / off["rps"], on["during"],
                                 "drained %d pending in %.1f s" % (on["pending_at_end"], on["drain_s"])
                                 if on["drain_s"] is not None else "NOT drained within %d s (%d left)" % (
                                     args.drain_timeout, on["left"])))
            if args.steady_rate:
                s_on, s_off = row["s_on"], row["s_off"]
                parts.append("steady (%s): start-run %.0f/s off, %.0f/s on (%.2f) beside %.0f and %.0f paced starts/s; "
                             "%.0f deliveries/s; %s" % (
                                 row["s_order"], s_off["rps"], s_on["rps"], s_on["rps"] / s_off["rps"], s_off["paced"],
                                 s_on["paced"],
                                 s_on["during"], "drained %d pending in %.1f s" % (s_on["pending_at_end"], s_on["drain_s"])
                                 if s_on["drain_s"] is not None else "NOT drained within %d s" % args.drain_timeout))
            print("  round %d: %s" % (r + 1, "\n           ".join(parts)))
            sys.stdout.flush()
        table(db, rounds, args)
        logged = runway.warnings()
        if logged:
            print("  note: the server logged %d warnings or errors, the first: %s" % (len(logged), crm.short(logged[0], 400)))
        return True
    finally:
        if stop_analyzing:
            stop_analyzing()
        if runway:
            runway.stop()
        if pg:
            pg.drop()


def pct(ms, q):
    if not ms:
        return float("nan")
    if len(ms) == 1:
        return ms[0]
    return statistics.quantiles(ms, n=100, method="inclusive")[q - 1]


def table(db, rounds, args):
    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    rows = []  # (figure, target, per-round values, format, verdict function of the median)

    def add(name, target, values, fmt, ok=None):
        rows.append((name, target, values, fmt, ok))

    if not args.steady_only:
        add("latency median, ms (start -> run.succeeded delivered)", "<= %d" % LATENCY_MS,
            [statistics.median(r["lat"]) if r["lat"] else None for r in rounds], "%.1f", lambda v: v <= LATENCY_MS)
        add("latency p90, ms", "", [pct(r["lat"], 90) for r in rounds], "%.1f")
        add("latency p99, ms", "", [pct(r["lat"], 99) for r in rounds], "%.1f")
        add("latency max, ms", "", [max(r["lat"]) if r["lat"] else None for r in rounds], "%.1f")
        add("  runs timed / never delivered", "", ["%d/%d" % (len(r["lat"]), r["lat_missing"]) for r in rounds], "%s")
        add("  CPU server/receiver/machine", "", ["%.2f/%.2f/%.2f" % (r["lat_cpu"].get("server") or 0,
                                                                     r["lat_cpu"].get("receiver") or 0,
                                                                     r["lat_cpu"].get("machine") or 0) for r in rounds], "%s")
        add("start-run/s, no enabled endpoint", "", [r["off"]["rps"] for r in rounds], "%.0f")
        add("  p50 / p99 ms", "", ["%.1f/%.1f" % (r["off"]["p50"], r["off"]["p99"]) for r in rounds], "%s")
        add("  CPU server/receiver/wrk/machine", "", [cpus(r["off"]) for r in rounds], "%s")
        add("start-run/s, endpoint on `*`", "", [r["on"]["rps"] for r in rounds], "%.0f")
        add("  p50 / p99 ms", "", ["%.1f/%.1f" % (r["on"]["p50"], r["on"]["p99"]) for r in rounds], "%s")
        add("  CPU server/receiver/wrk/machine", "", [cpus(r["on"]) for r in rounds], "%s")
        add("start-run kept (on / off)", ">= %.2f" % KEEP_RATIO, [r["on"]["rps"] / r["off"]["rps"] for r in rounds], "%.2f",
            lambda v: v >= KEEP_RATIO)
        add("deliveries/s received during the load", ">= %s" % format(DELIVERIES_PER_S, ","),
            [r["on"]["during"] for r in rounds], "%.0f", lambda v: v >= DELIVERIES_PER_S)
        add("deliveries pending when the load stopped", "", [r["on"]["pending_at_end"] for r in rounds], "%d")
        add("time to drain them, s", "", [r["on"]["drain_s"] for r in rounds], "%.1f")
        add("deliveries/s while draining (no run starts)", "", [r["on"]["drain_rate"] for r in rounds], "%.0f")
        add("  server CPU per delivery while draining, ms", "",
            [r["on"]["drain_cpu"]["server"] / r["on"]["drain_rate"] * 1000 if r["on"]["drain_rate"]
             and r["on"]["drain_cpu"].get("server") is not None else None for r in rounds], "%.3f")
        add("  CPU server/receiver/machine", "", ["%.2f/%.2f/%.2f" % (r["on"]["drain_cpu"].get("server") or 0,
                                                                     r["on"]["drain_cpu"].get("receiver") or 0,
                                                                     r["on"]["drain_cpu"].get("machine") or 0)
                                                 for r in rounds], "%s")
        add("deliveries in all / repeated / bad signatures", "",
            ["%d/%d/%d" % (r["on"]["total"], r["on"]["repeats"] + r["lat_repeats"], r["on"]["bad_signatures"] + r["lat_bad"])
             for r in rounds], "%s")
    if args.steady_rate:
        add("steady: start-run/s beside paced starts, their endpoint off", "", [r["s_off"]["rps"] for r in rounds], "%.0f")
        add("  paced starts/s (workspace %s)" % HOOKS, "", [r["s_off"]["paced"] for r in rounds], "%.0f")
        add("  CPU server/receiver/clients/machine", "", [cpus(r["s_off"], True) for r in rounds], "%s")
        add("  commits/s, writes/commit, ms/commit, busy, MB/s written", "", [commit_text(r["s_off"]["commits"]) for r in rounds],
            "%s")
        add("steady: start-run/s beside paced starts, their endpoint on", "", [r["s_on"]["rps"] for r in rounds], "%.0f")
        add("  paced starts/s", "", [r["s_on"]["paced"] for r in rounds], "%.0f")
        add("  CPU server/receiver/clients/machine", "", [cpus(r["s_on"], True) for r in rounds], "%s")
        add("  commits/s, writes/commit, ms/commit, busy, MB/s written", "", [commit_text(r["s_on"]["commits"]) for r in rounds],
            "%s")
        add("steady: start-run kept (on / off)", ">= %.2f" % KEEP_RATIO,
            [r["s_on"]["rps"] / r["s_off"]["rps"] for r in rounds], "%.2f", lambda v: v >= KEEP_RATIO)
        add("steady: deliveries/s received during the load", ">= %s" % format(DELIVERIES_PER_S, ","),
            [r["s_on"]["during"] for r in rounds], "%.0f", lambda v: v >= DELIVERIES_PER_S)
        add("  pending when the load stopped / drained in s", "",
            ["%d/%.1f" % (r["s_on"]["pending_at_end"], r["s_on"]["drain_s"]) if r["s_on"]["drain_s"] is not None
             else "not drained" for r in rounds], "%s")
        add("  repeated / bad signatures", "",
            ["%d/%d" % (r["s_on"]["repeats"], r["s_on"]["bad_signatures"]) for r in rounds], "%s")

    n = len(rounds)
    head = ["figure", "target"] + ["round %d" % (i + 1) for i in range(n)] + ["median", ""]
    lines = []
    for name, target, values, fmt, ok in rows:
        cells = [fmt % v if v is not None and not (isinstance(v, float) and v != v) else "-" for v in values]
        numeric = [v for v in values if isinstance(v, (int, float)) and v == v]
        m = med(numeric) if numeric and len(numeric) == len(values) else None
        verdict = ("MET" if ok(m) else "MISSED") if ok and m is not None else ("MISSED" if ok else "")
        lines.append([name, target] + cells + [fmt % m if m is not None else "", verdict])
    widths = [max(len(str(x[i])) for x in [head] + lines) for i in range(len(head))]
    print()
    latency = "" if args.steady_only else "latency: %g starts/s for %d s; " % (args.rate, args.latency_seconds)
    steady = "; steady: %g paced starts/s in workspace %s" % (args.steady_rate, HOOKS) if args.steady_rate else ""
    print("%s: %d rounds; %sthroughput: wrk -t2 -c%d -d%ds with bench/post.lua%s" % (
        db, n, latency, args.connections, args.seconds, steady))
    print("| " + " | ".join(str(h).ljust(w) for h, w in zip(head, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for line in lines:
        print("| " + " | ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w)
                                for i, (c, w) in enumerate(zip(line, widths))) + " |")
    print()


def cpus(o, with_script=False):
    """Server, receiver, clients (wrk, and this script's paced starts with_script) and machine CPU, in cores."""
    c = o["cpu"]
    client = o["client_cpu"] + (c["client"] if with_script else 0)
    return "%.2f/%.2f/%.2f/%.2f" % (c.get("server") or 0, c.get("receiver") or 0, client, c.get("machine") or 0)


def main():
    parser = argparse.ArgumentParser(prog="bench/webhooks.py", description="webhook delivery benchmark"
                                     " (see the top of the file)")
    parser.add_argument("--db", choices=("h2", "postgresql", "all"), default="h2")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of latency, off and on (default 3)")
    parser.add_argument("--seconds", type=int, default=10, help="seconds of start-run load per phase (default 10)")
    parser.add_argument("--connections", type=int, default=32, help="wrk's connections (default 32)")
    parser.add_argument("--rate", type=float, default=10, help="run starts a second in the latency phase (default 10)")
    parser.add_argument("--latency-seconds", type=int, default=15, help="length of the latency phase (default 15)")
    parser.add_argument("--warmup", type=int, default=60, help="seconds of warm-up load, half with the endpoint"
                        " (default 60: the JIT compiles for about that long on 2 cores)")
    parser.add_argument("--drain-timeout", type=int, default=120, help="longest wait for a backlog (default 120)")
    parser.add_argument("--steady-rate", type=float, default=1025, help="paced run starts a second in workspace"
                        " hooks in the steady phases (default 1,025: 2,050 deliveries/s on *); 0 skips them")
    parser.add_argument("--steady-only", action="store_true", help="only the steady phases (no latency phase,"
                        " no start-run load with every run delivered)")
    parser.add_argument("--succeeded-only", action="store_true", help="the endpoint asks for run.succeeded alone"
                        " (one delivery a run) instead of * (two)")
    args = parser.parse_args()
    global SUCCEEDED_ONLY
    SUCCEEDED_ONLY = args.succeeded_only
    if args.rounds < 1 or args.seconds < 1 or args.connections < 1 or args.rate <= 0 or args.latency_seconds < 1:
        parser.error("--rounds, --seconds, --connections, --rate and --latency-seconds must be positive")
    if args.steady_rate < 0 or (args.steady_only and not args.steady_rate):
        parser.error("--steady-rate must be 0 or more, and more than 0 with --steady-only")
    if not os.path.exists(crm.JAR):
        sys.exit("no %s: run mvn -B -DskipTests package first (or set RUNWAY_JAR)" % crm.JAR)
    if not shutil.which("wrk"):
        sys.exit("bench/webhooks.py: wrk is missing (Debian: apt-get install wrk)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the finally blocks stop what was started
    work = tempfile.mkdtemp(prefix="runway-bench-webhooks-")
    receiver = None
    failed = False
    try:
        receiver = Receiver(work)
        out, cpu = receiver_ceiling(receiver, work)
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        jar = "%s (%s)" % (os.path.relpath(crm.JAR, ROOT), commit.stdout.strip() or "?") \
            if "RUNWAY_JAR" not in os.environ else crm.JAR
        print("Runway %s on %d cores; %s" % (jar, os.cpu_count() or 0,
                                             subprocess.run(["java", "-version"], capture_output=True,
                                                            text=True).stderr.splitlines()[0]))
        print("receiver ceiling: %.0f deliveries/s from wrk at %d connections (p50 %.2f ms, p99 %.2f ms; CPU %s)" % (
            out["rps"], RECEIVER_CONNECTIONS, out["p50"], out["p99"], cpu_text(cpu, out["client_cpu"])))
        sys.stdout.flush()
        for db in ("h2", "postgresql") if args.db == "all" else (args.db,):
            try:
                failed |= not bench(db, args, receiver, work)
            except Fail as e:
                print("%s: failed: %s" % (db, e), file=sys.stderr)
                failed = True
            sys.stdout.flush()
    except Fail as e:
        print("failed: %s" % e, file=sys.stderr)
        failed = True
    finally:
        if receiver:
            receiver.stop()
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
