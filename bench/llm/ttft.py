#!/usr/bin/env python3
"""ttft.py -- time to first token of `infera serve`'s OpenAI endpoint next to the CLI's, both sides measured
the same way.

HTTP side: one `infera serve --model m=MODEL --llm-slots 1` (loaded once, like a server in use); a streaming
POST /v1/completions (max_tokens 2, temperature 0) over a fresh connection, timed by this client from the
request's first byte to the first `data:` event that carries text -- so it includes the connection, the
request's parsing and tokenization, the queue, prompt processing and the first SSE write.  The server's own
figure (`vllm:time_to_first_token_seconds`, arrival to first token) is read from /metrics after every request
("server's own": the sum's step over the timed request; the GET comes after the request, never between what
makes a run warm or cold and the run).
CLI side: `infera generate`'s `ttft_ms` (from the start of prompt processing to the first completion token;
the model is loaded and the prompt tokenized before), in two forms: a whole `infera generate --json` process
(its one generation right after its load), and bench/ttft_probe, which makes the CLI's calls and then
generates on command, generation after generation in one process.

Methods (--methods, each round runs every method once, in a rotating order, and within a method the side that
goes first alternates; medians over the rounds):
  warm     each timed run follows an untimed run of the same side (the probe generates twice, the server
           answers twice): both sides on weights their own last pass read -- a server in use, a CLI session
  cold     each timed run follows `ttft_probe`'s thrash of 256 MiB (written and read): both sides on weights
           out of the caches
  process  a whole `infera generate` process, then one HTTP request (sessions 14-17's method: the request
           follows a process that has just loaded the same weights, so the server's copy is cold while the
           CLI's own pass reads weights its load has just written -- not the same conditions)
Every timed figure is also written to --raw (JSON lines).  Wall clock (TTFT is a latency): read it on a quiet
machine, or as a ratio of interleaved runs; the load average is printed.

usage: ttft.py INFERA MODEL [--rounds 15] [--threads 1] [--words 8,200] [--methods warm,cold,process]
               [--probe build/bench/ttft_probe] [--raw /tmp/ttft-raw.jsonl]
"""
import argparse, json, os, re, socket, statistics, subprocess, sys, threading, time


def http_ttft(port, prompt):
    body = json.dumps({"model": "m", "prompt": prompt, "max_tokens": 2, "temperature": 0, "stream": True}).encode()
    req = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(
        body) + body
    t0 = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed before the first token: %r" % buf[:300])
        buf += chunk
        for line in buf.split(b"\n"):
            if line.startswith(b"data: {"):
                d = json.loads(line[6:])
                if d["choices"] and d["choices"][0].get("text"):
                    t = time.perf_counter() - t0
                    # read the rest of the stream so that the slot is free before the next request
                    while b"data: [DONE]" not in buf:
                        more = s.recv(65536)
                        if not more:
                            break
                        buf += more
                    s.close()
                    return t * 1e3


def server_ttft_sum(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    m = re.search(rb"^vllm:time_to_first_token_seconds_sum\{[^}]*\} ([0-9.eE+-]+)", buf, re.M)
    return float(m.group(1)) if m else float("nan")


class Probe:
    def __init__(self, path, model, threads):
        self.p = subprocess.Popen([path, model, "--threads", str(threads)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline()
        if not out:
            sys.exit("ttft_probe stopped")
        return json.loads(out)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infera")
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--words", default="8,200", help="prompt lengths in words")
    ap.add_argument("--methods", default="warm,cold,process")
    ap.add_argument("--probe", default=None, help="bench/ttft_probe (default: next to INFERA in bench/)")
    ap.add_argument("--raw", default="/tmp/ttft-raw.jsonl")
    a = ap.parse_args()
    methods = a.methods.split(",")
    probe_path = a.probe or os.path.join(os.path.dirname(os.path.abspath(a.infera)), "bench", "ttft_probe")
    log = open("/tmp/ttft-serve.log", "w")
    raw = open(a.raw, "w")
    srv = subprocess.Popen([a.infera, "serve", "--port", "0", "--model", "m=" + a.model, "--llm-slots", "1",
                            "--llm-ctx", "1024", "--threads", str(a.threads)], stderr=subprocess.PIPE, text=True)
    port = None
    for line in srv.stderr:
        log.write(line)
        if "listening on http://" in line:
            port = int(line.split("listening on http://")[1].split()[0].rsplit(":", 1)[1].strip("/"))
            break
    if port is None:
        sys.exit("the server did not start")
    # keep draining the server's log: a full pipe would stop the server at its next log line
    threading.Thread(target=lambda: [log.write(line) for line in srv.stderr], daemon=True).start()
    probe = Probe(probe_path, a.model, a.threads) if {"warm", "cold"} & set(methods) else None
    print("load at start %s; %d rounds; methods %s; raw figures in %s" % (
        " ".join(open("/proc/loadavg").read().split()[:3]), a.rounds, ",".join(methods), a.raw))

    last = [0.0]  # the TTFT sum after the last request: read after each request, never between the step
    # that makes a timed run warm or cold and the run itself (a GET just before it would wake the server)

    def http_req(prompt):
        h = http_ttft(port, prompt)
        now = server_ttft_sum(port)
        s, last[0] = (now - last[0]) * 1e3, now
        return h, s

    def cli_process(prompt):
        j = json.loads(subprocess.run([a.infera, "generate", a.model, "--prompt", prompt, "--max-tokens", "1",
                                       "--temperature", "0", "--threads", str(a.threads), "--json"],
                                      check=True, capture_output=True, text=True).stdout)
        return j["ttft_ms"], j["prompt_tokens"]

    try:
        base = "The history of the city goes back to ancient times, when traders crossed the river here"
        words = base.split()
        for nw in (int(x) for x in a.words.split(",")):
            prompt = " ".join(words[i % len(words)] for i in range(nw))
            res = {m: {"cli": [], "http": [], "server": []} for m in methods}
            n_tok = 0
            http_req(prompt)  # warm-up (first touch of the server's buffers)
            if probe:
                probe.cmd("gen " + prompt)
            for rnd in range(a.rounds):
                order = methods[rnd % len(methods):] + methods[:rnd % len(methods)]
                for m in order:
                    sides = ["cli", "http"] if rnd % 2 == 0 else ["http", "cli"]
                    if m == "process":
                        sides = ["cli", "http"]  # the old method's order, which is its point
                    for side in sides:
                        if m == "warm":
                            if side == "cli":
                                probe.cmd("gen " + prompt)
                            else:
                                http_req(prompt)
                        elif m == "cold":
                            probe.cmd("thrash 256")
                        if side == "cli":
                            if m == "process":
                                c, n_tok = cli_process(prompt)
                            else:
                                j = probe.cmd("gen " + prompt)
                                c, n_tok = j["ttft_ms"], j["prompt_tokens"]
                            res[m]["cli"].append(c)
                            raw.write(json.dumps({"words": nw, "tokens": n_tok, "round": rnd, "method": m,
                                                  "side": "cli", "ttft_ms": round(c, 3)}) + "\n")
                        else:
                            h, s = http_req(prompt)
                            res[m]["http"].append(h)
                            res[m]["server"].append(s)
                            raw.write(json.dumps({"words": nw, "tokens": n_tok, "round": rnd, "method": m,
                                                  "side": "http", "ttft_ms": round(h, 3),
                                                  "server_ttft_ms": round(s, 3)}) + "\n")
                raw.flush()
            load = open("/proc/loadavg").read().split()[0]
            for m in methods:
                c, h, s = (statistics.median(res[m][k]) for k in ("cli", "http", "server"))
                ratios = [y / x for x, y in zip(res[m]["cli"], res[m]["http"])]
                print("prompt %3d tokens, %-7s CLI %7.2f ms, HTTP %7.2f ms (server's own %7.2f), medians of %d: "
                      "HTTP / CLI = %.3f (median round %.3f); load %s"
                      % (n_tok, m + ":", c, h, s, a.rounds, h / c, statistics.median(ratios), load))
    finally:
        if probe:
            probe.close()
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
