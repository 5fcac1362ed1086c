#!/usr/bin/env python3
"""bench/predict_vs_bench.py — issue 49 item 4: does `plan` predict the CPU decode speed that `bench`
measures? For each model shape and weight type: make a random-weight GGUF of that shape
(`strata-engine make-model`), ask `plan --json` for the predicted decode tokens/s on the CPU (the
cost model with this machine's measured speeds, cpu-speed.json), measure decode with `bench --json`
(tg, one sequence), and print the ratio. A benchmark, not a test: the figures depend on the machine
and on what else runs; the target is predicted/measured within 0.75-1.25 on a quiet machine.

Usage: predict_vs_bench.py STRATA_ENGINE VOCAB_GGUF [--threads N] [--remeasure] [--out DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# SmolLM2-135M's shape and a larger one (TinyLlama-1.1B's blocks, fewer of them), at the types
# users run.
SHAPES = [
    ("smollm2-135m", dict(dim=576, layers=30, heads=9, kv_heads=3, ffn=1536)),
    ("tinyllama-8blk", dict(dim=2048, layers=8, heads=32, kv_heads=4, ffn=5632)),
]
TYPES = ["q8_0", "q4_k_m", "f16"]


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("engine")
    ap.add_argument("vocab")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--remeasure", action="store_true", help="measure the CPU again before planning")
    ap.add_argument("--out", default=None, help="folder for the generated models (default: a temporary one)")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    tmp = a.out or tempfile.mkdtemp(prefix="strata_predict_")
    t = ["-t", str(a.threads)]
    if a.remeasure:
        subprocess.run([a.engine, "devices", "--measure-cpu"] + t, check=True)
    rows = []
    for name, shape in SHAPES:
        for wtype in TYPES:
            path = os.path.join(tmp, f"{name}-{wtype}.gguf")
            if not os.path.exists(path):
                subprocess.run([a.engine, "make-model", "--arch", "llama", "--dim", str(shape["dim"]),
                                "--layers", str(shape["layers"]), "--heads", str(shape["heads"]),
                                "--kv-heads", str(shape["kv_heads"]), "--ffn", str(shape["ffn"]), "--ctx", "2048",
                                "--type", wtype, "--vocab-from", a.vocab, "-o", path] + t,
                               check=True, capture_output=True)
            plan = run_json([a.engine, "plan", "-m", path, "--devices", "cpu", "--json"] + t)
            bench = run_json([a.engine, "bench", "-m", path, "-p", "0", "-n", "32", "-r", str(a.reps), "--json"] + t)
            predicted = plan["cost"]["decode_tokens_per_s"]
            measured = next(r["tokens_per_s"] for r in bench["results"] if r["test"].startswith("tg"))
            bw = bench["results"][0]["bandwidth_gbps"]
            rows.append((name, wtype, predicted, measured, predicted / measured,
                         sum(bw) / len(bw) if bw else 0.0))
    print(f"| shape | type | plan tok/s | bench tok/s | plan/bench | read GB/s during bench |")
    print(f"|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.1f} | {r[4]:.2f} | {r[5]:.1f} |")
    worst = max(abs(r[4] - 1.0) for r in rows)
    print(f"\nworst |plan/bench - 1| = {worst:.2f} (target <= 0.25)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
