#!/usr/bin/env python3
"""Concurrency keys under load: N runs on K keys with `limit: 1` against a tool that answers late.

Starts target/runway.jar on a fresh H2 database (or RUNWAY_DB_URL), bench/Tool.java answering after
DELAY_MS, and a workflow of one http step with `"concurrency": {"key": "{{inputs.customer}}",
"limit": 1}`. Starts N runs (run i for key i % K) from 16 client threads, waits until every run
has ended, then checks from the runs' records and the workspace's events in commit order
(GET /v1/events: `run.started`, which a queued run gets when its turn comes, and `run.succeeded`) that
  - every run succeeded,
  - no two runs of a key were active at once (each started after the one before it ended),
  - each key's queued runs started in creation order (their ids sort by creation; two starts racing
    for a free place take it in commit order, as docs/api.md says),
and prints the total time from the first start to the last end, how many runs waited queued, and
how long the runs still queued when the last start was answered took to finish.

usage: python3 bench/concurrency.py [N=2000] [K=20] [DELAY_MS=10]   (after mvn -B -DskipTests package)
  RUNWAY_JAR  the jar (default: target/runway.jar)
"""
import json, os, subprocess, sys, time, urllib.request
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agents  # noqa: E402  (the Runway process helper of bench/agents.py)
from agents import ts  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
K = int(sys.argv[2]) if len(sys.argv) > 2 else 20
DELAY_MS = int(sys.argv[3]) if len(sys.argv) > 3 else 10
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JAR = os.environ.get("RUNWAY_JAR") or os.path.join(ROOT, "target", "runway.jar")


def call(method, url, key, body=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def main():
    if not os.path.exists(JAR):
        sys.exit("no %s: run mvn -B -DskipTests package first" % JAR)
    tool_process = subprocess.Popen(["java", os.path.join(ROOT, "bench", "Tool.java"), "0", str(DELAY_MS)],
                                    stdout=subprocess.PIPE, text=True)
    tool_port = int(tool_process.stdout.readline())
    db_url = os.environ.get("RUNWAY_DB_URL")
    runway = agents.Runway(**({"db.url": db_url} if db_url else {}))
    base, key = runway.base, runway.key
    try:
        call("PUT", base + "/v1/workflows/per-customer", key, {
            "steps": [{"type": "http", "url": "http://127.0.0.1:%d/tool" % tool_port}],
            "concurrency": {"key": "{{inputs.customer}}", "limit": 1}})

        def start(i):
            run = call("POST", base + "/v1/workflows/per-customer/runs", key,
                       {"project": "bench", "inputs": {"customer": "c%02d" % (i % K)}})
            if run["status"] != "running":
                sys.exit("the start answered %s (spec rule 3 says running): %s" % (run["status"], run))
            return run["id"]

        t0 = time.time()
        with ThreadPoolExecutor(16) as pool:
            ids = list(pool.map(start, range(N)))
        started_s = time.time() - t0
        deadline = time.time() + 600
        while True:
            left = call("GET", base + "/v1/runs?workflow=per-customer&status=queued,running,awaiting_approval&limit=1",
                        key)["data"]
            if not left:
                break
            if time.time() > deadline:
                sys.exit("runs still going after 600 s")
            time.sleep(0.05)
        wall_s = time.time() - t0

        # Every event of the workspace in commit order (GET /v1/events: the writes of a workspace commit one
        # after another, and the feed follows their order), so that a run's run.started (a queued run's when
        # its turn came) and its end are seen in the order the database made them.
        events, cursor = [], None
        while True:
            page = call("GET", base + "/v1/events?limit=1000" + ("&starting_after=" + cursor if cursor else ""), key)
            events += page["data"]
            if not page["data"]:
                break
            cursor = page["next_cursor"]
        runs = {}
        with ThreadPoolExecutor(16) as pool:
            for run in pool.map(lambda run_id: call("GET", base + "/v1/runs/" + run_id, key), ids):
                if run["status"] != "succeeded":
                    sys.exit("run %s ended %s: %s" % (run["id"], run["status"], run.get("error")))
                runs[run["id"]] = run
        active, starts, queued_starts, queued_ids = defaultdict(int), defaultdict(list), defaultdict(list), set()
        for e in events:
            run = runs.get(e["run_id"])
            if run is None:
                continue
            k = run["concurrency_key"]
            if e["type"] == "run.queued":
                queued_ids.add(run["id"])
            elif e["type"] == "run.started":
                active[k] += 1
                starts[k].append(run["id"])
                if run["id"] in queued_ids:
                    queued_starts[k].append(run["id"])
                if active[k] > 1:
                    sys.exit("key %s: %s started while another run of the key was active" % (k, run["id"]))
            elif e["type"] == "run.succeeded":
                active[k] -= 1
        if len(starts) != K or sum(len(v) for v in starts.values()) != N:
            sys.exit("%d keys and %d starts, not %d and %d" % (len(starts), sum(len(v) for v in starts.values()), K, N))
        # Two starts that race for a free place take it in commit order, whatever their ids; the runs that
        # waited queued start in creation order.
        for k, order in queued_starts.items():
            if order != sorted(order):
                sys.exit("key %s: its queued runs did not start in creation order" % k)
        queued = len(queued_ids)
        first = min(ts(r["created_at"]) for r in runs.values())
        last = max(ts(r["finished_at"]) for r in runs.values())
        print("concurrency keys: %d runs on %d keys, limit 1, a %d ms tool, on %s:" % (N, K, DELAY_MS,
                                                                                  (db_url or "jdbc:h2").split(":")[1]))
        print("  all succeeded; never two runs of a key active at once; each key's queued runs started in creation order")
        print("  %d of them waited queued; the %d starts answered in %.2f s" % (queued, N, started_s))
        print("  first start to last end (server clock): %.2f s; wall time until all ended: %.2f s"
              % (last - first, wall_s))
        print("  from the last start's answer to the last run's end: %.2f s" % (wall_s - started_s))
    finally:
        runway.stop()
        tool_process.terminate()


if __name__ == "__main__":
    main()
