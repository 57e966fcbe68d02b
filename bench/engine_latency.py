#!/usr/bin/env python3
"""Time from start to `succeeded` of a run of http steps against a local tool.

Starts target/runway.jar on a fresh H2 database (or RUNWAY_DB_URL), a tool server on loopback,
then starts N runs one after another and reads each run's created_at and finished_at (the
server's own clock, millisecond precision). Prints the median, p90 and max.

With STEPS above 1, the run has STEPS http steps and each step's body is built by an expression
from the previous step's output: the tool answers {"n": n + 1} to a body {"n": n}, the first step
sends {"n": "{{ inputs.n }}"}, each next one {"n": "{{ steps['step-<i-1>'].output.n }}"}, and the
bench checks that the last step's output is {"n": STEPS}.

usage: python3 bench/engine_latency.py [N=100] [STEPS=1]     (after ./run.sh or mvn package built the jar)
  RUNWAY_JAR  the jar (default: target/runway.jar), to compare two builds side by side
  BENCH_TOOL  python: the tool is a Python server in this process instead of bench/Tool.java in a
              JVM of its own (the Python tool shares this interpreter's lock with the polling client)
"""
import http.server, json, os, socket, statistics, subprocess, sys, tempfile, threading, time, urllib.request
from datetime import datetime

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 1
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JAR = os.environ.get("RUNWAY_JAR") or os.path.join(ROOT, "target", "runway.jar")


class Tool(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        sent = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        n = sent.get("n")
        body = json.dumps({"n": n + 1} if isinstance(n, int) else {"ok": True}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(method, url, key, body=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def ts(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def main():
    if not os.path.exists(JAR):
        sys.exit("no %s: run ./run.sh --help or mvn -B -DskipTests package first" % JAR)
    if os.environ.get("BENCH_TOOL", "java") == "java":
        tool_process = subprocess.Popen(["java", os.path.join(ROOT, "bench", "Tool.java")], stdout=subprocess.PIPE, text=True)
        tool_port = int(tool_process.stdout.readline())
        stop_tool = tool_process.terminate
    else:
        tool = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Tool)
        threading.Thread(target=tool.serve_forever, daemon=True).start()
        tool_port, stop_tool = tool.server_address[1], tool.shutdown
    work = tempfile.mkdtemp(prefix="runway-bench-")
    port = free_port()
    env = dict(os.environ, RUNWAY_HTTP_PORT=str(port), RUNWAY_WORKFLOWS_DIR="", RUNWAY_HTTP_REQUEST_LOG="false",
               RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS="true", RUNWAY_BOOTSTRAP_ADMIN_KEY="false")
    env.setdefault("RUNWAY_DB_URL", "jdbc:h2:file:%s/runway" % work)
    key = subprocess.run(["java", "-jar", JAR, "keys", "create", "--workspace", "bench"], env=env, cwd=work,
                         check=True, capture_output=True, text=True).stdout.strip()
    server = subprocess.Popen(["java", "-jar", JAR], env=env, cwd=work, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(work, "server.err"), "w"))
    base = "http://127.0.0.1:%d" % port
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(base + "/readyz", timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        url = "http://127.0.0.1:%d/tool" % tool_port
        if STEPS == 1:
            steps = [{"type": "http", "url": url}]
        else:
            steps = [{"type": "http", "url": url, "body": {"n": "{{ inputs.n }}"}}] + [
                {"type": "http", "url": url, "body": {"n": "{{ steps['step-%d'].output.n }}" % (i - 1)}}
                for i in range(1, STEPS)]
        call("PUT", base + "/v1/workflows/one-call", key, {"steps": steps})
        for _ in range(20):  # warm-up
            run_once(base, key)
        server_ms, client_ms = [], []
        for _ in range(N):
            s, c = run_once(base, key)
            server_ms.append(s)
            client_ms.append(c)
        q = statistics.quantiles
        what = "one-http-step run" if STEPS == 1 else "run of %d http steps passing data by expressions" % STEPS
        print("%s, start -> succeeded, %d runs on %s:" % (what, N, env["RUNWAY_DB_URL"].split(":")[1]))
        print("  server clock (finished_at - created_at): median %.1f ms, p90 %.1f ms, max %.1f ms"
              % (statistics.median(server_ms), q(server_ms, n=10)[-1], max(server_ms)))
        print("  client view (POST until GET shows succeeded, polled every 2 ms): median %.1f ms" % statistics.median(client_ms))
    finally:
        server.terminate()
        server.wait(20)
        stop_tool()


def run_once(base, key):
    t0 = time.perf_counter()
    run = call("POST", base + "/v1/workflows/one-call/runs", key, {"project": "bench", "inputs": {"n": 0}})
    while run["status"] == "running":
        time.sleep(0.002)
        run = call("GET", base + "/v1/runs/" + run["id"], key)
    client = (time.perf_counter() - t0) * 1000
    if run["status"] != "succeeded":
        sys.exit("run ended %s: %s" % (run["status"], run))
    if STEPS > 1 and run["steps"][-1]["output"] != {"n": STEPS}:
        sys.exit("the last step's output is %s, not {\"n\": %d}: %s" % (run["steps"][-1]["output"], STEPS, run))
    return (ts(run["finished_at"]) - ts(run["created_at"])) * 1000, client


if __name__ == "__main__":
    main()
