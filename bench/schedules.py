#!/usr/bin/env python3
"""5,000 schedules due in the same minute across 50 workspaces: each fires once, and how late.

Starts target/runway.jar (config/jvm.options, engine on) on a fresh H2 database, or, with
BENCH_DB_URL, two instances on that PostgreSQL database (it should be fresh); makes an all-scopes
key in each of 50 workspaces; PUTs 100 workflows (no steps) in each, every one with one schedule
`{"cron": "M H * * *"}` for the same minute T (UTC), the first minute at least 40 s after the PUTs
begin. After T it reads every workspace's runs (the list by project) until all 5,000 are there or
60 s have passed, and prints how many runs each workflow got (target: exactly one) and the start
lateness, created_at - T by the server's clock: median, p99 and max (target p99 <= 2 s).

usage: python3 bench/schedules.py          (after mvn -B -DskipTests package built the jar)
  RUNWAY_JAR     the jar (default: target/runway.jar)
  BENCH_DB_URL   jdbc:postgresql://... for two instances on PostgreSQL (BENCH_DB_USER: its user)
"""
import concurrent.futures, json, os, statistics, subprocess, sys, tempfile, time, urllib.error, urllib.request
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agents  # noqa: E402  (the Runway process helper and time parsing of bench/agents.py)

WORKSPACES, PER_WORKSPACE = 50, 100


def keys_for(runway, env_db):
    """An all-scopes key in each workspace s00..s49, made with the CLI beside the running server."""
    env = dict(os.environ, **env_db)

    def make(i):
        out = subprocess.run(["java", "-jar", agents.JAR, "keys", "create", "--workspace", "s%02d" % i, "--name", "bench"],
                             env=env, cwd=runway.work, capture_output=True, text=True)
        if out.returncode != 0:
            raise agents.Fail("keys create failed: %s" % (out.stderr or out.stdout).strip())
        return out.stdout.strip().splitlines()[-1].strip()

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        return list(pool.map(make, range(WORKSPACES)))


def call(base, key, method, path, body=None):
    """(status, parsed JSON or text) of one request with this key."""
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def main():
    if not os.path.exists(agents.JAR):
        sys.exit("no %s: run mvn -B -DskipTests package first (or set RUNWAY_JAR)" % agents.JAR)
    pg = os.environ.get("BENCH_DB_URL")
    # H2 with AUTO_SERVER: the keys command reaches the file through the running server.
    db_url = pg or "jdbc:h2:file:%s/runway;AUTO_SERVER=TRUE" % tempfile.mkdtemp(prefix="runway-bench-h2-")
    settings = {"db.url": db_url}
    if pg:
        settings["db.user"] = os.environ.get("BENCH_DB_USER", "")
    instances = [agents.Runway(**settings)]
    try:
        if pg:
            instances.append(agents.Runway(**settings))
        first = instances[0]
        env_db = {"RUNWAY_DB_URL": db_url}
        if pg:
            env_db["RUNWAY_DB_USER"] = os.environ.get("BENCH_DB_USER", "")
        keys = keys_for(first, env_db)
        begin = time.time()
        t = (int(begin) // 60 + 1) * 60
        while t < begin + 40:
            t += 60
        when = datetime.fromtimestamp(t, timezone.utc)
        cron = "%d %d * * *" % (when.minute, when.hour)
        jobs = [(k, "job-%03d" % j) for k in keys for j in range(PER_WORKSPACE)]

        def put(job):
            key, wid = job
            base = instances[hash(wid) % len(instances)].base
            status, answer = call(base, key, "PUT", "/v1/workflows/" + wid,
                                  {"steps": [], "triggers": [{"schedule": {"cron": cron}, "project": "bench"}]})
            if status not in (200, 201):
                raise agents.Fail("PUT %s answered %d: %s" % (wid, status, agents.short(answer)))

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(put, jobs))
        put_s = time.time() - begin
        if time.time() >= t:
            raise agents.Fail("the PUTs took %.1f s, past the minute they schedule" % put_s)
        print("schedules: %d workflows in %d workspaces PUT in %.1f s, each scheduled for %s (cron %r), %d instance(s) on %s"
              % (len(jobs), WORKSPACES, put_s, when.strftime("%H:%M:%SZ"), cron, len(instances), "PostgreSQL" if pg else "H2"))
        time.sleep(max(0, t - time.time()) + 1)
        deadline = time.time() + 60
        while True:
            runs = []  # (workspace index, run)
            for i, key in enumerate(keys):
                after = None
                while True:
                    path = "/v1/runs?limit=100&project=bench" + ("&starting_after=" + after if after else "")
                    status, page = call(first.base, key, "GET", path)
                    if status != 200:
                        raise agents.Fail("GET %s answered %d: %s" % (path, status, agents.short(page)))
                    runs += [(i, r) for r in page["data"]]
                    if not page["has_more"]:
                        break
                    after = page["next_cursor"]
            if len(runs) >= len(jobs) or time.time() > deadline:
                break
            time.sleep(1)
        per_workflow = {}
        for i, r in runs:
            per_workflow[(i, r["workflow"])] = per_workflow.get((i, r["workflow"]), 0) + 1
        ok = len(per_workflow) == len(jobs) and all(n == 1 for n in per_workflow.values())
        late = sorted(agents.ts(r["created_at"]) - t for _, r in runs)
        if not late:
            raise agents.Fail("no run started within 60 s of %s" % when.strftime("%H:%M:%SZ"))
        p99 = statistics.quantiles(late, n=100)[98] if len(late) > 1 else late[0]
        print("  runs: %d for %d schedules, %d workflows with exactly one (target: all: %s); start lateness after %s: "
              "median %.3f s, p99 %.3f s, max %.3f s (target p99 <= 2 s: %s)"
              % (len(runs), len(jobs), sum(1 for n in per_workflow.values() if n == 1), agents.verdict(ok),
                 when.strftime("%H:%M:%SZ"), statistics.median(late), p99, late[-1], agents.verdict(p99 <= 2.0)))
        return ok
    finally:
        for r in instances:
            r.stop()


if __name__ == "__main__":
    try:
        sys.exit(0 if main() else 1)
    except agents.Fail as e:
        sys.exit("schedules: failed: %s" % e)
