#!/usr/bin/env python3
"""Aggregate generation throughput of an OpenAI-compatible server under C concurrent clients.

Each of C threads sends greedy /v1/chat/completions requests (an instruct model answers at length) (one at a time, back to back) until R requests in
total have been answered; prints one JSON line: {"clients", "requests", "completion_tokens", "seconds",
"tokens_per_s", "texts"}.  tokens_per_s = completion tokens of all answers / wall time.  Standard library
only (urllib), so it runs with any python3.
usage: serve_clients.py URL MODEL CLIENTS REQUESTS MAX_TOKENS
"""
import json
import sys
import threading
import time
import urllib.request

PROMPTS = ["Write a story about a dragon who learns to cook.",
           "Explain how a bicycle works, step by step.",
           "List the planets of the solar system and describe each.",
           "Describe a walk through a forest in autumn.",
           "Tell me about the history of the printing press.",
           "What makes a good friend? Give examples.",
           "Describe the water cycle to a child.",
           "Write a letter to a pen pal about your town."]


def main():
    url, model, clients, requests, max_tokens = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    lock = threading.Lock()
    state = {"next": 0, "tokens": 0, "texts": {}}

    def worker():
        while True:
            with lock:
                i = state["next"]
                if i >= requests:
                    return
                state["next"] += 1
            body = json.dumps({"model": model, "messages": [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}],
                               "max_tokens": max_tokens, "temperature": 0}).encode()
            req = urllib.request.Request(url + "/v1/chat/completions", body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=600) as r:
                ans = json.load(r)
            with lock:
                state["tokens"] += ans["usage"]["completion_tokens"]
                state["texts"][i] = ans["choices"][0]["message"]["content"]

    t0 = time.time()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.time() - t0
    print(json.dumps({"clients": clients, "requests": requests, "completion_tokens": state["tokens"],
                      "seconds": round(dt, 3), "tokens_per_s": round(state["tokens"] / dt, 2),
                      "texts": [state["texts"].get(i) for i in range(requests)]}))


if __name__ == "__main__":
    main()
