#!/usr/bin/env python3
"""Inbound webhooks on H2: deliveries a second and answer times, with GitHub signatures checked.

Starts target/runway.jar (config/jvm.options, fresh H2 database, no per-hook rate limit, no runs
quota), stores a secret and a workflow (no steps) with a `{"webhook": {"verify": "github"}}`
trigger, then:
  1. wrk, 32 connections, 2 threads: POST /hooks/<id> with a JSON body, its X-Hub-Signature-256
     (checked on every delivery) and an X-GitHub-Delivery unique per request (each one a run):
     10 s of warm-up, then BENCH_SECONDS (default 20) measured: deliveries accepted a second,
     answer median and p99, and any answer that was not 202 (target: median <= 10 ms,
     >= 2,000/s);
  2. 20 concurrent copies of one delivery: how many runs they started (target: 1);
  3. answer times one at a time, 500 each: an accepted delivery (202), a bad signature on a known
     hook (401), an unknown hook id of the right form (404): the 404 costs what a lookup costs,
     whichever id is asked.
Counts the runs in the database at the end against the 202s wrk saw.

usage: python3 bench/hooks.py    (after mvn -B -DskipTests package; needs wrk: apt-get install wrk)
  RUNWAY_JAR      the jar (default: target/runway.jar)
  BENCH_SECONDS   measured seconds of wrk (default 20)
"""
import concurrent.futures, hashlib, hmac, json, os, re, shutil, statistics, subprocess, sys, tempfile, time
import urllib.error, urllib.parse, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agents  # noqa: E402  (the Runway process helper of bench/agents.py)

SECRET = "bench secret"
BODY = json.dumps({"ref": "refs/heads/main", "commits": [{"id": "6113728f", "message": "bench"}]})
SIGNATURE = "sha256=" + hmac.new(SECRET.encode(), BODY.encode(), hashlib.sha256).hexdigest()

LUA = """
-- Each delivery has an id of its own: this wrk run's prefix (its first argument), the thread's number, a count.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end
function init(args)
  prefix = args[1] .. "-" .. id .. "-"
  counter = 0
end
function request()
  counter = counter + 1
  return wrk.format("POST", nil, {
    ["Content-Type"] = "application/json",
    ["X-Hub-Signature-256"] = "%s",
    ["X-GitHub-Event"] = "push",
    ["X-GitHub-Delivery"] = prefix .. counter,
  }, %s)
end
function done(summary, latency, requests)
  io.write(string.format("RESULT %%d %%d %%d %%d %%d %%.1f %%.1f\\n", summary.requests, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write, summary.errors.timeout,
    summary.duration, latency:percentile(50), latency:percentile(99)))
end
"""

START_LUA = """
function done(summary, latency, requests)
  io.write(string.format("RESULT %%d %%d %%d %%d %%d %%.1f %%.1f\\n", summary.requests, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write, summary.errors.timeout,
    summary.duration, latency:percentile(50), latency:percentile(99)))
end
wrk.method = "POST"
wrk.body = '{"project": "api", "inputs": {"ref": "refs/heads/main"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %s"
"""


def post(url, body, headers, timeout=30):
    req = urllib.request.Request(url, method="POST", data=body.encode(), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def wrk(url, seconds, script, prefix):
    out = subprocess.run(["wrk", "-t2", "-c32", "-d%ds" % seconds, "--latency", "-s", script, url, "--", prefix],
                         capture_output=True, text=True, timeout=seconds + 60)
    line = next((l for l in out.stdout.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        raise agents.Fail("wrk gave no result:\n" + out.stdout + out.stderr)
    requests, non2xx, socket_errors, timeouts, duration_us, p50_us, p99_us = line.split()[1:]
    return int(requests), int(non2xx), int(socket_errors), int(timeouts), int(duration_us) / 1e6, \
        float(p50_us) / 1000, float(p99_us) / 1000


def main():
    if not os.path.exists(agents.JAR):
        sys.exit("no %s: run mvn -B -DskipTests package first (or set RUNWAY_JAR)" % agents.JAR)
    if shutil.which("wrk") is None:
        sys.exit("bench: wrk is missing (Debian: apt-get install wrk)")
    seconds = int(os.environ.get("BENCH_SECONDS", "20"))
    runway = agents.Runway(**{"hooks.per_second": 0})
    script = os.path.join(tempfile.mkdtemp(prefix="runway-bench-hooks-"), "hooks.lua")
    try:
        status, answer = runway.call("PUT", "/v1/secrets/GITHUB_SECRET", {"value": SECRET})
        assert status in (200, 201), answer
        status, answer = runway.call("PUT", "/v1/workflows/on-push", {"steps": [], "triggers": [
            {"webhook": {"verify": "github", "secret": "GITHUB_SECRET"}, "project": agents.PROJECT}]})
        assert status in (200, 201), answer
        url = answer["triggers"][0]["hook_url"].replace("localhost", "127.0.0.1")
        with open(script, "w") as f:
            f.write(LUA % (SIGNATURE, json.dumps(BODY)))
        start_script = script.replace("hooks.lua", "start.lua")
        with open(start_script, "w") as f:
            f.write(START_LUA % runway.key)
        start_url = runway.base + "/v1/workflows/on-push/runs"
        warm = wrk(url, 10, script, "warm")
        warm_accepted = warm[0] - warm[1]
        wrk(start_url, 5, start_script, "")
        # Side by side: the hook, then a start of the same workflow through the API, twice; medians of the two.
        hooks, starts = [], []
        for round_ in range(2):
            hooks.append(wrk(url, seconds, script, "measured%d" % round_))
            starts.append(wrk(start_url, seconds, start_script, ""))
        accepted = sum(h[0] - h[1] for h in hooks)
        rate = statistics.median([(h[0] - h[1]) / h[4] for h in hooks])
        p50 = statistics.median([h[5] for h in hooks])
        p99 = statistics.median([h[6] for h in hooks])
        start_rate = statistics.median([(s_[0] - s_[1]) / s_[4] for s_ in starts])
        print("hooks: %d deliveries accepted in 2 x %d s from 32 connections with GitHub signatures checked: median "
              "%.0f/s (target >= 2,000/s: %s); answer median %.2f ms (target <= 10 ms: %s), p99 %.2f ms; not 202: %d, "
              "socket errors %d, timeouts %d"
              % (accepted, seconds, rate, agents.verdict(rate >= 2000), p50, agents.verdict(p50 <= 10), p99,
                 sum(h[1] for h in hooks), sum(h[2] for h in hooks), sum(h[3] for h in hooks)))
        print("hooks: side by side, POST /v1/workflows/on-push/runs with an API key: median %.0f/s, answer median "
              "%.2f ms (the hook takes %.2fx of a start's rate)"
              % (start_rate, statistics.median([s_[5] for s_ in starts]), rate / start_rate))

        headers = {"Content-Type": "application/json", "X-Hub-Signature-256": SIGNATURE, "X-GitHub-Delivery": "copied"}
        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            copies = list(pool.map(lambda _: post(url, BODY, headers), range(20)))
        run_ids = {a["run_id"] for s, a in copies if s == 202}
        print("hooks: 20 concurrent copies of one delivery: %d answered 202, %d run(s) named, %d started fresh "
              "(target 1: %s)" % (sum(1 for s, _ in copies if s == 202), len(run_ids),
                                  sum(1 for s, a in copies if s == 202 and not a["duplicate"]),
                                  agents.verdict(len(run_ids) == 1)))

        counter = iter(range(10 ** 9))
        ok_headers = lambda: {"Content-Type": "application/json", "X-Hub-Signature-256": SIGNATURE,
                              "X-GitHub-Delivery": "one-%d" % next(counter)}
        times = {}
        for name, target, hdrs in [("202 accepted", url, None),
                                   ("401 bad signature", url, {"Content-Type": "application/json",
                                                               "X-Hub-Signature-256": "sha256=" + "0" * 64}),
                                   ("404 unknown hook", re.sub(r"hook_[a-z2-7]{32}", "hook_" + "q" * 32, url),
                                    {"Content-Type": "application/json"})]:
            samples = []
            for _ in range(500):
                began = time.perf_counter()
                post(target, BODY, hdrs or ok_headers())
                samples.append((time.perf_counter() - began) * 1000)
            times[name] = (statistics.median(samples), sorted(samples)[494])
        print("hooks: one at a time, median / p99: " + "; ".join("%s %.2f / %.2f ms" % (n, m, p)
                                                                   for n, (m, p) in times.items()))

        stored = 0
        after = ""
        while True:  # the runs the hook started: those in project bench (the starts are in project api)
            status, page = runway.call("GET", "/v1/runs?workflow=on-push&project=bench&limit=100" + after)
            stored += len(page["data"])
            if not page["has_more"]:
                break
            after = "&starting_after=" + page["data"][-1]["id"]
        # wrk counts the answers it read: the requests in flight when it stops (up to 32 a run) start runs too.
        expected = warm_accepted + accepted + 1 + 500
        print("hooks: runs the hook started %d; deliveries answered 202 that started one %d (warm-up %d, measured %d, "
              "copies 1, one at a time 500), and up to 32 left in flight by each of 3 wrk runs: %s"
              % (stored, expected, warm_accepted, accepted, agents.verdict(expected <= stored <= expected + 96)))
    finally:
        runway.stop()


if __name__ == "__main__":
    main()
