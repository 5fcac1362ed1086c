#!/usr/bin/env python3
# bench/serve_itl.py — chunked prefill benchmark for `strata-engine serve` (issue 15, item 10):
# the inter-token latency of 4 streaming completions, alone and while a 2k-token prompt is read,
# for one or more --prompt-chunk values. Client-side times (SSE chunk arrivals; one chunk per
# token here) plus the server's own /metrics percentiles. A benchmark, not a test: it prints.
#
# Usage: serve_itl.py STRATA_ENGINE MODEL.gguf [--threads N] [--chunks 256,4096] [--tokens 48]
import argparse
import http.client
import json
import re
import subprocess
import threading
import time


def start(binary, model, threads, chunk):
    p = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", "--parallel", "5", "--ctx", "4096",
                          "--threads", str(threads), "--prompt-chunk", str(chunk)],
                         stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, int(m.group(1))
    raise RuntimeError("server did not start")


def stream(port, body, times):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    buf = b""
    while True:
        data = r.read1(65536)
        if not data:
            break
        buf += data
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            if event.startswith(b"data: ") and event != b"data: [DONE]":
                j = json.loads(event[6:])
                if j.get("choices") and j["choices"][0].get("text"):
                    times.append(time.monotonic())
    c.close()


def post(port, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, out


def pct(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def run_phase(port, n_tokens, long_prompt):
    times = [[] for _ in range(4)]
    body = {"prompt": "Once upon a time", "max_tokens": n_tokens, "ignore_eos": True, "temperature": 0, "stream": True}
    threads = [threading.Thread(target=stream, args=(port, body, times[i])) for i in range(4)]
    for t in threads:
        t.start()
    ttft = None
    if long_prompt:
        # Start the long prompt once every stream is generating.
        while min(len(t) for t in times) < 4:
            time.sleep(0.005)
        t0 = time.monotonic()
        status, _ = post(port, {"prompt": long_prompt, "max_tokens": 1, "temperature": 0})
        assert status == 200, status
        ttft = time.monotonic() - t0
    for t in threads:
        t.join()
    gaps = [b - a for ts in times for a, b in zip(ts, ts[1:])]
    return gaps, ttft


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--chunks", default="256,4096")
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--prompt-tokens", type=int, default=2048)
    a = ap.parse_args()
    long_prompt = [1] + [(7 * i) % 400 + 50 for i in range(a.prompt_tokens - 1)]
    for chunk in [int(c) for c in a.chunks.split(",")]:
        server, port = start(a.binary, a.model, a.threads, chunk)
        try:
            post(port, {"prompt": "warm up", "max_tokens": 4})
            alone, _ = run_phase(port, a.tokens, None)
            mixed, ttft = run_phase(port, a.tokens, long_prompt)
            c = http.client.HTTPConnection("127.0.0.1", port)
            c.request("GET", "/metrics")
            metrics = c.getresponse().read().decode()
            p99 = re.search(r'strata_inter_token_latency_seconds\{quantile="0.99"\} (\S+)', metrics).group(1)
            print(f"prompt-chunk {chunk:5d}: ITL p50/p99 alone {pct(alone, .5)*1e3:7.1f} / {pct(alone, .99)*1e3:7.1f} ms; "
                  f"with a {a.prompt_tokens}-token prompt {pct(mixed, .5)*1e3:7.1f} / {pct(mixed, .99)*1e3:7.1f} ms "
                  f"(max {max(mixed)*1e3:.0f} ms); long prompt answered in {ttft:.2f} s; "
                  f"server ITL p99 over both {float(p99)*1e3:.1f} ms")
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
