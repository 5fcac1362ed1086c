#!/usr/bin/env python3
# bench/serve_throughput.py — aggregate generation throughput of an OpenAI-compatible server with
# N concurrent completions (issue 17): `strata-engine serve` and llama.cpp's `llama-server` on the
# same model and thread count, run one after the other in the same invocation. Each round sends N
# greedy completions of --tokens tokens (ignore_eos) at once and divides the completion tokens the
# server reports (usage.completion_tokens) by the wall time from the first request to the last
# answer (the short prompts' reading included). One warm-up round per server is not counted.
# A benchmark, not a test: it prints a table.
#
# Usage: serve_throughput.py MODEL.gguf [--strata build/app/strata-engine]
#            [--llama /work/llama-ref/build/bin/llama-server] [--threads 2] [--streams 8]
#            [--tokens 64] [--rounds 3] [--only strata|llama]
import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import threading
import time

PROMPTS = ["Once upon a time", "The weather today", "In a small village", "She opened the door",
           "Numbers are", "The robot said", "A long road", "Tomorrow we will"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def drain(stream):
    threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()


def start_strata(binary, model, threads, streams, ctx):
    p = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", "--parallel", str(streams), "--ctx", str(ctx),
                          "--threads", str(threads)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    for line in p.stderr:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            drain(p.stderr)
            return p, int(m.group(1))
    raise RuntimeError("strata-engine serve did not start")


def start_llama(binary, model, threads, streams, ctx):
    port = free_port()
    # -c is the context of all slots together; -ngl 0: CPU only; --no-webui: just the API.
    p = subprocess.Popen([binary, "-m", model, "--port", str(port), "-t", str(threads), "-tb", str(threads),
                          "-np", str(streams), "-c", str(ctx * streams), "-ngl", "0", "--no-webui"],
                         stderr=subprocess.STDOUT, stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        if "listening on" in line or "server is listening" in line:
            drain(p.stdout)
            return p, port
    raise RuntimeError("llama-server did not start")


def complete(port, prompt, tokens, out, i):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    body = {"prompt": prompt, "max_tokens": tokens, "temperature": 0, "ignore_eos": True, "stream": False}
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {data[:200]!r}")
    out[i] = json.loads(data)["usage"]["completion_tokens"]


def round_tps(port, streams, tokens):
    out = [0] * streams
    threads = [threading.Thread(target=complete, args=(port, PROMPTS[i % len(PROMPTS)], tokens, out, i))
               for i in range(streams)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    return sum(out) / wall, sum(out)


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def measure(name, proc_port, streams, tokens, rounds):
    p, port = proc_port
    try:
        round_tps(port, streams, 8)  # warm-up
        figures = []
        for r in range(rounds):
            tps, n = round_tps(port, streams, tokens)
            figures.append(tps)
            print(f"  {name} round {r + 1}: {n} tokens, {tps:.1f} tok/s aggregate (load {load()})", flush=True)
        single = []
        for r in range(rounds):
            tps, _ = round_tps(port, 1, tokens)
            single.append(tps)
        print(f"  {name} one stream: {', '.join(f'{x:.1f}' for x in single)} tok/s", flush=True)
        return figures, single
    finally:
        p.terminate()
        p.wait(timeout=30)


def fmt(v):
    return f"{statistics.mean(v):.1f} ± {statistics.pstdev(v):.1f}" if v else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--strata", default="build/app/strata-engine")
    ap.add_argument("--llama", default="/work/llama-ref/build/bin/llama-server")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ctx", type=int, default=512, help="context per stream")
    ap.add_argument("--only", choices=["strata", "llama"])
    a = ap.parse_args()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"machine: {os.cpu_count()} cores, {cpu}; model {a.model}; {a.threads} threads, {a.streams} streams x "
          f"{a.tokens} tokens, greedy", flush=True)
    rows = []
    if a.only != "llama":
        rows.append(("strata-engine serve",) +
                    measure("strata", start_strata(a.strata, a.model, a.threads, a.streams, a.ctx), a.streams,
                            a.tokens, a.rounds))
    if a.only != "strata" and os.path.exists(a.llama):
        rows.append(("llama-server",) +
                    measure("llama", start_llama(a.llama, a.model, a.threads, a.streams, a.ctx), a.streams,
                            a.tokens, a.rounds))
    print()
    print(f"| server | {a.streams} streams, aggregate tok/s | 1 stream, tok/s |")
    print("|---|---:|---:|")
    for name, many, one in rows:
        print(f"| {name} | {fmt(many)} | {fmt(one)} |")
    if len(rows) == 2:
        print(f"\nratio strata / llama-server at {a.streams} streams: "
              f"{statistics.mean(rows[0][1]) / statistics.mean(rows[1][1]):.2f}")


if __name__ == "__main__":
    main()
