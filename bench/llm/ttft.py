#!/usr/bin/env python3
"""ttft.py -- time to first token of `infera serve`'s OpenAI endpoint next to the CLI's.

CLI: `infera generate MODEL --prompt P --max-tokens 1 --temperature 0 --json`, its "ttft_ms" (from the start of
prompt processing to the first completion token: the model is loaded and the prompt tokenized before).
HTTP: one `infera serve --model m=MODEL` (loaded once, like a server in use); a streaming POST /v1/completions
(max_tokens 2, temperature 0) over a fresh connection, timed by this client from the request's first byte to the
first `data:` event that carries text -- so it includes the connection, the request's parsing and tokenization,
the queue, prompt processing and the first SSE write.  Runs alternate CLI / HTTP; the median of each is
reported with the load average.  Wall clock (TTFT is a latency): read it on a quiet machine, or as a ratio of
interleaved runs.

usage: ttft.py INFERA MODEL [--rounds 15] [--threads 1] [--words 8,200]
"""
import argparse, json, os, socket, statistics, subprocess, sys, time


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
                    s.close()
                    return t * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infera")
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--words", default="8,200", help="prompt lengths in words")
    a = ap.parse_args()
    log = open("/tmp/ttft-serve.log", "w")
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
    try:
        base = "The history of the city goes back to ancient times, when traders crossed the river here"
        words = base.split()
        for nw in (int(x) for x in a.words.split(",")):
            prompt = " ".join(words[i % len(words)] for i in range(nw))
            cli, http, n_tok = [], [], 0
            http_ttft(port, prompt)  # warm-up (first touch of the server's buffers)
            for _ in range(a.rounds):
                j = json.loads(subprocess.run([a.infera, "generate", a.model, "--prompt", prompt, "--max-tokens", "1",
                                               "--temperature", "0", "--threads", str(a.threads), "--json"],
                                              check=True, capture_output=True, text=True).stdout)
                cli.append(j["ttft_ms"])
                n_tok = j["prompt_tokens"]
                http.append(http_ttft(port, prompt))
            c, h = statistics.median(cli), statistics.median(http)
            print("prompt %3d tokens: TTFT CLI %.2f ms, HTTP %.2f ms (median of %d each): HTTP / CLI = %.3f; load %s"
                  % (n_tok, c, h, a.rounds, h / c, open("/proc/loadavg").read().split()[0]))
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
