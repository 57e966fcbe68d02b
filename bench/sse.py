#!/usr/bin/env python3
"""The memory of open Server-Sent Events streams, and how soon their events arrive, on the packaged jar.

A Runway of its own on a fresh H2 file database (as bench/crm.py starts it: config/jvm.options,
workflow files off, request log off, per-key rate limit off; sse.max_streams_per_key raised to
--streams so that one key opens them all). Then:

  1. Warm-up: --runs starts of a workflow without steps (each commits run.started and
     run.succeeded), then a full GC: the server's resident memory (RSS) and live heap.
  2. --streams streams open on GET /v1/events (Accept: text/event-stream), each read by this client
     on a connection of its own; the same number of run starts again, one every 5 ms; every stream
     must get every event (2 per run, in order, none twice). Meanwhile: from a run's start to its
     run.succeeded event on the streams, the median and p99 over every (run, stream). Then a full
     GC, and RSS and live heap with the streams open. Target: the streams cost under 50 MB.
  3. The streams closed: the server must see them gone (its next heartbeat), and RSS and live heap again.

usage: python3 bench/sse.py [--streams 100] [--runs 500]
"""
import argparse, http.client, json, os, re, socket, statistics, subprocess, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crm import Fail, Runway  # noqa: E402  (the same server start as the CRM benchmark)


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) / 1024


def live_heap_mb(pid):
    """The heap in use right after a full GC (jcmd GC.run, then GC.heap_info)."""
    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, check=True)
    time.sleep(0.5)
    info = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, check=True).stdout
    used = sum(int(k) for k in re.findall(r"used (\d+)K", info.split("Metaspace")[0]))
    return used / 1024


def request(runway, method, path, body=None):
    conn = runway.connect()
    try:
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers=runway.headers(body is not None))
        answer = conn.getresponse()
        raw = answer.read()
        if answer.status >= 300:
            raise Fail("%s %s: %d %s" % (method, path, answer.status, raw[:300]))
        return json.loads(raw) if raw else None
    finally:
        conn.close()


class Stream(threading.Thread):
    """One open stream, read on its own connection: the events as they arrive, with the time each arrived."""

    def __init__(self, runway):
        super().__init__(daemon=True)
        self.conn = http.client.HTTPConnection(runway.host, runway.port, timeout=120)
        self.conn.request("GET", "/v1/events", headers=dict(runway.headers(False), Accept="text/event-stream"))
        self.answer = self.conn.getresponse()
        if self.answer.status != 200:
            raise Fail("stream refused: %d %s" % (self.answer.status, self.answer.read()[:300]))
        self.events = []  # (id, type, run_id, arrived)
        self.start()

    def run(self):
        buffer = b""
        try:
            while True:
                chunk = self.answer.read1(65536)
                if not chunk:
                    return
                buffer += chunk
                *blocks, buffer = buffer.split(b"\n\n")
                now = time.monotonic()
                for block in blocks:
                    fields = dict(line.split(b": ", 1) for line in block.split(b"\n") if not line.startswith(b":"))
                    if b"id" in fields:
                        run_id = json.loads(fields[b"data"])["run_id"]
                        self.events.append((fields[b"id"].decode(), fields[b"event"].decode(), run_id, now))
        except (OSError, ValueError, http.client.HTTPException):
            return  # closed

    def close(self):
        try:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--runs", type=int, default=500)
    args = parser.parse_args()
    os.environ["RUNWAY_SSE_MAX_STREAMS_PER_KEY"] = str(args.streams)
    os.environ["RUNWAY_SSE_HEARTBEAT_MS"] = "1000"  # so that closed streams are noticed within a second
    runway = Runway()
    try:
        pid = runway.proc.pid
        request(runway, "PUT", "/v1/workflows/w", {"steps": []})
        for _ in range(args.runs):
            request(runway, "POST", "/v1/workflows/w/runs", {"project": "p"})
        before = (rss_mb(pid), live_heap_mb(pid))

        streams = [Stream(runway) for _ in range(args.streams)]
        time.sleep(1)
        started = {}
        for _ in range(args.runs):
            t = time.monotonic()
            run = request(runway, "POST", "/v1/workflows/w/runs", {"project": "p"})
            started[run["id"]] = t
            time.sleep(0.005)
        deadline = time.monotonic() + 60
        while any(len(s.events) < 2 * args.runs for s in streams):
            if time.monotonic() > deadline:
                raise Fail("streams short of events: %s" % sorted(len(s.events) for s in streams)[:5])
            time.sleep(0.1)
        delays = []
        for s in streams:
            ids = [e[0] for e in s.events]
            if len(ids) != len(set(ids)) or len(ids) != 2 * args.runs:
                raise Fail("a stream got %d events, %d distinct; want %d" % (len(ids), len(set(ids)), 2 * args.runs))
            delays += [(e[3] - started[e[2]]) * 1000 for e in s.events if e[1] == "run.succeeded"]
        delays.sort()
        open_ = (rss_mb(pid), live_heap_mb(pid))

        for s in streams:
            s.close()
        time.sleep(3)  # the server notices at its next heartbeat (1 s here)
        closed = (rss_mb(pid), live_heap_mb(pid))

        print("Runway %s, %d streams, %d runs (%d events per stream)" % (runway.base, args.streams, args.runs, 2 * args.runs))
        print("| | RSS MB | live heap MB |")
        print("|---|---|---|")
        print("| before the streams | %.1f | %.1f |" % before)
        print("| %d streams open | %.1f | %.1f |" % ((args.streams,) + open_))
        print("| streams closed | %.1f | %.1f |" % closed)
        cost = open_[0] - before[0]
        print("streams cost: RSS %+.1f MB, live heap %+.1f MB (target: under 50 MB) -> %s" % (
            cost, open_[1] - before[1], "met" if cost < 50 and open_[1] - before[1] < 50 else "MISSED"))
        print("run start to its run.succeeded on a stream: median %.1f ms, p99 %.1f ms, max %.1f ms (%d deliveries)" % (
            statistics.median(delays), delays[int(len(delays) * 0.99)], delays[-1], len(delays)))
        warnings = runway.warnings()
        if warnings:
            print("server warnings:\n" + "\n".join(warnings[:10]))
    except Fail as e:
        print("bench: " + str(e), file=sys.stderr)
        sys.exit(1)
    finally:
        runway.stop()


if __name__ == "__main__":
    main()
