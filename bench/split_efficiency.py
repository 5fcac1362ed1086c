#!/usr/bin/env python3
"""bench/split_efficiency.py — issue 51: do two (or three) devices beat one? Decode speed of the
same model on simulated devices paced to a declared bandwidth (1 GB/s by default), one device
holding the whole model against a layer split and a tensor split, at 1, 8, 16 and 24 sequences
(`strata-engine bench -p 0 -n N_GEN --parallel K --no-bandwidth`). For each run it also reads the
Chrome trace the run wrote (`--trace`) and prints how busy each device was in the steady window,
and asks `strata-engine plan --json --parallel K` what it predicts for the same placement.

A benchmark, not a test: the figures depend on the machine and on what else runs. A simulated
device computes on the host's threads (one each) and sleeps out the rest of each op's declared
time, so where the host computes slower than the declared device, the host sets the speed.

Busy: the union of a device lane's compute, embedding and head spans (not all-reduces or
transfers) over the window from the first to the last span of the timed (pipelined) series,
found as the spans whose n_tokens is the run's micro-batch rows (plan's
decode_rows_per_micro_batch), cut at gaps of more than 50 ms (between repetitions) and the longest
piece kept.

Usage: split_efficiency.py STRATA_ENGINE MODEL.gguf [--bw 1GB/s] [--threads 2] [--n-gen 8]
                           [--reps 2] [--json OUT.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# (label, devices (ids), split mode, sequence counts)
RUNS = [
    ("one device, whole model", ["a"], "none", [1, 8, 16, 24]),
    ("two devices, layer split", ["a", "b"], "layer", [1, 8, 16]),
    ("two devices, tensor split", ["a", "b"], "tensor", [1, 8]),
    ("three devices, layer split", ["a", "b", "c"], "layer", [24]),
]
BUSY_CATEGORIES = ("compute", "embed", "head")


def device_spec(ids, bw):
    return ",".join(f"sim:{i}:4GiB:bw={bw}" for i in ids)


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr}")
    return done.stdout


def predicted(engine, model, devices, mode, k, threads):
    cmd = [engine, "plan", "-m", model, "--devices", devices, "--parallel", str(k), "-t", str(threads), "--json"]
    if mode != "none":
        cmd += ["--split-mode", mode]
    j = json.loads(run(cmd))
    cost = j.get("cost_on_this_machine") or j["cost"]
    return cost["decode_tokens_per_s"], cost.get("decode_rows_per_micro_batch", 1), j["cost"]["decode_tokens_per_s"]


def busy_fractions(trace_path, rows):
    trace = json.load(open(trace_path))
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = sorted((e for e in events if e.get("ph") == "X" and e.get("args", {}).get("n_tokens") == rows),
                   key=lambda e: e["ts"])
    if not spans:
        return {}, 0.0
    # Steady windows: runs of spans without a gap over 50 ms (the trace's times are microseconds).
    pieces, current, end = [], [], None
    for e in spans:
        if current and e["ts"] - end > 50e3:
            pieces.append(current)
            current = []
        current.append(e)
        end = max(end or 0, e["ts"] + e["dur"]) if current[:-1] else e["ts"] + e["dur"]
    pieces.append(current)
    spans = max(pieces, key=lambda p: max(e["ts"] + e["dur"] for e in p) - p[0]["ts"])
    lo = spans[0]["ts"]
    hi = max(e["ts"] + e["dur"] for e in spans)
    out = {}
    for tid, name in names.items():
        lane = sorted((e["ts"], e["ts"] + e["dur"]) for e in spans if e["tid"] == tid and e.get("cat") in BUSY_CATEGORIES)
        if not lane:
            continue
        busy, end = 0.0, lo
        for s, e in lane:
            s = max(s, end)
            if e > s:
                busy += e - s
                end = e
        out[name.split(" ")[0]] = busy / (hi - lo)
    return out, (hi - lo) / 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("engine")
    ap.add_argument("model")
    ap.add_argument("--bw", default="1GB/s")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n-gen", type=int, default=8)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--json", help="write the results here too")
    a = ap.parse_args()
    results = []
    baseline = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, ids, mode, counts in RUNS:
            devices = device_spec(ids, a.bw)
            for k in counts:
                trace = os.path.join(tmp, "trace.json")
                cmd = [a.engine, "bench", "-m", a.model, "-p", "0", "-n", str(a.n_gen), "-r", str(a.reps), "--parallel",
                       str(k), "--no-bandwidth", "--no-one-in-flight", "-t", str(a.threads), "--devices", devices, "--json", "--trace", trace]
                if mode != "none":
                    cmd += ["--split-mode", mode]
                j = json.loads(run(cmd))
                want = f"tg{a.n_gen}" + (f" x{k}" if k > 1 else "")
                tps = next(r["tokens_per_s"] for r in j["results"] if r["test"] == want)
                pred, rows, declared = predicted(a.engine, a.model, devices, mode, k, a.threads)
                busy, window_ms = busy_fractions(trace, rows)
                if mode == "none":
                    baseline[k] = tps
                r = {"run": label, "split_mode": mode, "devices": devices, "sequences": k, "tokens_per_s": tps,
                     "vs_one_device": tps / baseline[k] if k in baseline else None, "busy": busy,
                     "window_ms": window_ms, "predicted_on_this_machine": pred, "predicted_declared": declared,
                     "predicted_over_measured": pred / tps, "rows_per_micro_batch": rows,
                     "command": " ".join(cmd[:cmd.index("--trace")] + cmd[cmd.index("--trace") + 2:])}
                results.append(r)
                busy_text = ", ".join(f"{d} {100 * f:.0f}%" for d, f in sorted(busy.items()))
                ratio = f"{r['vs_one_device']:.2f}x" if r["vs_one_device"] else "-"
                print(f"| {label} | {k} | {tps:.1f} | {ratio} | {busy_text} | {pred:.1f} ({pred / tps:.2f}) |",
                      flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
