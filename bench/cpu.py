#!/usr/bin/env python3
"""CPU per start-run: Runway beside a minimal group-commit server, side by side in one run.

For each database (H2; PostgreSQL when BENCH_PG_URL's server answers), rounds A B A B (BENCH_ROUNDS pairs,
default 2; A B C A B C with BENCH_BASE_JAR, C being that older Runway jar): A is Runway
(target/runway.jar, started with config/jvm.options as ./run.sh starts it, request log and per-key
rate limit off, on a fresh database), B is bench/MinimalServer.java (Javalin + Hikari, a durable
insert per request committed in groups by one writer; same JVM options) on a fresh database of
its own. Each round: the server warms up under the same load until the JIT has done its work, in
windows of 10 s until its compiler threads (C1, C2) used at most 5% of the server's CPU in one
(at least BENCH_WARMUP_SECONDS, default 20, at most BENCH_WARMUP_MAX_SECONDS, default 180; the
warm-up time is printed: Runway has several times the minimal server's code to compile), then
`wrk -t2 -c32` for BENCH_SECONDS (default 15) on POST /v1/workflows/noop/runs (a workflow without
steps), reading the server's CPU time (/proc/<pid>/stat, user + system) before and after, and on
PostgreSQL that of the database's processes too. Prints
each round, the medians, Runway's throughput as a share of the minimal server's (target: >= 0.9 on
H2, >= 0.7 on PostgreSQL, p99 <= 25 ms), the CPU each spends per start in microseconds, and with
BENCH_BASE_JAR Runway's CPU a start against that jar's (target: at most half). Each round ends with the
floor, bench/StartFloor.java on a fresh database: a start's rows (the run, its two events) stored through
Runway's own schema and group commit, 32 starts a commit, with nothing else (no HTTP, no JSON, no key): the CPU a
start takes before any request handling, against Runway's and half the base jar's (JVM and PostgreSQL
together on PostgreSQL); with it, the minimal server's request handling (the CPU of its threads but its
writer, H2's background writer, the garbage collector and the JIT: a lower bound) and their sum, the least
that a Javalin server storing what Runway stores could spend a start.

usage: python3 bench/cpu.py [h2|pg|both]      (default: both)
  RUNWAY_JAR, RUNWAY_JAVA_OPTS as for bench/agents.py; BENCH_PG_URL (jdbc:postgresql://127.0.0.1:5432/postgres),
  BENCH_PG_USER (postgres): a database bench_cpu_<n> is made there for each round and dropped after.
"""
import os, shutil, signal, statistics, subprocess, sys, tempfile, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agents  # noqa: E402

ROOT = agents.ROOT
WARM = int(os.environ.get("BENCH_WARMUP_SECONDS", "20"))
WARM_MAX = int(os.environ.get("BENCH_WARMUP_MAX_SECONDS", "180"))
WARM_WINDOW = 10
WARM_COMPILER_SHARE = 0.05
SECS = int(os.environ.get("BENCH_SECONDS", "15"))
PG_URL = os.environ.get("BENCH_PG_URL", "jdbc:postgresql://127.0.0.1:5432/postgres")
PG_USER = os.environ.get("BENCH_PG_USER", "postgres")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))
BASE_JAR = os.environ.get("BENCH_BASE_JAR")
# Not the minimal server's request handling: its group commit's writer, H2's background writer, the garbage
# collector (the serial collector runs in the VM thread: on H2 it collects the commits' garbage too) and the JIT.
NOT_REQUESTS = ("writer", "MVStore", "VM Thread", "C1 Compiler", "C2 Compiler")
FLOOR_WARM = 40  # the floor's code is small: C2 is done with it well before
TICKS = os.sysconf("SC_CLK_TCK")
KEY = "bench-minimal-key-0123456789"
LUA = """
function done(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %.1f %.1f\\n", summary.requests, summary.errors.status,
    summary.duration, latency:percentile(50), latency:percentile(99)))
end
wrk.method = "POST"
wrk.body = '{"project":"bench","inputs":{"order":"A-1001","amount":4200}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_KEY")
"""


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def threads_cpu_seconds(pid, names):
    """CPU time of the threads of process pid whose name starts with one of names."""
    total = 0.0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if not f.read().startswith(names):
                    continue
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
        except OSError:
            pass  # a thread that ended meanwhile
    return total


def compiler_cpu_seconds(pid):
    """CPU time of the JVM's JIT compiler threads (C1, C2) of process pid."""
    return threads_cpu_seconds(pid, ("C1 Compiler", "C2 Compiler"))


def warm_up(pid, target, key, script):
    """Load until a window in which the JIT compilers used at most WARM_COMPILER_SHARE of the
    process's CPU (at least WARM, at most WARM_MAX seconds); the seconds it took, and whether it settled."""
    waited = 0
    while True:
        process, compilers = cpu_seconds(pid), compiler_cpu_seconds(pid)
        wrk(target, WARM_WINDOW, key, script)
        waited += WARM_WINDOW
        share = (compiler_cpu_seconds(pid) - compilers) / max(cpu_seconds(pid) - process, 1e-9)
        if waited >= WARM and share <= WARM_COMPILER_SHARE:
            return waited, True
        if waited >= WARM_MAX:
            return waited, False


def postgres_cpu_seconds():
    """CPU time of every process named postgres (the local server and its back-ends), exited ones included."""
    total = 0.0
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % pid) as f:
                head, _, tail = f.read().rpartition(")")
            if head.endswith("(postgres"):
                fields = tail.split()
                total += sum(int(x) for x in fields[11:15]) / TICKS  # utime, stime, children's
        except (OSError, ValueError):
            pass
    return total


def wrk(url, seconds, key, script):
    out = subprocess.run(["wrk", "-t2", "-c32", "-d%ds" % seconds, "--latency", "-s", script, url],
                         capture_output=True, text=True, timeout=seconds + 60, env=dict(os.environ, BENCH_KEY=key))
    line = next((l for l in out.stdout.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        raise agents.Fail("wrk gave no result:\n" + out.stdout + out.stderr)
    requests, non2xx, duration_us, p50_us, p99_us = line.split()[1:]
    return int(requests), int(non2xx), int(duration_us) / 1e6, float(p50_us) / 1000, float(p99_us) / 1000


def psql(sql, database="postgres"):
    host = PG_URL.split("//", 1)[1].split("/", 1)[0]
    h, _, port = host.partition(":")
    subprocess.run(["psql", "-q", "-h", h, "-p", port or "5432", "-U", PG_USER, "-d", database, "-c", sql],
                   check=True, capture_output=True, text=True)


def pg_reachable():
    try:
        psql("SELECT 1")
        return True
    except (subprocess.CalledProcessError, FileNotFoundError):
        return False


class Minimal:
    """bench/MinimalServer.java on its own JDBC URL."""

    def __init__(self, url, user):
        self.port = agents.free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.key = KEY
        self.log = tempfile.NamedTemporaryFile(prefix="minimal-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(["java"] + agents.jvm_options() + ["-cp", agents.JAR,
                                      os.path.join(ROOT, "bench", "MinimalServer.java"), url, user, str(self.port), KEY],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while True:
            if self.proc.poll() is not None:
                raise agents.Fail("the minimal server exited:\n" + open(self.log.name).read()[-2000:])
            try:
                urllib.request.urlopen(self.base + "/", timeout=1)
            except urllib.error.HTTPError:
                break  # it answers (404)
            except Exception:
                if time.monotonic() > deadline:
                    raise agents.Fail("the minimal server did not start in 90 s")
                time.sleep(0.1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        os.unlink(self.log.name)


def floor(pg_url):
    """bench/StartFloor.java on a fresh database: a start's rows stored through Runway's group commit, 32 starts
    a commit, nothing else; its figures as round_'s (no latency: it answers no requests)."""
    h2_dir = tempfile.mkdtemp(prefix="floor-h2-")
    try:
        out = subprocess.run(["java"] + agents.jvm_options() + ["-cp", agents.JAR, os.path.join(ROOT, "bench", "StartFloor.java"),
                              pg_url or "jdbc:h2:file:%s/db" % h2_dir, PG_USER if pg_url else "sa", str(FLOOR_WARM), str(SECS)],
                             capture_output=True, text=True, timeout=FLOOR_WARM + SECS + 120)
    finally:
        shutil.rmtree(h2_dir, ignore_errors=True)
    line = next((l for l in out.stdout.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        raise agents.Fail("StartFloor gave no result:\n" + (out.stdout + out.stderr)[-2000:])
    starts, seconds, cpu, pg_cpu = (float(x) for x in line.split()[1:])
    return {"rate": starts / seconds, "p50": 0.0, "p99": 0.0, "cpu_us": cpu / starts * 1e6, "requests_us": 0.0,
            "pg_us": pg_cpu / starts * 1e6,
            "warm": FLOOR_WARM, "settled": True}


def round_(kind, database, n, script):
    """One server on a fresh database: warm-up, then the measured load; its figures."""
    pg_db = None
    if database == "pg":
        pg_db = "bench_cpu_%d_%d" % (os.getpid(), n)
        psql("CREATE DATABASE " + pg_db)
        url = PG_URL.rsplit("/", 1)[0] + "/" + pg_db
    try:
        if kind == "floor":
            return floor(url if database == "pg" else None)
        if kind in ("runway", "base"):
            settings = {} if database == "h2" else {"db.url": url, "db.user": PG_USER}
            jar, agents.JAR = agents.JAR, BASE_JAR if kind == "base" else agents.JAR
            try:
                server = agents.Runway(**settings)
            finally:
                agents.JAR = jar
        else:
            h2_dir = tempfile.mkdtemp(prefix="minimal-h2-")
            server = Minimal(url if database == "pg" else "jdbc:h2:file:%s/db" % h2_dir, PG_USER if database == "pg"
                             else "sa")
        try:
            if kind != "minimal":
                server.ok("PUT", "/v1/workflows/noop", {"steps": []})
            target = server.base + "/v1/workflows/noop/runs"
            warm, settled = warm_up(server.proc.pid, target, server.key, script)
            before, pg_before = cpu_seconds(server.proc.pid), postgres_cpu_seconds()
            not_requests_before = threads_cpu_seconds(server.proc.pid, NOT_REQUESTS)
            requests, non2xx, duration, p50, p99 = wrk(target, SECS, server.key, script)
            cpu = cpu_seconds(server.proc.pid) - before
            # The minimal server's request handling, a lower bound of it (see NOT_REQUESTS; unused for Runway's jars).
            requests_cpu = cpu - (threads_cpu_seconds(server.proc.pid, NOT_REQUESTS) - not_requests_before)
            pg_cpu = postgres_cpu_seconds() - pg_before
        finally:
            server.stop()
            if kind == "minimal":
                shutil.rmtree(h2_dir if database == "h2" else "", ignore_errors=True)
        if non2xx:
            raise agents.Fail("%s on %s: %d answers were not 2xx" % (kind, database, non2xx))
        return {"rate": requests / duration, "p50": p50, "p99": p99, "cpu_us": cpu / requests * 1e6,
                "requests_us": requests_cpu / requests * 1e6,
                "pg_us": pg_cpu / requests * 1e6 if database == "pg" else 0.0, "warm": warm, "settled": settled}
    finally:
        if pg_db:
            psql("DROP DATABASE IF EXISTS " + pg_db)


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "both"
    if shutil.which("wrk") is None:
        sys.exit("bench: wrk is missing (Debian: apt-get install wrk)")
    if not os.path.exists(agents.JAR):
        sys.exit("no %s: run mvn -B -DskipTests package first" % agents.JAR)
    if BASE_JAR and not os.path.exists(BASE_JAR):
        sys.exit("no BENCH_BASE_JAR %s" % BASE_JAR)
    databases = [d for d in ("h2", "pg") if which in (d, "both")]
    if "pg" in databases and not pg_reachable():
        print("PostgreSQL at %s does not answer: H2 only" % PG_URL)
        databases.remove("pg")
    script = os.path.join(tempfile.mkdtemp(prefix="runway-bench-cpu-"), "start.lua")
    with open(script, "w") as f:
        f.write(LUA)
    kinds = ["runway", "minimal"] + (["base"] if BASE_JAR else []) + ["floor"]
    try:
        measure(databases, kinds, script)
    finally:
        shutil.rmtree(os.path.dirname(script), ignore_errors=True)


def measure(databases, kinds, script):
    """The rounds on each database, and their medians and ratios, printed."""
    n = 0
    for database in databases:
        results = {k: [] for k in kinds}
        for _ in range(ROUNDS):
            for kind in kinds:
                n += 1
                r = round_(kind, database, n, script)
                results[kind].append(r)
                print("%-3s %-8s %8.0f starts/s  p50 %6.2f ms  p99 %6.2f ms  CPU %6.0f us/start%s  warm after %d s%s" % (
                    database, kind, r["rate"], r["p50"], r["p99"], r["cpu_us"],
                    ("  (PostgreSQL %4.0f us/start)" % r["pg_us"] if database == "pg" else "")
                    + ("  (requests %3.0f us/start)" % r["requests_us"] if kind == "minimal" else ""), r["warm"],
                    "" if r["settled"] else " (JIT not settled)"), flush=True)
        med = {k: {f: statistics.median(r[f] for r in v) for f in ("rate", "p50", "p99", "cpu_us", "requests_us", "pg_us", "warm")}
               for k, v in results.items()}
        target = 0.9 if database == "h2" else 0.7
        ratio = med["runway"]["rate"] / med["minimal"]["rate"]
        for kind in kinds:
            m = med[kind]
            print("%s median %-8s %6.0f starts/s  p99 %5.1f ms  CPU %4.0f us/start%s  warm after %.0f s" % (
                database, kind, m["rate"], m["p99"], m["cpu_us"],
                "  PostgreSQL %4.0f us/start" % m["pg_us"] if database == "pg" else "", m["warm"]))
        print("%s Runway/minimal throughput %.2f (target >= %.1f: %s), Runway p99 <= 25 ms: %s, Runway's CPU a start "
              "%.2fx the minimal's" % (database, ratio, target, agents.verdict(ratio >= target),
                                       agents.verdict(med["runway"]["p99"] <= 25),
                                       med["runway"]["cpu_us"] / med["minimal"]["cpu_us"]), flush=True)
        if BASE_JAR:
            half = med["runway"]["cpu_us"] / med["base"]["cpu_us"]
            print("%s Runway's CPU a start %.2fx the base jar's (target <= 0.5: %s); throughput %.2fx" % (
                database, half, agents.verdict(half <= 0.5), med["runway"]["rate"] / med["base"]["rate"]), flush=True)
        f = med["floor"]
        both = lambda k: med[k]["cpu_us"] + med[k]["pg_us"]
        bound = both("floor") + med["minimal"]["requests_us"]
        print("%s floor (a start's rows through the group commit, nothing else): CPU %.0f us/start%s, %.2f of Runway's; "
              "with the minimal server's request handling (its request threads, %.0f us) %.0f us%s" % (
                  database, f["cpu_us"], " + PostgreSQL %.0f = %.0f" % (f["pg_us"], both("floor")) if database == "pg" else "",
                  both("floor") / both("runway"), med["minimal"]["requests_us"], bound,
                  "; half the base jar's is %.0f" % (both("base") / 2) if BASE_JAR else ""), flush=True)


if __name__ == "__main__":
    # Stopped with SIGTERM (kill, timeout), end as on an error, so that the servers of the round are stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        main()
    except agents.Fail as e:
        print(str(e), file=sys.stderr)
        sys.exit(1)
