#!/usr/bin/env python3
"""1,000 runs waiting for a signal: what they cost the server while they wait, and how fast they end once signaled.

Starts target/runway.jar (config/jvm.options, engine on) on a fresh H2 database and a local tool; PUTs a
workflow `wait` (signal `go`) -> one http step to the tool; starts 1,000 runs and waits until every one
stands at its wait; prints the server's resident memory (VmRSS) and live threads (Threads) from
/proc/<pid>/status then (and before the runs, to compare: threads must not grow with the runs
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


def status_fields(runway):
    return runway.memory_kb("VmRSS"), runway.memory_kb("Threads")


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
        rss0, threads0 = status_fields(runway)
        ids, start_s, retries = agents.start_all(runway, "/v1/workflows/await-go/runs", {"project": agents.PROJECT}, RUNS)
        # A run stands at its wait in its start's commit: all running, none due before its time-out.
        deadline = time.monotonic() + 60
        while True:
            waiting = [r for r in agents.list_runs(runway).values() if r["id"] in set(ids)
                       and r["steps"][0]["status"] == "waiting"]
            if len(waiting) == len(ids) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if len(waiting) != len(ids):
            raise agents.Fail("only %d of %d runs waiting after 60 s" % (len(waiting), len(ids)))
        time.sleep(2)  # what the waits cost once settled, not the starts' garbage
        rss, threads = status_fields(runway)
        print("signals: %d runs started in %.1f s (%d retried), all waiting; server RSS %.0f MB (before the runs %.0f MB; "
              "target <= 300 MB: %s), threads %d (before the runs %d; target: not growing with the runs: %s)"
              % (len(ids), start_s, retries, rss / 1024, rss0 / 1024, agents.verdict(rss <= 300 * 1024), threads,
                 threads0, agents.verdict(threads <= threads0 + 8)))

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
        return ok == len(ids) and after <= 3.0 and rss <= 300 * 1024
    finally:
        runway.stop()
        agents.stop_server(tool)


if __name__ == "__main__":
    try:
        sys.exit(0 if main() else 1)
    except agents.Fail as e:
        sys.exit("signals: failed: %s" % e)
