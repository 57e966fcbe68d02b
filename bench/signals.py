#!/usr/bin/env python3
"""1,000 runs waiting for a signal: what they cost the server while they wait, and how fast they end once signaled.

Starts target/runway.jar (config/jvm.options, engine on) on a fresh H2 database and a local tool; PUTs a
workflow `wait` (signal `go`) -> one http step to the tool; starts 1,000 runs and waits until every one
stands at its wait; prints the server's resident memory (VmRSS) and live threads (Threads) from
/proc/<pid>/status then, and with the first 100 waiting (threads must not grow with the runs
waiting); sends the 1,000 signals from 16 threads and prints how long they took, and the time from
the last signal answered to every run `succeeded`. Targets: RSS <= 300 MB, all succeeded <= 3 s
after the last signal, threads not growing with the waiting runs.

usage: python3 bench/signals.py          (after mvn -B -DskipTests package built the jar)
  RUNWAY_JAR    the jar (default: target/runway.jar)
  BENCH_RUNS    how many runs (default 1000)
"""
import concurrent.futures, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agents  # noqa: E402  (the Runway process helper, the tool, starts and waits of bench/agents.py)

RUNS = int(os.environ.get("BENCH_RUNS", "1000"))
SIGNAL_THREADS = 16
HTTP_POOL = "runway-http-"  # the HTTP server's request threads, by name without their numbers


def status_fields(runway):
    return runway.memory_kb("VmRSS"), runway.memory_kb("Threads")


def thread_kinds(runway):
    """The server's live threads by name, digits dropped (qtp123-45 -> qtp-): what grew, if any did."""
    kinds = {}
    task = "/proc/%d/task" % runway.proc.pid
    for tid in os.listdir(task):
        try:
            with open(os.path.join(task, tid, "comm")) as f:
                name = "".join(c for c in f.read().strip() if not c.isdigit())
        except OSError:
            continue
        kinds[name] = kinds.get(name, 0) + 1
    return kinds


def await_waiting(runway, ids):
    """Until every run of ids stands at its wait (a run does in its start's commit), at most 60 s."""
    deadline = time.monotonic() + 60
    wanted = set(ids)
    while True:
        waiting = [r for r in agents.list_runs(runway).values() if r["id"] in wanted
                   and r["steps"][0]["status"] == "waiting"]
        if len(waiting) == len(ids):
            return
        if time.monotonic() > deadline:
            raise agents.Fail("only %d of %d runs waiting after 60 s" % (len(waiting), len(ids)))
        time.sleep(0.5)


def main():
    if not os.path.exists(agents.JAR):
        sys.exit("no %s: run mvn -B -DskipTests package first (or set RUNWAY_JAR)" % agents.JAR)
    tool, _ = agents.tool_server(0)
    runway = agents.Runway()
    try:
        url = "http://127.0.0.1:%d/done" % tool.server_address[1]
        runway.ok("PUT", "/v1/workflows/await-go", {"steps": [
            {"type": "wait", "id": "go", "signal": "go", "timeout_s": 3600},
            {"type": "http", "id": "done", "url": url, "body": {"got": "{{ signal }}"}}]})
        # A first tenth, then the rest: the threads with 100 runs waiting and with 1,000 (the HTTP server's pool
        # grows with the starts' 32 client threads either way; the runs waiting must add none).
        first = max(1, RUNS // 10)
        ids, start_s, retries = agents.start_all(runway, "/v1/workflows/await-go/runs", {"project": agents.PROJECT}, first)
        await_waiting(runway, ids)
        time.sleep(2)
        rss0, threads0 = status_fields(runway)
        kinds0 = thread_kinds(runway)
        more, more_s, more_retries = agents.start_all(runway, "/v1/workflows/await-go/runs", {"project": agents.PROJECT},
                                                      RUNS - first)
        ids += more
        await_waiting(runway, ids)
        time.sleep(2)  # what the waits cost once settled, not the starts' garbage
        rss, threads = status_fields(runway)
        kinds = thread_kinds(runway)
        grew = {k: "%d->%d" % (kinds0.get(k, 0), n) for k, n in sorted(kinds.items()) if n != kinds0.get(k, 0)}
        # The HTTP server's request threads come and go with the requests in flight (up to
        # http.max_threads, idle ones stop after a minute): not with the runs waiting.
        others, others0 = threads - kinds.get(HTTP_POOL, 0), threads0 - kinds0.get(HTTP_POOL, 0)
        steady = others <= others0 + 2
        print("signals: %d runs started in %.1f s (%d retried), all waiting; server RSS %.0f MB (target <= 300 MB: %s; "
              "%.0f MB with %d waiting), threads %d (%d with %d waiting); besides the HTTP request pool %d (%d with %d "
              "waiting; target: not growing with the runs: %s)"
              % (len(ids), start_s + more_s, retries + more_retries, rss / 1024, agents.verdict(rss <= 300 * 1024),
                 rss0 / 1024, first, threads, threads0, first, others, others0, first, agents.verdict(steady)))
        if grew:
            print("  threads that changed, by name: %s" % grew)

        def send(run_id):
            for attempt in range(20):
                status, answer = runway.call("POST", "/v1/runs/%s/signals/go" % run_id, {"n": 1})
                if status == 202:
                    return answer["status"]
                if status in (429, 503) and attempt < 19:
                    time.sleep(0.05)
                    continue
                raise agents.Fail("signal to %s answered %d: %s" % (run_id, status, agents.short(answer)))

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(SIGNAL_THREADS) as pool:
            delivered = list(pool.map(send, ids))
        last_signal = time.monotonic()
        runs = agents.wait_finished(runway, ids, 60)
        all_done = time.monotonic()
        span, ok, rest = agents.summary(runs)
        after = all_done - last_signal
        print("  %d signals from %d threads in %.2f s (%d delivered); all succeeded %.2f s after the last signal answered "
              "(target <= 3 s: %s); %d succeeded%s"
              % (len(ids), SIGNAL_THREADS, last_signal - t0, delivered.count("delivered"), after,
                 agents.verdict(after <= 3.0 and ok == len(ids)), ok, "" if not rest else ", " + rest))
        return ok == len(ids) and after <= 3.0 and rss <= 300 * 1024 and steady
    finally:
        runway.stop()
        agents.stop_server(tool)


if __name__ == "__main__":
    try:
        sys.exit(0 if main() else 1)
    except agents.Fail as e:
        sys.exit("signals: failed: %s" % e)
