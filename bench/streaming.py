#!/usr/bin/env python3
"""How soon a streamed model answer's pieces reach a reader of Runway's event stream.

A fake OpenAI Chat Completions endpoint here streams each answer (Server-Sent Events of
chat.completion.chunk, as api.openai.com sends them) as PIECES pieces of text, GAP_MS apart. Runway
(target/runway.jar on a fresh H2 file database, see bench/agents.py's Runway; or BENCH_DB_URL) runs
RUNS agent runs with "stream": true, one after another, while this script reads the workspace's
event stream (GET /v1/events, Accept: text/event-stream) on one connection. For every piece it
takes the time from the fake model's write of it (after its flush) to the arrival of the
run.message.delta event holding it, both on this process's clock; the first run is not counted
(the JIT's first compilations). Prints the median, p90 and max; target: median <= 50 ms.

usage: python3 bench/streaming.py [RUNS] [PIECES] [GAP_MS]     (default: 6 40 25)
"""
import json, os, statistics, sys, threading, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agents import Fail, Handler, Runway, short, start_server, stop_server  # noqa: E402

TARGET_MS = 50


def model_server(pieces, gap_s, sent):
    """Streams pieces "r<request>p<i> " of each answer; sent[text] = when its chunk was flushed."""
    counter = {"n": 0}
    lock = threading.Lock()

    class Model(Handler):
        def do_POST(self):
            request = json.loads(self.body())
            with lock:
                counter["n"] += 1
                n = counter["n"]
            if not request.get("stream"):
                return self.answer(400, {"error": {"message": "the bench expects stream: true"}})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def chunk(delta, finish=None, usage=None):
                body = {"id": "chatcmpl-%d" % n, "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": request.get("model"), "choices": [] if usage else
                        [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], "usage": usage}
                data = ("data: %s\n\n" % json.dumps(body, separators=(",", ":"))).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            chunk({"role": "assistant", "content": ""})
            for i in range(pieces):
                time.sleep(gap_s)
                text = "r%dp%d " % (n, i)
                chunk({"content": text})
                sent[text] = time.monotonic()
            chunk({}, "stop")
            chunk(None, usage={"prompt_tokens": 10, "completion_tokens": pieces, "total_tokens": 10 + pieces})
            data = b"data: [DONE]\n\n"
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
            self.wfile.flush()

    return start_server(Model)


def read_stream(runway, arrived, ready, stop):
    """Reads GET /v1/events as a stream; arrived[text] = when the delta event holding it came."""
    req = urllib.request.Request(runway.base + "/v1/events", headers={
        "Authorization": "Bearer " + runway.key, "Accept": "text/event-stream"})
    with urllib.request.urlopen(req, timeout=120) as r:
        ready.set()
        data = []
        while not stop.is_set():
            line = r.readline()
            if not line:
                return
            line = line.decode().rstrip("\r\n")
            if line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and data:
                event = json.loads("\n".join(data))
                data = []
                if event.get("type") == "run.message.delta":
                    now = time.monotonic()
                    for text in event["data"]["delta"].split(" "):
                        if text:
                            arrived[text + " "] = now


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    pieces = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    gap_s = (int(sys.argv[3]) if len(sys.argv) > 3 else 25) / 1000
    sent, arrived = {}, {}
    model = model_server(pieces, gap_s, sent)
    runway = Runway(agents_model_base_url="http://127.0.0.1:%d/v1" % model.server_address[1],
                    agents_model_api_key="sk-bench")
    stop = threading.Event()
    try:
        runway.ok("PUT", "/v1/agents/streamer", {"model": "bench-model"})
        ready = threading.Event()
        threading.Thread(target=read_stream, args=(runway, arrived, ready, stop), daemon=True).start()
        if not ready.wait(10):
            raise Fail("the event stream did not open")
        counted = []
        for r in range(1, runs + 1):
            run = runway.ok("POST", "/v1/agents/streamer/runs", {"project": "bench", "input": "go", "stream": True})
            deadline = time.monotonic() + 60
            while True:
                status, got = runway.call("GET", "/v1/runs/" + run["id"])
                if status == 200 and got["status"] in ("succeeded", "failed", "canceled"):
                    break
                if time.monotonic() > deadline:
                    raise Fail("run %s did not end in 60 s: %s" % (run["id"], short(got)))
                time.sleep(0.05)
            if got["status"] != "succeeded":
                raise Fail("run %s ended %s: %s" % (run["id"], got["status"], short(got.get("error"))))
            time.sleep(0.2)  # the last events reach the stream
            texts = ["r%dp%d " % (r, i) for i in range(pieces)]
            missing = [t for t in texts if t not in arrived]
            if missing:
                raise Fail("run %d: %d pieces never reached the stream, e.g. %r" % (r, len(missing), missing[0]))
            if r > 1:
                counted += [(arrived[t] - sent[t]) * 1000 for t in texts]
        counted.sort()
        median = statistics.median(counted)
        print("streamed pieces: %d runs x %d pieces, %d ms apart (first run not counted)" % (runs, pieces,
                                                                                              gap_s * 1000))
        print("model wrote a piece -> its run.message.delta read from GET /v1/events (ms): median %.1f, p90 %.1f, "
              "max %.1f" % (median, counted[int(len(counted) * 0.9)], counted[-1]))
        print("target median <= %d ms: %s" % (TARGET_MS, "met" if median <= TARGET_MS else "MISSED"))
    finally:
        stop.set()
        runway.stop()
        stop_server(model)


if __name__ == "__main__":
    try:
        main()
    except Fail as e:
        print(str(e), file=sys.stderr)
        sys.exit(1)
