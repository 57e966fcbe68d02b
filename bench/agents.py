#!/usr/bin/env python3
"""Many slow runs at once, and one-turn agent runs one after another, on the packaged jar.

Six scenarios, each on a Runway of its own (a fresh H2 file database in a temp dir, workflow and
agent files off, request log off, per-key rate limit off, steps may call 127.0.0.1), started with
config/jvm.options as ./run.sh starts it (RUNWAY_JAVA_OPTS replaces them):

  workflows  200 runs of one `http` step whose tool (bench/Tool.java) answers after 1 s,
             started at once from 32 threads; prints max(finished_at) - max(created_at) of the
             runs (the server's own clock: last start to last end), target <= 3 s.
  agents     1,000 agent runs (agent `bench`: no tools) whose model, a fake OpenAI Chat
             Completions endpoint here (Runway gets agents.model.base_url = it), answers after
             2 s; prints the same figure, target <= 6 s, and the server's peak resident memory
             meanwhile (VmRSS every 100 ms, and VmHWM at the end), target < 300 MB.
  latency    200 one-turn agent runs one after another against an instant model (after 100
             not counted); prints median, p90 and max of finished_at - created_at, target
             median <= 15 ms, and the client's view (POST until GET shows the end, polled every 2 ms).

  children   500 workflow runs of one `agent` step (each starts a child agent run; the built-in
             sandbox model), started at once from 32 threads; prints the same figure (last start to
             last parent succeeded), target <= 5 s. On H2, or on the database BENCH_DB_URL names
             (user BENCH_DB_USER; it should be fresh).

  foreach    BENCH_FOREACH_RUNS (3) workflow runs one after another in one server, each a foreach over
             1,000 items, concurrency 100, each iteration one `http` step whose tool answers after
             100 ms; prints each run's start -> succeeded (server clock) and their median after the
             first, which pays for the JIT's first compilations, target <= 2.5 s (ideal 1 s), and the
             peak resident memory, target <= 300 MB. H2, or BENCH_DB_URL as for children.

  parallel   5 agent runs one after another (after one not counted) whose model answers with 8 tool
             calls at once, the tool answering after 1 s, then a final answer; prints the median time
             from the model's answer to the last tool result committed (model_call.finished to the
             last tool_call.finished event, server clock), target <= 1.3 s.

usage: python3 bench/agents.py [workflows|agents|latency|children|foreach|parallel|all]     (default: all)
  RUNWAY_JAR        the jar (default: target/runway.jar; build it with mvn -B -DskipTests package)
  RUNWAY_JAVA_OPTS  JVM options instead of config/jvm.options
  BENCH_TOOL        python: the `http` steps' tool is a Python server in this process instead of
                    bench/Tool.java in a JVM of its own (the Python tool costs CPU of its own)
Exit status 1 when a scenario could not run (its reason on stderr) or not every run succeeded; a
target not met is printed as MISSED.
"""
import concurrent.futures, http.server, json, os, re, shutil, socket, statistics, subprocess, sys, tempfile
import threading, time, urllib.error, urllib.parse, urllib.request
from datetime import datetime, timedelta, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JAR = os.environ.get("RUNWAY_JAR") or os.path.join(ROOT, "target", "runway.jar")
FOREACH_RUNS = int(os.environ.get("BENCH_FOREACH_RUNS", "3"))
PROJECT = "bench"
START_THREADS = 32


class Fail(Exception):
    """A scenario cannot go on: its message is printed as it is, without a traceback."""


# ---------------------------------------------------------------- local servers (tool and model)

class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 4096  # the listen backlog: hundreds of connections arrive at once
    daemon_threads = True


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real tool or model endpoint offers it
    disable_nagle_algorithm = True  # else a kept-alive connection's answers can wait ~40 ms for a delayed ACK

    def body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():  # trailers up to the empty line
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))

    def answer(self, status, payload):
        data = json.dumps(payload, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Counter:
    """Calls received and the most in progress at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = self.now = self.peak = 0

    def __enter__(self):
        with self.lock:
            self.calls += 1
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc):
        with self.lock:
            self.now -= 1


def tool_server(delay_s):
    """An `http` step's tool: any path, POST or GET, answers 200 {"ok":true} after delay_s.

    bench/Tool.java in a JVM of its own unless BENCH_TOOL=python: a Python tool costs the machine's
    two cores a good share of what Runway itself spends on 1,000 calls, and shares this
    interpreter's lock with the client that polls."""
    if os.environ.get("BENCH_TOOL", "java") == "java":
        tool = JavaTool(delay_s)
        return tool, tool
    counter = Counter()

    class Tool(Handler):
        def do_POST(self):
            self.body()
            with counter:
                time.sleep(delay_s)
                self.answer(200, {"ok": True})

        do_GET = do_PUT = do_PATCH = do_DELETE = do_POST

    return start_server(Tool), counter


def model_server(delay_s):
    """A fake OpenAI Chat Completions endpoint: POST /v1/chat/completions answers "done" after delay_s."""
    counter = Counter()

    class Model(Handler):
        def do_POST(self):
            raw = self.body()
            if urllib.parse.urlsplit(self.path).path.rstrip("/") != "/v1/chat/completions":
                return self.answer(404, {"error": {"message": "no route %s" % self.path, "type": "invalid_request_error"}})
            try:
                model = json.loads(raw).get("model", "unknown")
            except (ValueError, AttributeError):
                model = "unknown"
            with counter:
                if delay_s:
                    time.sleep(delay_s)
                self.answer(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                                  "model": model,
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": "done"},
                                               "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})

    return start_server(Model), counter


class JavaTool:
    """bench/Tool.java started with single-file source launch; looks like a server and a Counter."""

    def __init__(self, delay_s):
        self.process = subprocess.Popen(["java", os.path.join(ROOT, "bench", "Tool.java"), "0",
                                         str(int(delay_s * 1000))], stdout=subprocess.PIPE, text=True)
        self.server_address = ("127.0.0.1", int(self.process.stdout.readline()))

    def stats(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/_stats" % self.server_address[1], timeout=10) as r:
            return json.loads(r.read())

    @property
    def calls(self):
        return self.stats()["calls"]

    @property
    def peak(self):
        return self.stats()["peak"]

    def shutdown(self):
        self.process.terminate()
        self.process.wait(10)

    def server_close(self):
        pass


def start_server(handler):
    server = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stop_server(server):
    server.shutdown()
    server.server_close()


# ---------------------------------------------------------------- Runway

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jvm_options():
    if "RUNWAY_JAVA_OPTS" in os.environ:
        return os.environ["RUNWAY_JAVA_OPTS"].split()
    try:
        with open(os.path.join(ROOT, "config", "jvm.options")) as f:
            return " ".join(line.strip() for line in f if not line.startswith("#")).split()
    except FileNotFoundError:
        return []


class Runway:
    """target/runway.jar on a fresh H2 file database in a temp dir, with an all-scopes key of workspace bench."""

    def __init__(self, **settings):
        self.work = tempfile.mkdtemp(prefix="runway-bench-")
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        env = dict(os.environ, RUNWAY_HTTP_PORT=str(self.port), RUNWAY_DB_URL="jdbc:h2:file:%s/runway" % self.work,
                   RUNWAY_WORKFLOWS_DIR="", RUNWAY_AGENTS_DIR="", RUNWAY_HTTP_REQUEST_LOG="false",
                   RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS="true", RUNWAY_RATELIMIT_PER_KEY_PER_SECOND="0", RUNWAY_QUOTAS_RUNS_PER_MINUTE_PER_WORKSPACE="0",
                   RUNWAY_BOOTSTRAP_ADMIN_KEY="false")
        env.setdefault("MALLOC_ARENA_MAX", "2")  # as ./run.sh sets it
        env.pop("RUNWAY_CONFIG", None)
        env.update({"RUNWAY_" + k.upper().replace(".", "_"): str(v) for k, v in settings.items()})
        keys = subprocess.run(["java", "-jar", JAR, "keys", "create", "--workspace", PROJECT], env=env, cwd=self.work,
                              capture_output=True, text=True)
        if keys.returncode != 0:
            raise Fail("runway keys create failed (exit %d): %s" % (keys.returncode, (keys.stderr or keys.stdout).strip()))
        self.key = keys.stdout.strip().splitlines()[-1].strip()
        self.log_path = os.path.join(self.work, "server.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(["java"] + jvm_options() + ["-jar", JAR], env=env, cwd=self.work,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise Fail("runway exited with %d before it was ready:\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                with urllib.request.urlopen(self.base + "/readyz", timeout=1):
                    break
            except Exception:
                if time.monotonic() > deadline:
                    raise Fail("runway not ready after 60 s:\n" + self.log_tail())
                time.sleep(0.05)

    def log_tail(self, lines=15):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-lines:]).rstrip()

    def call(self, method, path, body=None, timeout=30):
        """(status, parsed JSON or text) of one request; HTTP errors are answers too."""
        req = urllib.request.Request(self.base + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + self.key, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode("utf-8", "replace")

    def ok(self, method, path, body=None):
        status, answer = self.call(method, path, body)
        if not 200 <= status < 300:
            raise Fail("%s %s answered %d: %s" % (method, path, status, short(answer)))
        return answer

    def memory_kb(self, field):
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)


def short(answer, n=300):
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return text if len(text) <= n else text[:n] + "…"


TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?\s*(Z|[+-]\d\d:?\d\d)?$")


def ts(text):
    """Seconds since the epoch of an ISO 8601 time: any number of fraction digits, Z or an offset (none: UTC)."""
    m = TIME.match(text.strip())
    if not m:
        raise Fail("cannot read the time %r" % text)
    y, mo, d, h, mi, s, frac, zone = m.groups()
    tz = timezone.utc
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    micros = int((frac or "0")[:6].ljust(6, "0"))
    return datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micros, tz).timestamp()


def start_all(runway, path, body, n):
    """Starts n runs from START_THREADS threads as fast as they go; a 429 or 503 is retried after a moment.
    Returns (run ids, seconds the starts took, retries)."""
    retries = [0]
    lock = threading.Lock()

    def start(_):
        for attempt in range(20):
            status, answer = runway.call("POST", path, body)
            if 200 <= status < 300 and isinstance(answer, dict) and "id" in answer:
                return answer["id"]
            if status in (429, 503) and attempt < 19:
                with lock:
                    retries[0] += 1
                time.sleep(0.05)
                continue
            raise Fail("POST %s answered %d: %s" % (path, status, short(answer)))

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(START_THREADS) as pool:
        ids = list(pool.map(start, range(n)))
    return ids, time.monotonic() - t0, retries[0]


def list_runs(runway, extra=""):
    """Every run of project bench (newest first, 100 a page, next_cursor as starting_after), by id."""
    runs, cursor = {}, None
    while True:
        page = runway.ok("GET", "/v1/runs?project=%s&limit=100%s%s" % (
            PROJECT, extra, "" if cursor is None else "&starting_after=" + urllib.parse.quote(cursor)))
        for run in page["data"]:
            runs[run["id"]] = run
        cursor = page.get("next_cursor")
        if not page.get("has_more") or not cursor:
            return runs


def wait_finished(runway, ids, timeout_s):
    """The runs' records once every one has finished_at set, or as they are after timeout_s.
    Polls the list for runs still `running` (one small request), then reads the list page by page;
    runs the list does not show, or that are still not finished, are read one by one."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and runway.ok("GET", "/v1/runs?project=%s&status=running&limit=1" % PROJECT)["data"]:
        time.sleep(0.1)
    runs = {i: r for i, r in list_runs(runway).items() if i in set(ids)}
    pending = [i for i in ids if runs.get(i, {}).get("finished_at") is None]
    with concurrent.futures.ThreadPoolExecutor(START_THREADS) as pool:
        while pending and time.monotonic() < deadline:
            for run in pool.map(lambda i: runway.ok("GET", "/v1/runs/" + i), pending):
                runs[run["id"]] = run
            pending = [i for i in ids if runs.get(i, {}).get("finished_at") is None]
            if pending:
                time.sleep(0.1)
    return [runs.get(i, {"id": i, "status": "unseen"}) for i in ids]


def wait_run(runway, run_id, timeout_s):
    """One run's record once it has finished_at set, or as it is after timeout_s: polled by id every 50 ms,
    as a caller waiting for its run would (a list filtered by status walks every run newer than it)."""
    deadline = time.monotonic() + timeout_s
    run = runway.ok("GET", "/v1/runs/" + run_id)
    while run.get("finished_at") is None and time.monotonic() < deadline:
        time.sleep(0.05)
        run = runway.ok("GET", "/v1/runs/" + run_id)
    return run


def summary(runs):
    """(max(finished_at) - max(created_at) in s or None, succeeded, 'status: count' of the rest)."""
    done = [r for r in runs if r.get("finished_at")]
    by_status = {}
    for r in runs:
        by_status[r.get("status")] = by_status.get(r.get("status"), 0) + 1
    ok = by_status.pop("succeeded", 0)
    span = None
    if len(done) == len(runs) and runs:
        span = max(ts(r["finished_at"]) for r in runs) - max(ts(r["created_at"]) for r in runs)
    rest = ", ".join("%s %d" % (s, c) for s, c in sorted(by_status.items(), key=lambda x: str(x[0])))
    return span, ok, rest


def verdict(met):
    return "met" if met else "MISSED"


def first_error(runs):
    for r in runs:
        if r.get("status") not in ("succeeded", None, "running") and r.get("error"):
            return "\n  first error: %s (%s)" % (short(r["error"]), r["id"])
    return ""


class RssSampler:
    """The server's VmRSS every 100 ms in a thread, from start() to stop(); peak in kB."""

    def __init__(self, runway):
        self.runway, self.peak, self.done = runway, 0, threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.done.is_set():
            self.peak = max(self.peak, self.runway.memory_kb("VmRSS") or 0)
            self.done.wait(0.1)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.done.set()
        self.thread.join()
        return self.peak


# ---------------------------------------------------------------- scenarios

def report(title, runs, waited_s, target_s, start_s, retries, callee, calls, extra=None):
    """Prints a many-runs scenario's figures; true when every run succeeded."""
    span, ok, rest = summary(runs)
    n = len(runs)
    print("%s: last start -> last finished %s (target <= %g s: %s), %d/%d succeeded%s"
          % (title, "%.3f s" % span if span is not None else "n/a (not all finished in %d s)" % waited_s,
             target_s, verdict(span is not None and span <= target_s and ok == n), ok, n, "; " + rest if rest else ""))
    if extra:
        print(extra)
    print("  starts took %.2f s from %d threads%s; %s calls %d, at most %d at once"
          % (start_s, START_THREADS, ", %d retried after 429/503" % retries if retries else "", callee, calls.calls,
             calls.peak))
    err = first_error(runs)
    if err:
        print(err.lstrip("\n"))
    return ok == n


def workflows():
    n, delay = 200, 1.0
    tool, calls = tool_server(delay)
    runway = None
    try:
        runway = Runway()
        runway.ok("PUT", "/v1/workflows/slow-tool", {"steps": [
            {"type": "http", "url": "http://127.0.0.1:%d/tool" % tool.server_address[1]}]})
        ids, start_s, retries = start_all(runway, "/v1/workflows/slow-tool/runs", {"project": PROJECT, "inputs": {}}, n)
        runs = wait_finished(runway, ids, 60)
        return report("workflows: %d runs of one http step, tool answers after %g s" % (n, delay), runs, 60, 3,
                      start_s, retries, "tool", calls)
    finally:
        if runway:
            runway.stop()
        stop_server(tool)


def agent_runway(model):
    """A Runway whose agents call the fake model, with agent `bench` (no tools) put."""
    runway = Runway(**{"agents.model.base_url": "http://127.0.0.1:%d/v1" % model.server_address[1]})
    try:
        runway.ok("PUT", "/v1/agents/bench", {"model": "bench-model", "instructions": "Answer briefly."})
        return runway
    except BaseException:
        runway.stop()
        raise


def start_agent_run(runway):
    status, answer = runway.call("POST", "/v1/agents/bench/runs", {"project": PROJECT, "input": "hello"})
    if not 200 <= status < 300 or not isinstance(answer, dict) or "id" not in answer:
        raise Fail("POST /v1/agents/bench/runs answered %d: %s" % (status, short(answer)))
    return answer


def agents():
    n, delay = 1000, 2.0
    model, calls = model_server(delay)
    runway = None
    try:
        runway = agent_runway(model)
        first = start_agent_run(runway)  # the first of the n: a clear message if agent runs are missing
        if first.get("kind") not in (None, "agent"):
            print("  note: an agent run's kind is %r, not 'agent'" % first.get("kind"))
        idle_kb = runway.memory_kb("VmRSS")
        sampler = RssSampler(runway).start()
        ids, start_s, retries = start_all(runway, "/v1/agents/bench/runs", {"project": PROJECT, "input": "hello"}, n - 1)
        runs = wait_finished(runway, [first["id"]] + ids, 120)
        peak_kb, hwm_kb = sampler.stop(), runway.memory_kb("VmHWM")
        peak_mb, hwm_mb = peak_kb / 1024, (hwm_kb or 0) / 1024
        memory = ("agents: server memory: peak VmRSS %.0f MB during the runs (%.0f MB before), VmHWM %.0f MB"
                  " (target < 300 MB: %s)" % (peak_mb, (idle_kb or 0) / 1024, hwm_mb, verdict(max(peak_mb, hwm_mb) < 300)))
        return report("agents: %d agent runs, model answers after %g s" % (n, delay), runs, 120, 6,
                      start_s, retries, "model", calls, memory)
    finally:
        if runway:
            runway.stop()
        stop_server(model)


def agent_run_once(runway):
    t0 = time.perf_counter()
    run = start_agent_run(runway)
    deadline = time.monotonic() + 30
    while run.get("finished_at") is None:
        if time.monotonic() > deadline:
            raise Fail("agent run %s not finished after 30 s: %s" % (run["id"], short(run)))
        time.sleep(0.002)
        run = runway.ok("GET", "/v1/runs/" + run["id"])
    client_ms = (time.perf_counter() - t0) * 1000
    if run["status"] != "succeeded":
        raise Fail("agent run ended %s: %s" % (run["status"], short(run, 600)))
    return (ts(run["finished_at"]) - ts(run["created_at"])) * 1000, client_ms


def latency():
    n, warm = 200, 100
    model, calls = model_server(0)
    runway = None
    try:
        runway = agent_runway(model)
        for _ in range(warm):
            agent_run_once(runway)
        server_ms, client_ms = [], []
        for _ in range(n):
            s, c = agent_run_once(runway)
            server_ms.append(s)
            client_ms.append(c)
        med = statistics.median(server_ms)
        print("latency: %d one-turn agent runs one after another, instant model, start -> succeeded (server clock):"
              " median %.1f ms, p90 %.1f ms, max %.1f ms (target median <= 15 ms: %s)"
              % (n, med, statistics.quantiles(server_ms, n=10)[-1], max(server_ms), verdict(med <= 15)))
        print("  client view (POST until GET shows it finished, polled every 2 ms): median %.1f ms, p90 %.1f ms;"
              " after %d warm-up runs" % (statistics.median(client_ms), statistics.quantiles(client_ms, n=10)[-1], warm))
        return True
    finally:
        if runway:
            runway.stop()
        stop_server(model)


def children():
    n = 500
    runway = None
    try:
        settings = {"agents.model.base_url": "sandbox"}
        if os.environ.get("BENCH_DB_URL"):  # e.g. a fresh PostgreSQL database
            settings.update({"db.url": os.environ["BENCH_DB_URL"], "db.user": os.environ.get("BENCH_DB_USER", "")})
        runway = Runway(**settings)
        runway.ok("PUT", "/v1/agents/echo", {"model": "sandbox", "instructions": "Repeat the input."})
        runway.ok("PUT", "/v1/workflows/asks-agent", {"steps": [
            {"id": "ask", "type": "agent", "agent": "echo", "input": "{{ inputs.n }}"}],
            "output": "{{ steps.ask.output }}"})
        ids, start_s, retries = start_all(runway, "/v1/workflows/asks-agent/runs",
                                          {"project": PROJECT, "inputs": {"n": 7}}, n)
        runs = wait_finished(runway, ids, 120)
        bad = [r for r in runs if r.get("status") == "succeeded" and r.get("output") != "You said: 7"]
        if bad:
            raise Fail("a parent's output is not its agent child's: %s" % short(bad[0]))
        span, ok, rest = summary(runs)
        print("children: %d workflow runs of one agent step (a child agent run each, sandbox model): last start ->"
              " last parent finished %s (target <= 5 s: %s), %d/%d succeeded%s; starts took %.2f s from %d threads%s"
              % (n, "%.3f s" % span if span is not None else "n/a", verdict(span is not None and span <= 5 and ok == n),
                 ok, n, "; " + rest if rest else "", start_s, START_THREADS,
                 ", %d retried after 429/503" % retries if retries else ""))
        err = first_error(runs)
        if err:
            print(err.lstrip("\n"))
        return ok == n
    finally:
        if runway:
            runway.stop()


def foreach():
    n, delay = 1000, 0.1
    tool, calls = tool_server(delay)
    runway = None
    try:
        settings = {}
        if os.environ.get("BENCH_DB_URL"):
            settings.update({"db.url": os.environ["BENCH_DB_URL"], "db.user": os.environ.get("BENCH_DB_USER", "")})
        runway = Runway(**settings)
        runway.ok("PUT", "/v1/workflows/fan-out", {"steps": [
            {"id": "each", "type": "foreach", "items": "inputs.items", "concurrency": 100,
             "steps": [{"id": "call", "type": "http", "url": "http://127.0.0.1:%d/tool" % tool.server_address[1],
                        "body": {"n": "{{ item }}"}}]}],
            "output": "{{ size(steps.each.output) }}"})
        idle_kb = runway.memory_kb("VmRSS")
        sampler = RssSampler(runway).start()
        took, ok, r = [], True, None
        for _ in range(FOREACH_RUNS):  # one after another in the same server: the first pays for the JIT
            run = runway.ok("POST", "/v1/workflows/fan-out/runs", {"project": PROJECT, "inputs": {"items": list(range(n))}})
            r = wait_run(runway, run["id"], 120)
            ok = ok and r.get("status") == "succeeded" and r.get("output") == n
            if not r.get("finished_at") or not ok:
                break
            took.append(ts(r["finished_at"]) - ts(r["created_at"]))
        peak_kb, hwm_kb = sampler.stop(), runway.memory_kb("VmHWM")
        warm = statistics.median(took[1:]) if len(took) > 1 else None
        print("foreach: %d runs one after another of a foreach over %d items, concurrency 100, tool answers after %g s:"
              " start -> succeeded %s, median after the first %s (target <= 2.5 s: %s); peak VmRSS %.0f MB (%.0f MB"
              " before), VmHWM %.0f MB (target <= 300 MB: %s); tool calls %d, at most %d at once"
              % (FOREACH_RUNS, n, delay, ", ".join("%.3f s" % t for t in took) or "n/a",
                 "%.3f s" % warm if warm is not None else "n/a", verdict(ok and warm is not None and warm <= 2.5),
                 peak_kb / 1024, (idle_kb or 0) / 1024, (hwm_kb or 0) / 1024,
                 verdict(max(peak_kb, hwm_kb or 0) / 1024 <= 300), calls.calls, calls.peak))
        if not ok:
            print("  run: %s" % short(r, 600))
        return ok
    finally:
        if runway:
            runway.stop()
        stop_server(tool)


def parallel_model_server():
    """A fake Chat Completions endpoint for `parallel`: a request without tool results answers with 8
    calls of tool `slow` at once, one with them the final answer "done"."""
    counter = Counter()

    class Model(Handler):
        def do_POST(self):
            body = json.loads(self.body())
            with counter:
                if any(m.get("role") == "tool" for m in body.get("messages", [])):
                    message = {"role": "assistant", "content": "done"}
                    reason = "stop"
                else:
                    message = {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "call_%d" % i, "type": "function",
                         "function": {"name": "slow", "arguments": json.dumps({"n": i})}} for i in range(8)]}
                    reason = "tool_calls"
                self.answer(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                                  "model": body.get("model", "unknown"),
                                  "choices": [{"index": 0, "message": message, "finish_reason": reason}],
                                  "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})

    return start_server(Model), counter


def parallel():
    runs, delay = 5, 1.0
    model, _ = parallel_model_server()
    tool, calls = tool_server(delay)
    runway = None
    try:
        runway = Runway(**{"agents.model.base_url": "http://127.0.0.1:%d/v1" % model.server_address[1]})
        runway.ok("PUT", "/v1/agents/fanout", {"model": "bench-model", "tools": [
            {"name": "slow", "url": "http://127.0.0.1:%d/slow" % tool.server_address[1],
             "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}]})
        spans = []
        for i in range(runs + 1):  # the first warms the JIT up and is not counted
            run = runway.ok("POST", "/v1/agents/fanout/runs", {"project": PROJECT, "input": "go"})
            run = wait_run(runway, run["id"], 30)
            if run.get("status") != "succeeded":
                raise Fail("parallel run ended %s: %s" % (run.get("status"), short(run, 600)))
            events = runway.ok("GET", "/v1/runs/%s/events?limit=1000" % run["id"])["data"]
            answered = min(ts(e["created_at"]) for e in events if e["type"] == "model_call.finished")
            finished = [ts(e["created_at"]) for e in events if e["type"] == "tool_call.finished"]
            if len(finished) != 8:
                raise Fail("run %s finished %d tool calls, not 8" % (run["id"], len(finished)))
            if i > 0:
                spans.append(max(finished) - answered)
        med = statistics.median(spans)
        print("parallel: one model answer with 8 tool calls, tool answers after %g s: answer -> last tool result"
              " committed, median of %d runs %.3f s (runs: %s; target <= 1.3 s: %s)"
              % (delay, runs, med, ", ".join("%.3f" % x for x in spans), verdict(med <= 1.3)))
        print("  tool calls %d, at most %d at once" % (calls.calls, calls.peak))
        return True
    finally:
        if runway:
            runway.stop()
        stop_server(tool)
        stop_server(model)


SCENARIOS = {"workflows": workflows, "agents": agents, "latency": latency, "children": children, "foreach": foreach,
             "parallel": parallel}


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    if which not in list(SCENARIOS) + ["all"] or len(sys.argv) > 2:
        sys.exit("usage: python3 bench/agents.py [workflows|agents|latency|children|foreach|parallel|all]")
    if not os.path.exists(JAR):
        sys.exit("no %s: run mvn -B -DskipTests package first (or set RUNWAY_JAR)" % JAR)
    failed = False
    for name in SCENARIOS if which == "all" else [which]:
        try:
            failed |= not SCENARIOS[name]()
        except Fail as e:
            print("%s: failed: %s" % (name, e), file=sys.stderr)
            failed = True
        sys.stdout.flush()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
