#!/usr/bin/env python3
# bench/serve_probe.py — issue 48's "Done when" figures for `strata-engine serve`, measured with the
# issue's own probes: resident memory before and after the header bomb (one connection sending
# "X-A: b" lines for 9.5 s, four runs, with and without --api-key) and the 1,300-range request; how
# long after the last of 200 fire-and-forget completions (max_tokens 300) the queue and the slots
# are empty (/metrics); and a short request's time to first token while a 1,500-token prompt is
# read, next to the long prompt's own. A benchmark, not a test: it prints, and asserts nothing on
# time (tests/serve/test_serve_hardening.cpp checks the outcomes without clocks).
#
# Usage: serve_probe.py STRATA_ENGINE MODEL.gguf [--threads N]
import argparse
import http.client
import json
import re
import socket
import subprocess
import threading
import time


def start(binary, model, extra):
    p = subprocess.Popen([binary, "serve", "-m", model, "--port", "0"] + extra, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, int(m.group(1))
    raise RuntimeError("server did not start")


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def request(port, method, path, body=None, key=None, timeout=600):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    c.request(method, path, json.dumps(body) if body is not None else None, headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def metric(port, name):
    _, text = request(port, "GET", "/metrics")
    m = re.search(rf"^{name} (\S+)$", text.decode(), re.M)
    return float(m.group(1)) if m else -1


def header_bomb(port, seconds=9.5):
    """The issue's reproducer 1: header lines until the server closes or `seconds` pass."""
    s = socket.create_connection(("127.0.0.1", port))
    sent = 0
    try:
        s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
        t = time.time()
        while time.time() - t < seconds:
            s.sendall(b"X-A: b\r\n" * 8192)
            sent += 8 * 8192
    except OSError:
        pass
    s.close()
    return sent


def probe_memory(binary, model, threads):
    for key in (None, "k"):
        extra = ["--threads", str(threads)] + (["--api-key", key] if key else [])
        p, port = start(binary, model, extra)
        try:
            request(port, "GET", "/strata/v1/status", key=key)
            before = rss_mb(p.pid)
            sent = [header_bomb(port) for _ in range(4)]
            after = rss_mb(p.pid)
            print(f"header bomb ({'--api-key' if key else 'no key'}): RSS {before:.1f} -> {after:.1f} MB "
                  f"({100 * (after / before - 1):+.1f}%), bytes written per run before the connection broke: {sent}")
            if key is None:
                ranges = ",".join(["0-"] * 1300)
                for path in ("/strata/v1/trace.json?seconds=10", "/strata/v1/status"):
                    before = rss_mb(p.pid)
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    c.request("GET", path, headers={"Range": f"bytes={ranges}"})
                    r = c.getresponse()
                    body = r.read()
                    c.close()
                    plain = request(port, "GET", path)[1]
                    after = rss_mb(p.pid)
                    print(f"range probe {path}: status {r.status}, {len(body)} bytes (plain {len(plain)}), "
                          f"RSS {before:.1f} -> {after:.1f} MB ({100 * (after / before - 1):+.1f}%)")
        finally:
            stop(p)


def probe_abandoned(binary, model, threads):
    p, port = start(binary, model, ["--threads", str(threads), "--max-connections-per-client", "256"])
    try:
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 300, "temperature": 0})
        req = (f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n{body}").encode()
        for _ in range(200):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(req)
            s.close()
        last = time.time()
        peak = 0
        while True:
            waiting, active = metric(port, "strata_requests_waiting"), metric(port, "strata_requests_active")
            peak = max(peak, waiting + active)
            if waiting == 0 and active == 0:
                break
            if time.time() - last > 120:
                break
        drained = time.time() - last
        t0 = time.time()
        status, _ = request(port, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 4, "temperature": 0})
        _, text = request(port, "GET", "/metrics")
        n499 = sum(int(float(m)) for m in re.findall(r'status="499"\} (\S+)', text.decode()))
        print(f"200 abandoned requests: queue and slots empty {drained:.2f} s after the last disconnect "
              f"(most seen waiting+active: {peak:.0f}); 499s counted: {n499}; a real request then: "
              f"{status} in {time.time() - t0:.2f} s")
    finally:
        stop(p)


def first_token_time(port, body, out, key):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.time()
    c.request("POST", "/v1/completions", json.dumps(dict(body, stream=True)), {"Content-Type": "application/json"})
    r = c.getresponse()
    buf = b""
    while True:
        data = r.read1(65536)
        if not data:
            break
        buf += data
        if b'"text"' in buf:
            out[key] = time.time() - t0
            break
    c.close()


def probe_prefill(binary, model, threads):
    p, port = start(binary, model, ["--threads", str(threads), "--ctx", "4096"])
    try:
        long_ids = [1] + [50 + (7 * i) % 400 for i in range(1, 1500)]
        times = {}
        # Alone first: the long prompt's own time to first token, and the short one's.
        first_token_time(port, {"prompt": long_ids, "max_tokens": 1, "temperature": 0}, times, "long_alone")
        first_token_time(port, {"prompt": [1, 300, 301, 302, 303], "max_tokens": 1, "temperature": 0}, times,
                         "short_alone")
        request(port, "POST", "/v1/completions", {"prompt": [1, 2], "max_tokens": 1})  # another slot's cache
        long_ids = [1] + [51 + (11 * i) % 400 for i in range(1, 1500)]  # not cached
        t = threading.Thread(target=first_token_time,
                             args=(port, {"prompt": long_ids, "max_tokens": 1, "temperature": 0}, times, "long"))
        t.start()
        # Once the long prompt is being read (the slot is active), send the short one.
        while metric(port, "strata_requests_active") < 1:
            pass
        time.sleep(0.5)  # a benchmark, not a test: start the short request well inside the prefill
        first_token_time(port, {"prompt": [1, 300, 301, 302, 303], "max_tokens": 1, "temperature": 0}, times, "short")
        t.join()
        print(f"1,500-token prefill: long prompt alone {times['long_alone']:.2f} s to its first token; "
              f"a short request alone {times['short_alone']:.3f} s, sent 0.5 s into the long prefill "
              f"{times['short']:.3f} s (the long one then took {times['long']:.2f} s)")
    finally:
        stop(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    probe_memory(a.binary, a.model, a.threads)
    probe_abandoned(a.binary, a.model, a.threads)
    probe_prefill(a.binary, a.model, a.threads)


if __name__ == "__main__":
    main()
