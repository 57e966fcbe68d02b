#!/usr/bin/env bash
# What one unit of each kind of work costs PostgreSQL, measured on the packaged jar: statements,
# transactions, rows written and WAL bytes per workflow run (no steps; one `http` step), per agent run
# (two model turns, one tool call), per webhook delivery and per CRM record synced alone. The figures
# behind the capacity note in docs/operations.md.
#
#   mvn -B -q -DskipTests package     # this script builds nothing: it runs target/runway.jar
#   bench/pg-cost.sh                  # needs psql, python3 and a PostgreSQL superuser on 127.0.0.1:5432
#
# It makes a fresh database runway_cost_<pid> (dropped at the end, also on failure), sets
# log_statement=all on that database alone (ALTER DATABASE: the server's configuration is not
# touched) and starts the jar on it with the engine and webhooks on and loopback calls allowed. A
# tool, a fake model (OpenAI Chat Completions: a tool call, then "done") and a webhook receiver,
# all answering at once, run in this script's Python. The kinds run one after another, each alone
# (the webhook endpoint exists only while deliveries are measured), after a warm-up of their own:
#
#   run, no steps    N runs of a workflow without steps (they succeed in their start's commit)
#   run, http step   N runs of a workflow with one `http` step, from start to `succeeded`
#   agent run        N agent runs: model turn with a tool call, the tool, model turn with text
#   webhook delivery N runs without steps with an endpoint subscribed to run.succeeded, less the
#                    same runs without it: what the delivery adds
#   CRM sync         N syncs of one new record each
#
# Each measurement waits until its work is done and the statistics have settled (backends report
# theirs at most every second, idle ones within 10 s, so it waits 11 s), and subtracts what the
# same time costs idle (heartbeats, polls), measured first and printed as its own row. How each
# figure is counted:
#   statements    lines the server logged for this database (log_statement=all), BEGIN, COMMIT and
#                 ROLLBACK left out; the script's own queries (marked) are left out too. Without a
#                 readable server log: n/a, and the scans and row changes of pg_stat_user_tables instead.
#   transactions  pg_stat_database.xact_commit of this database (read-only ones included), less the
#                 script's own; "write commits": commit records in the WAL of transactions that
#                 wrote to this database (those wait for a WAL flush).
#   rows written  tup_inserted + tup_updated + tup_deleted of this database (tables, indexes not counted).
#   WAL bytes     the WAL records that touch this database's relations, and their transactions' commit
#                 records (pg_waldump over the interval), so other databases' work on the same server
#                 does not count; beside it the whole server's pg_wal_lsn_diff over the interval.
#
# Settings: BENCH_N (200 units a kind), BENCH_WARMUP (30), BENCH_CONCURRENCY (8 client threads
# starting the work), BENCH_IDLE_SECONDS (20), BENCH_TIMEOUT_SECONDS (900: the whole script),
# BENCH_PG_USER (postgres), BENCH_PG_LOG (the server's log file; found under /var/log/postgresql),
# RUNWAY_JAR (target/runway.jar), RUNWAY_JAVA_OPTS (instead of config/jvm.options).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JAR=${RUNWAY_JAR:-$ROOT/target/runway.jar}
PG_USER=${BENCH_PG_USER:-postgres}
DB=runway_cost_$$
WORK=$(mktemp -d /tmp/runway-cost-XXXX)
export MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-2}  # as ./run.sh sets it

[ -f "$JAR" ] || { echo "pg-cost: no $JAR; run mvn -B -q -DskipTests package first" >&2; exit 2; }
command -v psql >/dev/null || { echo "pg-cost: psql is missing" >&2; exit 2; }
pg() { psql "postgresql://$PG_USER@127.0.0.1:5432/postgres" -Atqc "$1"; }
pg "SELECT 1" >/dev/null || { echo "pg-cost: PostgreSQL does not answer on 127.0.0.1:5432" >&2; exit 2; }

# The jar (its pid in $WORK/jar.pid) and the database go away however the script ends.
cleanup() {
  if [ -s "$WORK/jar.pid" ]; then kill "$(cat "$WORK/jar.pid")" 2>/dev/null || true; sleep 1; fi
  pg "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pg "CREATE DATABASE $DB" >/dev/null
pg "ALTER DATABASE $DB SET log_statement = 'all'" >/dev/null

export PGCOST_DB=$DB PGCOST_WORK=$WORK PGCOST_JAR=$JAR PGCOST_ROOT=$ROOT PGCOST_PG_USER=$PG_USER
timeout --foreground "${BENCH_TIMEOUT_SECONDS:-900}" python3 - <<'PY'
import concurrent.futures, glob, http.server, json, os, re, socket, statistics, subprocess, sys, threading, time
import urllib.error, urllib.parse, urllib.request

DB, WORK, JAR, ROOT, PG_USER = (os.environ["PGCOST_" + k] for k in ("DB", "WORK", "JAR", "ROOT", "PG_USER"))
N = int(os.environ.get("BENCH_N", "200"))
WARMUP = int(os.environ.get("BENCH_WARMUP", "30"))
THREADS = int(os.environ.get("BENCH_CONCURRENCY", "8"))
IDLE_S = float(os.environ.get("BENCH_IDLE_SECONDS", "20"))
SETTLE_S = 11  # an idle backend reports its statistics within 10 s
MARK = "/* pg-cost observer */"  # on every query of this script, so the statement count leaves them out


class Fail(Exception):
    pass


# ---------------------------------------------------------------- PostgreSQL, as an observer

def psql(sql, db="postgres"):
    out = subprocess.run(["psql", "postgresql://%s@127.0.0.1:5432/%s" % (PG_USER, db), "-AtqF", "\t", "-c", sql],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise Fail("psql: %s" % out.stderr.strip())
    return [line.split("\t") for line in out.stdout.splitlines() if line]


observer_xacts = 0  # this script's transactions in the measured database (one per query there)


def in_db(sql):
    global observer_xacts
    observer_xacts += 1
    return psql(MARK + " " + sql, DB)


def setting(name):
    return psql("SHOW %s" % name)[0][0]


def find_log():
    if os.environ.get("BENCH_PG_LOG"):
        return os.environ["BENCH_PG_LOG"]
    current = psql("SELECT coalesce(pg_current_logfile(), '')")
    if current and current[0][0]:
        path = current[0][0]
        return path if path.startswith("/") else os.path.join(setting("data_directory"), path)
    major = setting("server_version_num")[:2]
    found = sorted(glob.glob("/var/log/postgresql/postgresql-%s-*.log" % major)) or sorted(
        glob.glob("/var/log/postgresql/*.log"))
    return found[0] if found else None


LOG = find_log()
if LOG and not os.access(LOG, os.R_OK):
    LOG = None
DB_OID = psql("SELECT oid FROM pg_database WHERE datname = '%s'" % DB)[0][0]
MAJOR = setting("server_version_num")[:2]
WALDUMP = next((p for p in ["/usr/lib/postgresql/%s/bin/pg_waldump" % MAJOR] if os.access(p, os.X_OK)), None) \
    or subprocess.run(["sh", "-c", "command -v pg_waldump"], capture_output=True, text=True).stdout.strip() or None
WAL_DIR = os.path.join(setting("data_directory"), "pg_wal")
if WALDUMP and not os.access(WAL_DIR, os.R_OK):
    WALDUMP = None
HAS_FORCE_FLUSH = bool(psql("SELECT 1 FROM pg_proc WHERE proname = 'pg_stat_force_next_flush'"))


def snapshot():
    """Counters now: the server log's size, the WAL position, the database's and its tables' statistics."""
    if HAS_FORCE_FLUSH:
        psql("SELECT pg_stat_force_next_flush()")
    s = {"t": time.monotonic(), "log": os.path.getsize(LOG) if LOG else 0,
         "lsn": psql("SELECT pg_current_wal_lsn()")[0][0]}
    row = psql("SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted "
               "FROM pg_stat_database WHERE datname = '%s'" % DB)[0]
    s.update(zip(("commits", "rollbacks", "ins", "upd", "del"), map(int, row)))
    s["observer"] = observer_xacts  # before this snapshot's own query in the database, which lands in the next interval
    s["tables"] = {r[0]: tuple(int(x or 0) for x in r[1:]) for r in in_db(
        "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del, seq_scan, idx_scan FROM pg_stat_user_tables")}
    return s


STATEMENT = re.compile(r"@%s LOG:\s+(?:statement|execute [^:]*): (.*)" % re.escape(DB), re.S)


def count_statements(start, end):
    """Statements the server logged for the database between two log offsets, by their first word."""
    kinds = {}
    with open(LOG, "rb") as f:
        f.seek(start)
        data = f.read(end - start).decode("utf-8", "replace")
    # An entry starts with the log_line_prefix's time; a statement's further lines follow it.
    for entry in re.split(r"\n(?=\d{4}-\d\d-\d\d )", data):
        m = STATEMENT.search(entry)
        if not m or MARK in m.group(1):
            continue
        words = m.group(1).split()
        word = words[0].upper().lstrip("(") if words else "EMPTY"  # pgjdbc's connection check sends an empty query
        kinds[word] = kinds.get(word, 0) + 1
    return kinds


WAL_LINE = re.compile(r"len \(rec/tot\):\s*(\d+)/\s*(\d+), tx:\s*(\d+),.*?desc: (\S+)")


def wal_of_db(start_lsn, end_lsn):
    """(bytes, write commits, bytes of full-page images) of the WAL between the two positions that
    belong to the database. An image is written for a page's first change after each checkpoint."""
    if start_lsn == end_lsn:
        return 0, 0, 0
    out = subprocess.run([WALDUMP, "-p", WAL_DIR, "-s", start_lsn, "-e", end_lsn], capture_output=True, text=True,
                         timeout=120)
    if not out.stdout:
        raise Fail("pg_waldump: %s" % out.stderr.strip()[:300])
    marker = "/%s/" % DB_OID
    ours, images, xids, commits = 0, 0, set(), []
    for line in out.stdout.splitlines():
        m = WAL_LINE.search(line)
        if not m:
            continue
        rec, size, tx, desc = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
        if line.startswith("rmgr: Transaction") and desc in ("COMMIT", "ABORT"):
            commits.append((tx, size, desc))
        elif marker in line:
            ours += size
            if " FPW" in line:
                images += size - rec  # about: the blocks' data beside the image count here too
            if tx != "0":
                xids.add(tx)
    mine = [c for c in commits if c[0] in xids]
    return ours + sum(c[1] for c in mine), sum(1 for c in mine if c[2] == "COMMIT"), images


def measure(label, units, work):
    """Runs work() between two settled snapshots: the interval's counters and its length."""
    time.sleep(SETTLE_S)
    before = snapshot()
    work()
    time.sleep(SETTLE_S)
    after = snapshot()
    seconds = after["t"] - before["t"]
    statements = count_statements(before["log"], after["log"]) if LOG else {}
    wal_bytes, write_commits, images = wal_of_db(before["lsn"], after["lsn"]) if WALDUMP else (None, None, None)
    tables = {}
    for name, b in after["tables"].items():
        a = before["tables"].get(name, (0,) * 5)
        tables[name] = tuple(x - y for x, y in zip(b, a))
    return {"label": label, "units": units, "seconds": seconds,
            "statements": sum(v for k, v in statements.items() if k not in ("BEGIN", "COMMIT", "ROLLBACK", "EMPTY")),
            "writes": sum(v for k, v in statements.items() if k in ("INSERT", "UPDATE", "DELETE")),
            "by_word": statements,
            "commits": after["commits"] - before["commits"] - (after["observer"] - before["observer"]),
            "write_commits": write_commits,
            "rows": sum(after[k] - before[k] for k in ("ins", "upd", "del")),
            "wal_db": wal_bytes, "wal_images": images,
            "wal_all": int(float(psql("SELECT pg_wal_lsn_diff('%s', '%s')" % (after["lsn"], before["lsn"]))[0][0])),
            "proxy": sum(sum(t) for t in tables.values()),
            "tables": tables}


# ---------------------------------------------------------------- the tool, the model, the receiver

class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 1024
    daemon_threads = True


class Local(http.server.BaseHTTPRequestHandler):
    """Answers every POST at once: the tool ({"ok": true}), the model (a tool call, then text), the receiver (204)."""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    calls = {"tool": 0, "model": 0, "hook": 0}
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/hook"):
            self.count("hook")
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path.rstrip("/") == "/v1/chat/completions":
            self.count("model")
            messages = json.loads(body).get("messages", [])
            if messages and messages[-1].get("role") == "tool":
                message, finish = {"role": "assistant", "content": "done"}, "stop"
            else:
                message = {"role": "assistant", "content": None, "tool_calls": [{
                    "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"x\"}"}}]}
                finish = "tool_calls"
            return self.answer({"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                                "model": "fake", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})
        self.count("tool")
        self.answer({"ok": True})

    def count(self, what):
        with self.lock:
            self.calls[what] += 1

    def answer(self, payload):
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


local = Server(("127.0.0.1", 0), Local)
threading.Thread(target=local.serve_forever, daemon=True).start()
LOCAL = "http://127.0.0.1:%d" % local.server_address[1]


# ---------------------------------------------------------------- Runway

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jvm_options():
    if "RUNWAY_JAVA_OPTS" in os.environ:
        return os.environ["RUNWAY_JAVA_OPTS"].split()
    with open(os.path.join(ROOT, "config", "jvm.options")) as f:
        return " ".join(line.strip() for line in f if not line.startswith("#")).split()


PORT = free_port()
BASE = "http://127.0.0.1:%d" % PORT
env = dict(os.environ, RUNWAY_HTTP_PORT=str(PORT), RUNWAY_DB_URL="jdbc:postgresql://127.0.0.1:5432/" + DB,
           RUNWAY_DB_USER=PG_USER, RUNWAY_DB_PASSWORD="", RUNWAY_WORKFLOWS_DIR="", RUNWAY_AGENTS_DIR="",
           RUNWAY_HTTP_REQUEST_LOG="false", RUNWAY_ENGINE_ENABLED="true", RUNWAY_WEBHOOKS_ENABLED="true",
           RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS="true",  # the tool and the receiver are on 127.0.0.1
           RUNWAY_AGENTS_MODEL_BASE_URL=LOCAL + "/v1", RUNWAY_RATELIMIT_PER_KEY_PER_SECOND="0",
           RUNWAY_QUOTAS_RUNS_PER_MINUTE_PER_WORKSPACE="0", RUNWAY_HTTP_MAX_IN_FLIGHT_PER_KEY="100000",
           RUNWAY_BOOTSTRAP_ADMIN_KEY="false", RUNWAY_SECRETS_KEY_FILE=os.path.join(WORK, "secrets.key"))
env.pop("RUNWAY_CONFIG", None)
keys = subprocess.run(["java", "-jar", JAR, "keys", "create", "--workspace", "bench", "--name", "bench"],
                      env=env, cwd=WORK, capture_output=True, text=True, timeout=120)
if keys.returncode != 0:
    sys.exit("pg-cost: runway keys create failed: %s" % (keys.stderr or keys.stdout).strip())
KEY = keys.stdout.strip().splitlines()[-1].strip()
server_log = open(os.path.join(WORK, "server.log"), "w")
jar = subprocess.Popen(["java"] + jvm_options() + ["-jar", JAR], env=env, cwd=WORK, stdout=server_log,
                       stderr=subprocess.STDOUT)
with open(os.path.join(WORK, "jar.pid"), "w") as f:
    f.write(str(jar.pid))


def server_tail():
    server_log.flush()
    with open(os.path.join(WORK, "server.log"), errors="replace") as f:
        return "".join(f.readlines()[-20:])


def call(method, path, body=None):
    req = urllib.request.Request(BASE + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raise Fail("%s %s: %d %s" % (method, path, e.code, e.read()[:300].decode(errors="replace")))


def in_parallel(count, one):
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(one, range(count)))


def wait_for(what, done, limit_s=300):
    """Polls done() (a query of this script's, so it is left out of the counts) every 0.5 s."""
    deadline = time.monotonic() + limit_s
    while not done():
        if jar.poll() is not None:
            raise Fail("the server exited with %d:\n%s" % (jar.returncode, server_tail()))
        if time.monotonic() > deadline:
            raise Fail("%s: not done after %d s" % (what, limit_s))
        time.sleep(0.5)


def runs_ended(project, count):
    def done():
        rows = dict((r[0], int(r[1])) for r in in_db(
            "SELECT status, count(*) FROM run WHERE project = '%s' GROUP BY status" % project))
        bad = {k: v for k, v in rows.items() if k in ("failed", "canceled", "rejected")}
        if bad:
            raise Fail("runs of %s ended %s" % (project, bad))
        return rows.get("succeeded", 0) >= count
    wait_for("runs of " + project, done)


def runs(path, body, project):
    """A work() that starts `count` runs of project `project` and waits until they all succeeded."""
    started = [0]

    def work(count):
        def one(i):
            call("POST", path, dict(body, project=project))
        in_parallel(count, one)
        started[0] += count
        runs_ended(project, started[0])
    return work


def deliveries_done(count):
    def done():
        rows = dict((r[0], int(r[1])) for r in in_db("SELECT status, count(*) FROM webhook_delivery GROUP BY status"))
        return rows.get("succeeded", 0) >= count and rows.get("pending", 0) == 0
    wait_for("webhook deliveries", done)


def crm_work(prefix):
    synced = [0]  # every sync creates a record of its own

    def work(count):
        first = synced[0]
        synced[0] += count

        def one(i):
            answer = call("POST", "/v1/crm/contacts/records/sync", {"records": [{
                "external_id": "%s-%d" % (prefix, first + i),
                "properties": {"email": "p%d@example.com" % i, "first_name": "Ann", "stage": "lead"}}]})
            if answer["summary"]["created"] != 1:
                raise Fail("a sync answered %s" % answer["summary"])
        in_parallel(count, one)
    return work


def main():
    deadline = time.monotonic() + 90
    while True:
        if jar.poll() is not None:
            raise Fail("the server exited with %d before it was ready:\n%s" % (jar.returncode, server_tail()))
        try:
            with urllib.request.urlopen(BASE + "/readyz", timeout=1):
                break
        except Exception:
            if time.monotonic() > deadline:
                raise Fail("the server was not ready after 90 s:\n" + server_tail())
            time.sleep(0.1)
    call("PUT", "/v1/workflows/cost-none", {"steps": []})
    call("PUT", "/v1/workflows/cost-http", {"steps": [{"type": "http", "url": LOCAL + "/tool"}]})
    call("PUT", "/v1/agents/cost-agent", {"model": "fake", "instructions": "Look it up.", "tools": [{
        "name": "lookup", "url": LOCAL + "/tool",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]})
    print("pg-cost: PostgreSQL %s, database %s, %d units a kind after %d of warm-up, started from %d threads"
          % (setting("server_version"), DB, N, WARMUP, THREADS), file=sys.stderr)

    results = []
    def add(label, work, units=N):
        print("pg-cost: %s" % label, file=sys.stderr)
        work(WARMUP)
        results.append(measure(label, units, lambda: work(units)))

    # Idle first: what the same time costs with nothing to do (heartbeats, the engine's and webhooks' polls).
    results.append(measure("idle, per second", 1, lambda: time.sleep(IDLE_S)))
    add("run, no steps", runs("/v1/workflows/cost-none/runs", {}, "none"))
    add("run, one http step", runs("/v1/workflows/cost-http/runs", {}, "http"))
    add("agent run (2 model turns, 1 tool call)", runs("/v1/agents/cost-agent/runs", {"input": "x"}, "agent"))
    endpoint = call("POST", "/v1/webhook_endpoints", {"url": LOCAL + "/hook", "event_types": ["run.succeeded"]})
    hooked = runs("/v1/workflows/cost-none/runs", {}, "hooked")
    delivered = [0]

    def hooked_work(count):
        hooked(count)
        delivered[0] += count
        deliveries_done(delivered[0])
    add("run, no steps + 1 delivery", hooked_work)
    call("DELETE", "/v1/webhook_endpoints/" + endpoint["id"])
    add("CRM sync of one record", crm_work("c"))
    if jar.poll() is not None:
        raise Fail("the server exited with %d:\n%s" % (jar.returncode, server_tail()))
    report(results)


def report(results):
    idle = results[0]
    per_s = {k: idle[k] / idle["seconds"] for k in ("statements", "writes", "commits", "rows", "proxy")}
    for k in ("write_commits", "wal_db", "wal_images", "wal_all"):
        per_s[k] = None if idle[k] is None else idle[k] / idle["seconds"]

    def net(r, k):
        if r[k] is None:
            return None
        return (r[k] - per_s[k] * r["seconds"]) / r["units"]

    rows = []
    for r in results:
        if r is idle:
            rows.append((r["label"], r["seconds"], {k: per_s[k] for k in per_s}))
        else:
            rows.append((r["label"], r["seconds"], {k: net(r, k) for k in per_s}))
    by_label = {label: v for label, _, v in rows}
    if "run, no steps + 1 delivery" in by_label:
        a, b = by_label["run, no steps + 1 delivery"], by_label["run, no steps"]
        rows.insert(len(rows) - 1, ("webhook delivery (the difference)", None,
                                    {k: None if a[k] is None or b[k] is None else a[k] - b[k] for k in a}))

    def fmt(v, digits=1):
        return "n/a" if v is None else ("%.*f" % (digits, v))

    stmt_note = ("logged with log_statement=all (%s); BEGIN, COMMIT, ROLLBACK, empty queries (the pool's connection"
                 " checks) and this script's queries left out; writes: INSERT, UPDATE, DELETE" % LOG
                 if LOG else "n/a: the server log is not readable here; see the proxy column (scans + row changes "
                 "in pg_stat_user_tables)")
    print()
    print("PostgreSQL cost per unit, %s, N=%d (idle cost subtracted; idle row: per second)" % (time.strftime("%Y-%m-%d"), N))
    head = ("kind", "statements", "writes", "commits", "write commits", "rows written", "WAL bytes (this db)",
            "of which page images", "WAL bytes (server)", "proxy", "seconds")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for label, seconds, v in rows:
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, fmt(v["statements"]), fmt(v["writes"]), fmt(v["commits"], 2), fmt(v["write_commits"], 2),
            fmt(v["rows"]), fmt(v["wal_db"], 0), fmt(v["wal_images"], 0), fmt(v["wal_all"], 0), fmt(v["proxy"]),
            "" if seconds is None else "%.0f" % seconds))
    print()
    print("statements: " + stmt_note)
    print("commits: pg_stat_database.xact_commit (read-only transactions too), this script's own left out;"
          " write commits: COMMIT records in the WAL of transactions that wrote to this database")
    print("rows written: tup_inserted + tup_updated + tup_deleted of the database")
    print("WAL: this db = pg_waldump records on this database's relations and their commit records%s, page images"
          " = the full-page images among them (a page's first change after a checkpoint; more with frequent"
          " checkpoints); server ="
          " pg_wal_lsn_diff(pg_current_wal_lsn()) over the interval, everything on the server" %
          ("" if WALDUMP else " (n/a: pg_waldump or pg_wal not readable)"))
    print("proxy: seq_scan + idx_scan + n_tup_ins + n_tup_upd + n_tup_del summed over pg_stat_user_tables")
    print()
    print("Rows written per unit by table (inserted/updated/deleted, idle not subtracted):")
    for r in results[1:]:
        parts = []
        for name, (ins, upd, dele, _, _) in sorted(r["tables"].items()):
            if ins or upd or dele:
                parts.append("%s %s/%s/%s" % (name, fmt(ins / r["units"], 2), fmt(upd / r["units"], 2),
                                               fmt(dele / r["units"], 2)))
        print("  %s: %s" % (r["label"], ", ".join(parts) or "none"))
    print()
    print("Statements per unit by first word (idle not subtracted):")
    for r in results:
        words = ", ".join("%s %s" % (k, fmt(v / r["units"] if r is not idle else v / r["seconds"], 2))
                          for k, v in sorted(r["by_word"].items(), key=lambda kv: -kv[1]))
        print("  %s: %s" % (r["label"], words or "n/a"))
    print("local calls: %s" % Local.calls)
    print("JSON " + json.dumps([{"label": label, "seconds": seconds, **v} for label, seconds, v in rows]))


try:
    main()
except Fail as e:
    sys.exit("pg-cost: %s" % e)
finally:
    if jar.poll() is None:
        jar.terminate()
        try:
            jar.wait(30)
        except subprocess.TimeoutExpired:
            jar.kill()
    local.shutdown()
PY
