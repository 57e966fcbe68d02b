#!/usr/bin/env python3
"""CRM sync throughput and latency, and change-feed reads, on the packaged jar.

Each database gets a Runway of its own (H2: a fresh file database in a temp dir; PostgreSQL: a fresh
database made with psql and dropped afterwards), with workflow and agent files off, the request log
off and the per-key rate limit off, started with config/jvm.options as ./run.sh starts it
(RUNWAY_JAVA_OPTS replaces them). The client runs --connections threads (8), each on its own
kept-alive HTTP/1.1 connection, and sends batches of --batch records (100), each with five
properties (email, first name, last name, lifecycle stage, lead score). Every request body is built
before the clock starts. First a warm-up: --warmup records (5,000) of object type `warmup`,
created, sent again and read from the feed. Then, on object type `contacts`:

  created    --records fresh records (200,000; distinct external ids) as fast as the connections
             go: records/s, and the median, p99 and max of one sync's latency (request sent until
             its answer is read). Targets: >= 20,000 records/s on H2, >= 15,000 on PostgreSQL.
  unchanged  the same batches again: every record must come back `unchanged`. Target: >= 40,000
             records/s (both databases).
  feed       one client reads the feed of `contacts` from the start, limit=1000, following
             next_cursor while has_more; it must hold exactly one `created` change per record
             created. Target: >= 50,000 changes/s. The next page is asked for as soon as a page
             has arrived, while the one before is parsed and checked.
  paced      the latency target, p99 of a 100-record sync <= 50 ms, at the load of the throughput
             targets: --paced-seconds (10) of fresh records sent at the created target's rate
             (20,000 records/s on H2, 15,000 on PostgreSQL), then the same batches again at the
             unchanged target's (40,000/s), on the same 8 connections. Batch k is due k * 100 /
             rate seconds after the start and goes out on whichever connection is free then; its
             latency counts from when it was due, so a batch that waited for a free connection
             counts that wait too. The p99 of the phases above (as fast as the connections go) is
             printed but not judged: with every connection sending again as soon as it has its
             answer, the mean latency is 8 syncs' records over the throughput (Little's law:
             8 * 100 / 35,000 records/s = 23 ms), a throughput figure, not one at a given load.

With each phase: CPU used meanwhile, in cores (1.0 = one core busy all along), by the server, by
this client, and by the whole machine (the rest: PostgreSQL, and anything else running). The client
shares the machine's cores with the server.

usage: python3 bench/crm.py [--db h2|postgresql|all] [--records N] [--phases created,unchanged,feed,paced]
                            [--warmup N] [--connections N] [--batch N] [--paced-seconds S]
  --db        default h2; all: H2, then PostgreSQL
  --phases    which phases to measure and judge (default: all four); `created` always runs (the
              others need its records), but is judged only when asked for
  RUNWAY_JAR        the jar (default: target/runway.jar; build it with mvn -B -DskipTests package)
  RUNWAY_JAVA_OPTS  JVM options instead of config/jvm.options
  BENCH_PG_HOST (127.0.0.1), BENCH_PG_PORT (5432), BENCH_PG_USER (postgres), BENCH_PG_PASSWORD
                    the PostgreSQL server; psql makes and drops database runway_bench_crm_<pid>
Exit status 1 when a phase could not run (its reason on stderr): a non-200 answer, a summary other
than expected, a feed that does not hold every record created once; a target not met is printed as
MISSED. Exit status 2 on a usage error.
"""
import argparse, http.client, itertools, json, os, queue, re, shutil, socket, statistics, subprocess, sys
import tempfile, threading, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JAR = os.environ.get("RUNWAY_JAR") or os.path.join(ROOT, "target", "runway.jar")
WORKSPACE = "bench"
OBJECT_TYPE = "contacts"
WARMUP_TYPE = "warmup"
FEED_LIMIT = 1000
P99_MS = 50
TARGETS = {  # records (or changes) per second, by phase and database
    "created": {"h2": 20000, "postgresql": 15000},
    "unchanged": {"h2": 40000, "postgresql": 40000},
    "feed": {"h2": 50000, "postgresql": 50000},
}
PHASES = ("created", "unchanged", "feed", "paced")
STATUSES = ("created", "updated", "unchanged", "deleted", "stale", "failed")
PG_HOST = os.environ.get("BENCH_PG_HOST", "127.0.0.1")
PG_PORT = os.environ.get("BENCH_PG_PORT", "5432")
PG_USER = os.environ.get("BENCH_PG_USER", "postgres")
PG_PASSWORD = os.environ.get("BENCH_PG_PASSWORD", "")


class Fail(Exception):
    """A phase cannot go on: its message is printed as it is, without a traceback."""


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
    """target/runway.jar on the database given (by default a fresh H2 file database in a temp dir),
    with an all-scopes key of workspace bench (and one of each of `other_workspaces`, in self.keys);
    `extra_env` adds or overrides settings (bench/webhooks.py)."""

    def __init__(self, db_url=None, db_user=None, db_password=None, extra_env=None, other_workspaces=()):
        self.work = tempfile.mkdtemp(prefix="runway-bench-")
        self.port = free_port()
        self.host = "127.0.0.1"
        self.base = "http://%s:%d" % (self.host, self.port)
        self.proc = self.log = None
        env = dict(os.environ, RUNWAY_HTTP_PORT=str(self.port), RUNWAY_DB_URL=db_url or "jdbc:h2:file:%s/runway" % self.work,
                   RUNWAY_WORKFLOWS_DIR="", RUNWAY_AGENTS_DIR="", RUNWAY_HTTP_REQUEST_LOG="false",
                   RUNWAY_RATELIMIT_PER_KEY_PER_SECOND="0", RUNWAY_QUOTAS_RUNS_PER_MINUTE_PER_WORKSPACE="0", RUNWAY_BOOTSTRAP_ADMIN_KEY="false")
        if db_user is not None:
            env.update(RUNWAY_DB_USER=db_user, RUNWAY_DB_PASSWORD=db_password or "")
        env.setdefault("MALLOC_ARENA_MAX", "2")  # as ./run.sh sets it
        env.pop("RUNWAY_CONFIG", None)
        env.update(extra_env or {})
        try:
            self.keys = {}
            for workspace in (WORKSPACE,) + tuple(other_workspaces):
                keys = subprocess.run(["java", "-jar", JAR, "keys", "create", "--workspace", workspace, "--name", "bench"],
                                      env=env, cwd=self.work, capture_output=True, text=True)
                if keys.returncode != 0:
                    raise Fail("runway keys create failed (exit %d): %s" % (
                        keys.returncode, (keys.stderr or keys.stdout).strip()))
                self.keys[workspace] = keys.stdout.strip().splitlines()[-1].strip()
            self.key = self.keys[WORKSPACE]
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
        except BaseException:
            self.stop()
            raise

    def log_tail(self, lines=15):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-lines:]).rstrip()

    def warnings(self):
        """The lines of the server's log so far that are warnings or errors."""
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return [line.rstrip() for line in f if " WARN " in line or " ERROR " in line]

    def connect(self):
        """A kept-alive HTTP/1.1 connection to the server, Nagle off (a request goes out in one piece anyway)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as e:
            raise Fail("cannot connect to the server: %s%s" % (e, self.died()))
        return conn

    def headers(self, with_body, key=None):
        h = {"Authorization": "Bearer " + (key or self.key)}
        if with_body:
            h["Content-Type"] = "application/json"
        return h

    def died(self):
        """The server's exit and log tail when it is no longer running, else ''."""
        if self.proc is not None and self.proc.poll() is not None:
            return "\nthe server exited with %d:\n%s" % (self.proc.returncode, self.log_tail())
        return ""

    def cpu_seconds(self):
        """User + system CPU time of the server process so far."""
        try:
            with open("/proc/%d/stat" % self.proc.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return None

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log:
            self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)


def short(answer, n=300):
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return text if len(text) <= n else text[:n] + "…"


def decoded(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


# ---------------------------------------------------------------- PostgreSQL

def psql(sql, database="postgres"):
    """Runs one statement on a database (postgres by default); (ok, output)."""
    env = dict(os.environ, PGPASSWORD=PG_PASSWORD) if PG_PASSWORD else None
    try:
        r = subprocess.run(["psql", "-h", PG_HOST, "-p", PG_PORT, "-U", PG_USER, "-d", database, "-X", "-q",
                            "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True, text=True, timeout=60, env=env)
    except FileNotFoundError:
        return False, "psql is not installed"
    except subprocess.TimeoutExpired:
        return False, "psql took over 60 s"
    return r.returncode == 0, (r.stderr or r.stdout).strip()


class PostgresDatabase:
    """A fresh database on the PostgreSQL server, dropped by drop()."""

    def __init__(self, prefix="runway_bench_crm"):
        self.name = "%s_%d" % (prefix, os.getpid())
        self.url = "jdbc:postgresql://%s:%s/%s" % (PG_HOST, PG_PORT, self.name)
        psql("DROP DATABASE IF EXISTS %s" % self.name)  # left over by an earlier run of this pid, if any
        ok, out = psql("CREATE DATABASE %s" % self.name)
        if not ok:
            raise Fail("cannot create database %s on %s:%s as %s: %s" % (self.name, PG_HOST, PG_PORT, PG_USER, out))

    def analyze(self):
        """What autovacuum does on its own (it is off on this machine's PostgreSQL): with statistics from before
        a type's records were written, the planner takes the type for an empty one and looks records up by
        reading every record of the type."""
        ok, out = psql("ANALYZE", self.name)
        if not ok:
            raise Fail("ANALYZE on %s failed: %s" % (self.name, out))

    def analyze_every(self, seconds):
        """ANALYZE every few seconds in the background, as autovacuum would (its naptime is 60 s by default,
        and it analyzes a table once a tenth of it changed); returns a function that stops it."""
        stop = threading.Event()

        def loop():
            while not stop.wait(seconds):
                self.analyze()
        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        return lambda: (stop.set(), thread.join())

    def drop(self):
        ok, out = psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.name)
        if not ok:
            ok, out = psql("DROP DATABASE IF EXISTS %s" % self.name)  # PostgreSQL before 13
        if not ok:
            print("  note: could not drop database %s: %s" % (self.name, out), file=sys.stderr)


# ---------------------------------------------------------------- records

FIRST = ("Anna", "Ben", "Chloé", "David", "Emma", "Felix", "Grace", "Hugo", "Ines", "Jonas", "Kira", "Liam",
         "Maya", "Noah", "Olivia", "Paul", "Rosa", "Sam", "Tara", "Yusuf")
LAST = ("Andersen", "Berg", "Costa", "Dubois", "Evans", "Fischer", "García", "Hansen", "Ivanova", "Jensen",
        "Kowalski", "Lambert", "Müller", "Nakamura", "O'Brien", "Patel", "Rossi", "Schmidt", "Tanaka", "Weber")
STAGES = ("subscriber", "lead", "marketing_qualified", "sales_qualified", "opportunity", "customer")


def external_id(prefix, i):
    return "%s-%d" % (prefix, i)


def record(prefix, i):
    first, last = FIRST[i % len(FIRST)], LAST[(i // len(FIRST)) % len(LAST)]
    email = "%s.%s.%d@example.com" % (first.lower(), last.lower().replace("'", ""), i)
    return {"external_id": external_id(prefix, i),
            "properties": {"email": email, "first_name": first, "last_name": last,
                           "lifecycle_stage": STAGES[i % len(STAGES)], "lead_score": (i * 37) % 101},
            "source_updated_at": "2026-11-20T%02d:%02d:%02d.000Z" % ((i // 3600) % 24, (i // 60) % 60, i % 60)}


def bodies(prefix, n, batch):
    """The sync bodies (bytes) of records prefix-0 .. prefix-(n-1), batch records each, and their sizes."""
    out = []
    for start in range(0, n, batch):
        records = [record(prefix, i) for i in range(start, min(n, start + batch))]
        out.append((json.dumps({"mode": "merge", "records": records}, separators=(",", ":")).encode(), len(records)))
    return out


# ---------------------------------------------------------------- CPU

def machine_ticks():
    """(busy, total) clock ticks of all cores so far, from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
        total = sum(values[:8])  # guest time is counted in user already
        return total - idle, total
    except (OSError, ValueError, IndexError):
        return None


class Cpu:
    """CPU used from its creation to since(): server, this client, the machine; in cores."""

    def __init__(self, runway):
        self.runway = runway
        self.wall, self.client, self.server, self.machine = (time.perf_counter(), time.process_time(),
                                                             runway.cpu_seconds(), machine_ticks())

    def since(self):
        wall = time.perf_counter() - self.wall
        client = (time.process_time() - self.client) / wall
        server_now, machine_now = self.runway.cpu_seconds(), machine_ticks()
        text = "CPU meanwhile, in cores: server %s, client %.2f" % (
            "%.2f" % ((server_now - self.server) / wall) if server_now is not None and self.server is not None else "?", client)
        if machine_now and self.machine and machine_now[1] > self.machine[1]:
            busy = (machine_now[0] - self.machine[0]) / (machine_now[1] - self.machine[1]) * (os.cpu_count() or 1)
            text += ", whole machine %.2f of %d" % (busy, os.cpu_count() or 1)
        return text


# ---------------------------------------------------------------- phases

def expected_summary(status, n):
    summary = dict.fromkeys(STATUSES, 0)
    summary[status] = n
    return summary


def sync_all(runway, object_type, batches, connections, status, rate=None):
    """Sends every batch from `connections` threads, each on its own connection, and checks that each
    answer is 200 with every record `status`. Returns (wall seconds, latencies in ms, connections the
    server closed, Cpu report).

    With `rate` (records a second) the batches are paced instead: batch k is due at k * (its
    records / rate) seconds after the start, sent by whichever connection is free then, and its
    latency counts from when it was due, so that a batch sent late because every connection was
    still waiting for an answer counts that wait too (no coordinated omission)."""
    path = "/v1/crm/%s/records/sync" % object_type
    headers = runway.headers(True)
    next_batch = itertools.count()  # next() on it is atomic under the GIL
    stop = threading.Event()
    errors, latencies, reopened = [], [], [0]
    lock = threading.Lock()
    conns = [runway.connect() for _ in range(connections)]

    def work(conn):
        mine, closed = [], 0
        try:
            while not stop.is_set():
                k = next(next_batch)
                if k >= len(batches):
                    break
                body, n = batches[k]
                if interval:
                    t0 = start + k * interval
                    ahead = t0 - time.perf_counter()
                    if ahead > 0:
                        time.sleep(ahead)
                else:
                    t0 = time.perf_counter()
                conn.request("POST", path, body, headers)
                resp = conn.getresponse()
                raw = resp.read()
                mine.append((time.perf_counter() - t0) * 1000)
                if resp.will_close:  # the server closes it: a new one for the next request
                    closed += 1
                    conn.close()
                    conn = runway.connect()
                check_sync(k, resp.status, raw, n, status)
        except Fail as e:
            errors.append(str(e))
            stop.set()
        except (OSError, http.client.HTTPException) as e:
            errors.append("a sync failed: %s: %s%s" % (type(e).__name__, e, runway.died()))
            stop.set()
        except Exception as e:  # an answer of an unexpected shape
            errors.append("a sync failed: %r" % e)
            stop.set()
        finally:
            with lock:
                latencies.extend(mine)
                reopened[0] += closed
            conn.close()

    interval = batches[0][1] / rate if rate else None
    cpu = Cpu(runway)
    t0 = start = time.perf_counter()
    threads = [threading.Thread(target=work, args=(c,), daemon=True) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    report = cpu.since()
    if errors:
        raise Fail(errors[0] + ("" if len(errors) == 1 else " (and %d more failures)" % (len(errors) - 1)))
    return wall, latencies, reopened[0], report


def check_sync(k, status_code, raw, n, status):
    if status_code != 200:
        raise Fail("sync #%d answered %d: %s" % (k, status_code, short(decoded(raw))))
    answer = decoded(raw)
    if not isinstance(answer, dict) or answer.get("summary") != expected_summary(status, n) \
            or len(answer.get("results") or ()) != n:
        first = next((r for r in (answer.get("results") or ()) if r.get("status") != status), None) \
            if isinstance(answer, dict) else None
        raise Fail("sync #%d of %d records: expected all %s, got summary %s%s" % (
            k, n, status, short(answer.get("summary") if isinstance(answer, dict) else answer),
            "; first other result: %s" % short(first) if first else ""))


TAIL_MORE = re.compile(rb'"has_more"\s*:\s*(true|false)')
TAIL_NEXT = re.compile(rb'"next_cursor"\s*:\s*(null|"([^"]*)")')


def read_feed(runway, object_type):
    """Reads the whole feed of object_type from the start, limit=FEED_LIMIT, on one connection. A thread
    asks for the next page as soon as a page arrived (has_more and next_cursor read from the end of its
    body) while this one parses and checks the page before. Returns (wall s, changes, page latencies
    in ms, external ids seen, Cpu report)."""
    pages = queue.Queue(maxsize=8)
    headers = runway.headers(False)
    stop = threading.Event()

    def fetch():
        after, conn = None, None
        try:
            conn = runway.connect()
            while not stop.is_set():
                path = "/v1/crm/%s/changes?limit=%d%s" % (object_type, FEED_LIMIT, "" if after is None else "&after=" + after)
                t0 = time.perf_counter()
                conn.request("GET", path, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                ms = (time.perf_counter() - t0) * 1000
                if resp.will_close:  # the server closes it: a new one for the next request
                    conn.close()
                    conn = runway.connect()
                if resp.status != 200:
                    raise Fail("GET %s answered %d: %s" % (path, resp.status, short(decoded(raw))))
                tail = raw[-300:]
                more, nxt = TAIL_MORE.search(tail), TAIL_NEXT.search(tail)
                if more and nxt:
                    has_more, cursor = more.group(1) == b"true", nxt.group(2) and nxt.group(2).decode()
                else:  # not where expected: the whole page then
                    page = decoded(raw)
                    if not isinstance(page, dict):
                        raise Fail("GET %s answered 200 with no JSON object: %s" % (path, short(page)))
                    has_more, cursor = bool(page.get("has_more")), page.get("next_cursor")
                pages.put((path, raw, ms, has_more, cursor))
                if not has_more:
                    break
                if not cursor:
                    raise Fail("GET %s: has_more true without a next_cursor" % path)
                after = cursor
        except Fail as e:
            pages.put(e)
        except (OSError, http.client.HTTPException) as e:
            pages.put(Fail("reading the feed failed: %s: %s%s" % (type(e).__name__, e, runway.died())))
        except BaseException as e:  # anything else: the reader must not wait forever
            pages.put(Fail("the feed reader failed: %r" % e))
        finally:
            if conn:
                conn.close()
            pages.put(None)

    cpu = Cpu(runway)
    t0 = time.perf_counter()
    fetcher = threading.Thread(target=fetch, daemon=True)
    fetcher.start()
    changes, latencies, seen, last = 0, [], set(), -1
    try:
        while True:
            item = pages.get()
            if item is None:
                break
            if isinstance(item, Fail):
                raise item
            path, raw, ms, has_more, cursor = item
            latencies.append(ms)
            page = decoded(raw)
            if not isinstance(page, dict) or not isinstance(page.get("data"), list):
                raise Fail("GET %s answered 200 without a data array: %s" % (path, short(page)))
            if bool(page.get("has_more")) != has_more or (has_more and page.get("next_cursor") != cursor):
                raise Fail("GET %s: has_more %s, next_cursor %s in the page, not as read from its end (%s, %s)"
                           % (path, page.get("has_more"), page.get("next_cursor"), has_more, cursor))
            for c in page["data"]:
                try:
                    seq = int(c["cursor"])
                    if c["change"] != "created" or c["object_type"] != object_type or c["version"] != 1:
                        raise ValueError
                    seen.add(c["external_id"])
                except (KeyError, TypeError, ValueError):
                    raise Fail("GET %s: expected only `created` changes of version 1 of %s, with a cursor, got %s"
                               % (path, object_type, short(c))) from None
                if seq <= last:
                    raise Fail("GET %s: cursor %s after %s: the feed goes back" % (path, c["cursor"], last))
                last = seq
            changes += len(page["data"])
            if has_more and page["data"] and page["next_cursor"] != page["data"][-1]["cursor"]:
                raise Fail("GET %s: next_cursor %s is not the last change's cursor %s"
                           % (path, page["next_cursor"], page["data"][-1]["cursor"]))
    finally:
        stop.set()
        while fetcher.is_alive():  # let it finish its put() and end
            try:
                pages.get(timeout=0.1)
            except queue.Empty:
                pass
    wall = time.perf_counter() - t0
    return wall, changes, latencies, seen, cpu.since()


def latency_text(ms):
    if not ms:
        return "no requests"
    return "median %.1f ms, p99 %.1f ms, max %.1f ms" % (statistics.median(ms), p99(ms), max(ms))


def p99(ms):
    return statistics.quantiles(ms, n=100, method="inclusive")[98] if len(ms) > 1 else ms[0]


def verdict(met):
    return "MET" if met else "MISSED"


def report_sync(db, phase, n, result, judged):
    wall, ms, reopened, cpu = result
    rate = n / wall
    print("  %-9s %s records in %.2f s: %s records/s; %d syncs, %s" % (
        phase, format(n, ","), wall, format(round(rate), ","), len(ms), latency_text(ms)))
    print("            %s%s" % (cpu, "; the server closed %d connections" % reopened if reopened else ""))
    if judged:
        target = TARGETS[phase][db]
        print("  target %s: >= %s records/s: %s (the p99 at full speed is not judged: see `paced`)" % (
            phase, format(target, ","), verdict(rate >= target)))
    else:
        print("            (%s not judged: it only made the records of the phases asked for)" % phase)


def report_paced(db, phase, n, result):
    """A phase sent at its target's rate: the p99 of a sync at that load, from when each was due."""
    wall, ms, reopened, cpu = result
    target = TARGETS[phase][db]
    print("  %-9s %s records paced at %s records/s: sent in %.2f s (%s records/s); %d syncs, %s" % (
        phase, format(n, ","), format(target, ","), wall, format(round(n / wall), ","), len(ms), latency_text(ms)))
    print("            %s%s" % (cpu, "; the server closed %d connections" % reopened if reopened else ""))
    print("  target %s at %s records/s: p99 <= %d ms: %s; kept the rate (>= 98%%): %s" % (
        phase, format(target, ","), P99_MS, verdict(p99(ms) <= P99_MS), verdict(n / wall >= 0.98 * target)))


def bench(db, args):
    """Runs the phases on one database; prints the figures."""
    pg = runway = stop_analyzing = None
    try:
        if db == "postgresql":
            pg = PostgresDatabase()
            where = "a fresh PostgreSQL database (%s on %s:%s)" % (pg.name, PG_HOST, PG_PORT)
        else:
            where = "a fresh H2 file database"
        warm = bodies("w", args.warmup, args.batch) if args.warmup else []
        batches = bodies("c", args.records, args.batch)
        runway = Runway(pg.url, PG_USER, PG_PASSWORD) if pg else Runway()
        print("%s: Runway on %s; %d connections, batches of %d records with 5 properties (%.1f KB a body),"
              " %s records, %s" % (
                  db, where, args.connections, args.batch, sum(len(b) for b, _ in batches) / len(batches) / 1024,
                  format(args.records, ","), "after a warm-up of %s" % format(args.warmup, ",") if warm else "no warm-up"))
        sys.stdout.flush()
        if warm:
            wall, ms, _, _ = sync_all(runway, WARMUP_TYPE, warm, args.connections, "created")
            wall2, ms2, _, _ = sync_all(runway, WARMUP_TYPE, warm, args.connections, "unchanged")
            fwall, fn, _, _, _ = read_feed(runway, WARMUP_TYPE)
            if fn != args.warmup:
                raise Fail("warm-up: the feed of %s holds %d changes, not %d" % (WARMUP_TYPE, fn, args.warmup))
            print("  warm-up   %s records: created in %.2f s (%s), unchanged in %.2f s (%s), feed read in %.2f s" % (
                format(args.warmup, ","), wall, latency_text(ms), wall2, latency_text(ms2), fwall))
        if pg:
            pg.analyze()
            stop_analyzing = pg.analyze_every(5)
            print("  (ANALYZE after the warm-up and every 5 s, as autovacuum would: see PostgresDatabase.analyze)")
        phases = args.phases
        report_sync(db, "created", args.records, sync_all(runway, OBJECT_TYPE, batches, args.connections, "created"),
                    "created" in phases)
        sys.stdout.flush()
        if "unchanged" in phases:
            report_sync(db, "unchanged", args.records,
                        sync_all(runway, OBJECT_TYPE, batches, args.connections, "unchanged"), True)
            sys.stdout.flush()
        if "feed" in phases:
            wall, n, ms, seen, cpu = read_feed(runway, OBJECT_TYPE)
            if n != args.records or seen != {external_id("c", i) for i in range(args.records)}:
                raise Fail("the feed of %s holds %d changes of %d records, not one for each of the %d created"
                           % (OBJECT_TYPE, n, len(seen), args.records))
            rate = n / wall
            print("  feed      %s changes in %.2f s: %s changes/s; %d pages of %d, %s" % (
                format(n, ","), wall, format(round(rate), ","), len(ms), FEED_LIMIT, latency_text(ms)))
            print("            %s" % cpu)
            target = TARGETS["feed"][db]
            print("  target feed: >= %s changes/s: %s; count %s = records created: MET" % (
                format(target, ","), verdict(rate >= target), format(n, ",")))
        if "paced" in phases:
            n = TARGETS["created"][db] * args.paced_seconds
            paced = bodies("p", n, args.batch)
            print("  paced: fresh records of %s created at the target's rate, then sent again at the unchanged"
                  " target's rate; latency from when each sync was due" % OBJECT_TYPE)
            report_paced(db, "created", n, sync_all(runway, OBJECT_TYPE, paced, args.connections, "created",
                                                    TARGETS["created"][db]))
            sys.stdout.flush()
            report_paced(db, "unchanged", n, sync_all(runway, OBJECT_TYPE, paced, args.connections, "unchanged",
                                                      TARGETS["unchanged"][db]))
            sys.stdout.flush()
        logged = runway.warnings()
        if logged:
            print("  note: the server logged %d warnings or errors, the first: %s" % (len(logged), short(logged[0], 400)))
        return True
    finally:
        if stop_analyzing:
            stop_analyzing()
        if runway:
            runway.stop()
        if pg:
            pg.drop()


def main():
    parser = argparse.ArgumentParser(prog="bench/crm.py", description="CRM sync and change-feed benchmark"
                                     " (see the top of the file)")
    parser.add_argument("--db", choices=("h2", "postgresql", "all"), default="h2")
    parser.add_argument("--records", type=int, default=200000, help="records created (default 200,000)")
    parser.add_argument("--warmup", type=int, default=5000, help="warm-up records of another type (default 5,000)")
    parser.add_argument("--phases", default=",".join(PHASES), help="comma-separated: created, unchanged, feed, paced")
    parser.add_argument("--connections", type=int, default=8, help="client connections and threads (default 8)")
    parser.add_argument("--batch", type=int, default=100, help="records per sync, 1 to 1000 (default 100)")
    parser.add_argument("--paced-seconds", type=int, default=10,
                        help="the paced phase's length at the created target's rate (default 10)")
    args = parser.parse_args()
    args.phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    if not args.phases or any(p not in PHASES for p in args.phases):
        parser.error("--phases takes a comma-separated list of: " + ", ".join(PHASES))
    if args.paced_seconds < 1:
        parser.error("--paced-seconds must be at least 1")
    if args.records < 1 or args.warmup < 0 or args.connections < 1 or not 1 <= args.batch <= 1000:
        parser.error("--records and --connections must be at least 1, --warmup at least 0, --batch 1 to 1000")
    if not os.path.exists(JAR):
        sys.exit("no %s: run mvn -B -DskipTests package first (or set RUNWAY_JAR)" % JAR)
    failed = False
    for db in ("h2", "postgresql") if args.db == "all" else (args.db,):
        try:
            failed |= not bench(db, args)
        except Fail as e:
            print("%s: failed: %s" % (db, e), file=sys.stderr)
            failed = True
        sys.stdout.flush()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
