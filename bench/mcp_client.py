#!/usr/bin/env python3
"""An agent's tool call as a plain HTTP tool and as an MCP server's tool, on the packaged jar.

One Runway (as bench/agents.py starts it: a fresh H2 file database, loopback calls allowed), a fake
OpenAI Chat Completions endpoint that answers a request without tool results with one call of the
first tool it is offered, then "done"; a plain HTTP tool answering {"ok": true} at once; and a tiny
MCP server speaking Streamable HTTP with JSON answers (initialize, notifications/initialized,
tools/list with one tool `echo`, tools/call answering at once), both Python servers in this process.
Two agents: `plain` (the HTTP tool) and `viamcp` (mcp_servers: the MCP server). BENCH_RUNS (200)
runs of each, alternating, after BENCH_WARMUP (50) of each not counted. For each run, the tool
call's time is tool_call.started to tool_call.finished (the server's clock: sent to committed);
prints the medians and p90s of both, and the median per-call overhead of MCP over HTTP (the
difference of the medians), target <= 5 ms. The MCP run also lists the server's tools at its start
(its session is then reused by the call): printed apart, as run.started to mcp.tools_listed.

usage: python3 bench/mcp_client.py      RUNWAY_JAR, RUNWAY_JAVA_OPTS as for bench/agents.py
"""
import json, os, statistics, sys, time, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agents  # noqa: E402  (the Runway launcher and local servers)

RUNS = int(os.environ.get("BENCH_RUNS", "200"))
WARMUP = int(os.environ.get("BENCH_WARMUP", "50"))


def model_server():
    """Answers a request without tool results with one call of its first tool, one with them "done"."""

    class Model(agents.Handler):
        def do_POST(self):
            body = json.loads(self.body())
            if any(m.get("role") == "tool" for m in body.get("messages", [])):
                message, reason = {"role": "assistant", "content": "done"}, "stop"
            else:
                name = body["tools"][0]["function"]["name"]
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": name, "arguments": "{\"text\":\"hi\"}"}}]}
                reason = "tool_calls"
            self.answer(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                              "model": body.get("model", "unknown"),
                              "choices": [{"index": 0, "message": message, "finish_reason": reason}],
                              "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})

    return agents.start_server(Model)


def http_tool():
    class Tool(agents.Handler):
        def do_POST(self):
            self.body()
            self.answer(200, {"ok": True})

    return agents.start_server(Tool)


def mcp_server():
    """Streamable HTTP, JSON answers, one tool `echo`; sessions kept (404 to an unknown one)."""
    sessions = set()

    class Mcp(agents.Handler):
        def do_POST(self):
            message = json.loads(self.body())
            method = message.get("method")
            if method == "initialize":
                sid = uuid.uuid4().hex
                sessions.add(sid)
                return self.rpc(message, {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                          "serverInfo": {"name": "bench", "version": "1"}}, sid)
            if self.headers.get("Mcp-Session-Id") not in sessions:
                return self.answer(404, {"jsonrpc": "2.0", "error": {"code": -32001, "message": "no session"}})
            if method.startswith("notifications/"):
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if method == "tools/list":
                return self.rpc(message, {"tools": [{"name": "echo", "description": "Echoes",
                                                     "inputSchema": {"type": "object",
                                                                     "properties": {"text": {"type": "string"}}}}]})
            return self.rpc(message, {"content": [{"type": "text", "text": "{\"ok\":true}"}]})

        def rpc(self, request, result, session=None):
            data = json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": result}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if session:
                self.send_header("Mcp-Session-Id", session)
            self.end_headers()
            self.wfile.write(data)

    return agents.start_server(Mcp)


def spans(runway, run_id):
    events = runway.ok("GET", "/v1/runs/%s/events?limit=1000" % run_id)["data"]
    at = {e["type"]: agents.ts(e["created_at"]) for e in events}
    listing = at["mcp.tools_listed"] - at["run.started"] if "mcp.tools_listed" in at else None
    return at["tool_call.finished"] - at["tool_call.started"], listing


def main():
    if not os.path.exists(agents.JAR):
        sys.exit("no %s: run mvn -B -DskipTests package first (or set RUNWAY_JAR)" % agents.JAR)
    model, tool, mcp = model_server(), http_tool(), mcp_server()
    runway = None
    try:
        runway = agents.Runway(**{"agents.model.base_url": "http://127.0.0.1:%d/v1" % model.server_address[1]})
        runway.ok("PUT", "/v1/agents/plain", {"model": "bench-model", "tools": [
            {"name": "echo", "url": "http://127.0.0.1:%d/echo" % tool.server_address[1],
             "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}]})
        runway.ok("PUT", "/v1/agents/viamcp", {"model": "bench-model", "mcp_servers": [
            {"name": "bench", "url": "http://127.0.0.1:%d/mcp" % mcp.server_address[1]}]})
        times = {"plain": [], "viamcp": []}
        listings = []
        for i in range(WARMUP + RUNS):
            for agent in ("plain", "viamcp"):
                run = runway.ok("POST", "/v1/agents/%s/runs" % agent, {"project": agents.PROJECT, "input": "go"})
                run = agents.wait_run(runway, run["id"], 30)
                if run.get("status") != "succeeded":
                    raise agents.Fail("%s run ended %s: %s" % (agent, run.get("status"), agents.short(run, 600)))
                call, listing = spans(runway, run["id"])
                if i >= WARMUP:
                    times[agent].append(call * 1000)
                    if listing is not None:
                        listings.append(listing * 1000)

        def p90(xs):
            return sorted(xs)[int(len(xs) * 0.9) - 1]

        plain, viamcp = statistics.median(times["plain"]), statistics.median(times["viamcp"])
        print("mcp_client: %d runs each after %d not counted; tool call started -> finished (server clock)" % (RUNS, WARMUP))
        print("  http tool   median %.2f ms, p90 %.2f ms" % (plain, p90(times["plain"])))
        print("  mcp tool    median %.2f ms, p90 %.2f ms" % (viamcp, p90(times["viamcp"])))
        print("  mcp listing at the run's start (initialize, initialized, tools/list): median %.2f ms"
              % statistics.median(listings))
        print("  MCP overhead per call over HTTP: median %.2f ms (target <= 5 ms: %s)"
              % (viamcp - plain, agents.verdict(viamcp - plain <= 5)))
    except agents.Fail as e:
        print("mcp_client: failed: %s" % e, file=sys.stderr)
        sys.exit(1)
    finally:
        if runway:
            runway.stop()
        for s in (model, tool, mcp):
            agents.stop_server(s)


if __name__ == "__main__":
    main()
