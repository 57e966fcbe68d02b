#!/usr/bin/env python3
"""POST /mcp tools/call of a workflow with no steps, beside POST /v1/workflows/{id}/runs, on the packaged jar.

One Runway (as bench/agents.py starts it: a fresh H2 file database, rate limit and runs quota off),
workflow `noop` (no steps, output {"ok": true}). For each of the two requests: BENCH_WARMUP (500)
requests not counted, then BENCH_CALLS (2,000) over one keep-alive connection, one after another,
then the same from 8 threads, each with a connection of its own; prints the median, p99 and max
answer time (the client's clock, request sent to answer read) and the requests a second.
tools/call answers once the run has ended (here in its start's commit), with the output; the API's
start answers the run as it started. Target: tools/call median <= 15 ms.

usage: python3 bench/mcp.py      RUNWAY_JAR, RUNWAY_JAVA_OPTS as for bench/agents.py
"""
import http.client, json, os, statistics, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agents  # noqa: E402  (the Runway launcher)

WARMUP = int(os.environ.get("BENCH_WARMUP", "500"))
CALLS = int(os.environ.get("BENCH_CALLS", "2000"))
THREADS = 8


def requester(runway, kind):
    """A function sending one request of `kind` on its own keep-alive connection; returns seconds taken."""
    conn = http.client.HTTPConnection("127.0.0.1", runway.port, timeout=30)
    headers = {"Authorization": "Bearer " + runway.key, "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    counter = [0]
    tag = "%d-%d" % (threading.get_ident(), time.monotonic_ns())

    def once():
        counter[0] += 1
        if kind == "mcp":
            path, body = "/mcp", {"jsonrpc": "2.0", "id": "%s-%d" % (tag, counter[0]), "method": "tools/call",
                                  "params": {"name": "workflow_noop", "arguments": {}, "_meta": {"runway/project": "bench"}}}
        else:
            path, body = "/v1/workflows/noop/runs", {"project": "bench"}
        data = json.dumps(body).encode()
        start = time.perf_counter()
        conn.request("POST", path, body=data, headers=headers)
        r = conn.getresponse()
        raw = r.read()
        took = time.perf_counter() - start
        if r.status != 200:
            raise agents.Fail("%s answered %d: %s" % (path, r.status, raw[:300]))
        if kind == "mcp":
            result = json.loads(raw).get("result") or {}
            if result.get("structuredContent") != {"ok": True}:
                raise agents.Fail("tools/call did not answer the output: %s" % raw[:300])
        return took

    return once


def measure(runway, kind, threads):
    per_thread = CALLS // threads
    times, errors = [], []
    lock = threading.Lock()

    def work():
        once = requester(runway, kind)
        try:
            mine = [once() for _ in range(per_thread)]
        except Exception as e:  # noqa: BLE001
            errors.append(e)
            return
        with lock:
            times.extend(mine)

    started = time.perf_counter()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise errors[0]
    times.sort()
    ms = lambda s: s * 1000  # noqa: E731
    return {"median": ms(statistics.median(times)), "p99": ms(times[int(len(times) * 0.99) - 1]),
            "max": ms(times[-1]), "per_s": len(times) / elapsed}


def main():
    runway = agents.Runway()
    try:
        runway.ok("PUT", "/v1/workflows/noop", {"name": "No-op", "steps": [], "output": {"ok": True}})
        warm = requester(runway, "mcp")
        api = requester(runway, "api")
        for _ in range(WARMUP):
            warm()
            api()
        print("%d requests each after %d not counted; times in ms (client clock)" % (CALLS, WARMUP))
        met = True
        for kind, label in (("mcp", "POST /mcp tools/call"), ("api", "POST /v1/workflows/noop/runs")):
            for threads in (1, THREADS):
                r = measure(runway, kind, threads)
                line = "%-30s %d connection%s: median %.2f  p99 %.2f  max %.1f  (%.0f/s)" % (
                    label, threads, "" if threads == 1 else "s", r["median"], r["p99"], r["max"], r["per_s"])
                if kind == "mcp" and threads == 1:
                    ok = r["median"] <= 15
                    met &= ok
                    line += "  target median <= 15: " + ("met" if ok else "MISSED")
                print(line, flush=True)
        return 0 if met else 0
    except agents.Fail as e:
        print(e, file=sys.stderr)
        return 1
    finally:
        runway.stop()


if __name__ == "__main__":
    sys.exit(main())
