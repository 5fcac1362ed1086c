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
transfers) over the steady state of the timed (pipelined) series: the series is found as the spans
whose n_tokens is the run's micro-batch rows (plan's decode_rows_per_micro_batch), cut at gaps of
more than 50 ms with the longest piece kept. It holds several repetitions of the decode steps (a
sequence's embedding position starting over opens one, whose first step is bench's untimed BOS
step). In each, the steady state of the timed steps runs from the moment every device has started
(the last lane's first span) to the moment the first device has finished (the first lane's last
span), leaving out the pipeline's fill and drain, which a server decoding without pause does not
have. The table prints that figure and, in brackets, the fraction
of the whole series (fill and drain included: with --n-gen 8, one micro-batch of every 8-16 on
each device, each repetition).

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


def lane_busy(spans, tid, lo, hi):
    """Microseconds of [lo, hi] that lane tid's compute / embedding / head spans cover (their union)."""
    lane = sorted((max(e["ts"], lo), min(e["ts"] + e["dur"], hi)) for e in spans
                  if e["tid"] == tid and e.get("cat") in BUSY_CATEGORIES)
    busy, end = 0.0, lo
    for s, e in lane:
        s = max(s, end)
        if e > s:
            busy += e - s
            end = e
    return busy


def rep_starts(spans):
    """When each repetition of the timed series starts, and when its second step does: within a
    repetition the embedding spans' positions grow step by step (the micro-batches of a step are
    at most one position apart), and the next one starts again at the first position, well below
    the last one seen. The first step of each is `bench`'s untimed BOS step (all sequences in one
    eval, waited for), so the timed, rolling steps start with the next position."""
    starts, top = [], None
    for e in spans:
        if e.get("cat") != "embed":
            continue
        tok = e["args"].get("token", 0)
        if top is None or tok < top - 1:
            starts.append([e["ts"], None, tok])
            top = tok
        elif starts[-1][1] is None and tok > starts[-1][2]:
            starts[-1][1] = e["ts"]
        top = max(top, tok)
    return [(begin, rolling if rolling is not None else begin) for begin, rolling, _ in starts]


def busy_fractions(trace_path, rows):
    """Each lane's busy fraction of the steady-state windows and of the whole series, and the
    steady windows' length in ms. The series: the longest run of the timed series' spans (those
    of the run's micro-batch rows) without a gap over 50 ms. It holds several repetitions of the
    decode steps (rep_starts), each of whose timed steps fills the pipeline (the later stages wait
    for the first micro-batch) and drains it (the first stages wait for the last). A repetition's
    steady state runs from the moment the last lane starts its first timed span to the moment the
    first lane ends its last one."""
    trace = json.load(open(trace_path))
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = sorted((e for e in events if e.get("ph") == "X" and e.get("args", {}).get("n_tokens") == rows),
                   key=lambda e: e["ts"])
    if not spans:
        return {}, {}, 0.0
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
    series_lo = spans[0]["ts"]
    series_hi = max(e["ts"] + e["dur"] for e in spans)
    lanes = sorted({e["tid"] for e in spans if e.get("cat") in BUSY_CATEGORIES and e["tid"] in names})
    reps = rep_starts(spans) or [(series_lo, series_lo)]
    ends = [begin for begin, _ in reps[1:]] + [series_hi + 1]
    windows = []
    for (_, rolling), end in zip(reps, ends):
        rep = [e for e in spans if rolling <= e["ts"] < end and e.get("cat") in BUSY_CATEGORIES]
        if any(not any(e["tid"] == t for e in rep) for t in lanes):
            continue  # a lane without work in this repetition: no steady state in it
        lo = max(min(e["ts"] for e in rep if e["tid"] == t) for t in lanes)
        hi = min(max(e["ts"] + e["dur"] for e in rep if e["tid"] == t) for t in lanes)
        if hi > lo:
            windows.append((lo, hi))
    if not windows:
        windows = [(series_lo, series_hi)]
    length = sum(hi - lo for lo, hi in windows)
    steady, series = {}, {}
    for tid in lanes:
        name = names[tid].split(" ")[0]
        steady[name] = sum(lane_busy(spans, tid, lo, hi) for lo, hi in windows) / length
        series[name] = lane_busy(spans, tid, series_lo, series_hi) / (series_hi - series_lo)
    return steady, series, length / 1e3


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
                busy, busy_series, window_ms = busy_fractions(trace, rows)
                if mode == "none":
                    baseline[k] = tps
                r = {"run": label, "split_mode": mode, "devices": devices, "sequences": k, "tokens_per_s": tps,
                     "vs_one_device": tps / baseline[k] if k in baseline else None, "busy": busy,
                     "busy_whole_series": busy_series,
                     "window_ms": window_ms, "predicted_on_this_machine": pred, "predicted_declared": declared,
                     "predicted_over_measured": pred / tps, "rows_per_micro_batch": rows,
                     "command": " ".join(cmd[:cmd.index("--trace")] + cmd[cmd.index("--trace") + 2:])}
                results.append(r)
                busy_text = ", ".join(f"{d} {100 * f:.0f}% ({100 * busy_series[d]:.0f}%)" for d, f in sorted(busy.items()))
                ratio = f"{r['vs_one_device']:.2f}x" if r["vs_one_device"] else "-"
                print(f"| {label} | {k} | {tps:.1f} | {ratio} | {busy_text} | {pred:.1f} ({pred / tps:.2f}) |",
                      flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
