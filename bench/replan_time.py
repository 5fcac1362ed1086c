#!/usr/bin/env python3
"""bench/replan_time.py — how long the engine takes to re-plan after losing a device.

Starts `strata-engine serve` on MODEL over cpu + two simulated GPUs (layer split), generates once
to warm up, arms a lost-device fault on gpu1 through the control API, generates again (gpu1 is
lost mid-request), and prints the re-plan record from /strata/v1/status: how long planning and
re-placing took (weights of the moved blocks loaded from the mapped file), how many blocks moved,
and whether the text matched the run without the fault.

Usage: bench/replan_time.py [--engine build/app/strata-engine] MODEL [--gpu 1GiB] [--threads 2]
"""
import argparse, json, socket, subprocess, sys, time, urllib.request

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def call(port, method, path, body=None, key="bench"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--engine", default="build/app/strata-engine")
    ap.add_argument("--gpu", default="1GiB")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--tokens", type=int, default=16)
    a = ap.parse_args()
    port = free_port()
    devices = f"cpu,sim:gpu0:{a.gpu},sim:gpu1:{a.gpu}"
    proc = subprocess.Popen([a.engine, "serve", "-m", a.model, "--port", str(port), "--api-key", "bench",
                             "--devices", devices, "-t", a.threads, "--ctx", "512", "--parallel", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):
            try:
                if call(port, "GET", "/strata/v1/status")["state"] == "ready": break
            except Exception:
                pass
            time.sleep(0.5)
        status = call(port, "GET", "/strata/v1/status")
        body = {"prompt": "Once upon a time", "max_tokens": a.tokens, "temperature": 0, "ignore_eos": True}
        before = call(port, "POST", "/v1/completions", body)["choices"][0]["text"]
        call(port, "POST", "/strata/v1/devices/gpu1/fault", {"kind": "lost", "after_ops": 100})
        t0 = time.monotonic()
        after = call(port, "POST", "/v1/completions", body)["choices"][0]["text"]
        request_s = time.monotonic() - t0
        status = call(port, "GET", "/strata/v1/status")
        r = status["replans"][-1]
        print(f"model: {a.model} ({status['model']['parameters']/1e9:.2f} B parameters, {status['model']['n_layers']} blocks)")
        print(f"devices: {devices}, {a.threads} threads")
        print(f"re-plan after losing {','.join(r['lost'])}: {r['ms']:.1f} ms, {r['moved_blocks']} blocks moved, ok={r['ok']}")
        for line in r["explanation"]: print("  " + line)
        print(f"request with the fault: {request_s:.2f} s for {a.tokens} tokens; text equal to the run without it: {after == before}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)

if __name__ == "__main__":
    sys.exit(main())
