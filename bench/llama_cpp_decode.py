#!/usr/bin/env python3
"""bench/llama_cpp_decode.py — issue 50, item 3: one-sequence decode speed side by side with llama.cpp
on the same GGUF files, pair by pair (ours, then llama.cpp's, ROUNDS times; medians), at 1 and 2
threads. With --prompt P (item 2): prompt processing of P tokens instead (ours: `bench -p P -n 0`,
its pp rate; llama.cpp's: one `Llama.eval` of P tokens with n_batch = n_ubatch = P), and --isa
passes `--isa` to ours (avx512 / amx: the VNNI or the AMX tiles). Ours: `strata-engine bench -p 0 -n N -r 1 --no-bandwidth --json` (its tg rate). llama.cpp's:
the llama-cpp-python package (`pip install llama-cpp-python`, which builds llama.cpp from source
natively: its `llama_print_system_info()` is printed), a 4-token prompt, then N single-token
`Llama.eval` calls timed (Python's share of a call is microseconds against milliseconds of decode).

Models: made with `strata-engine make-model` (random weights; decode speed does not depend on the
values) in a shape given by --dim/--layers/--ffn, one file per --types entry, under --dir.

A benchmark, not a test: the figures depend on the machine and on what else runs.

Usage: llama_cpp_decode.py STRATA_ENGINE VOCAB.gguf [--types q8_0,q4_k_m] [--threads 1,2] [--n 32]
                           [--prompt 512] [--isa avx512|amx]
                           [--rounds 3] [--dim 1536 --layers 16 --ffn 4096] [--dir /tmp]
                           [--files A.gguf,B.gguf]   (files of any architecture instead of made llama ones)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

LLAMA_CPP = r"""
import sys, time
from llama_cpp import Llama
path, threads, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
llm = Llama(model_path=path, n_threads=threads, n_threads_batch=threads, n_ctx=256, n_batch=64, verbose=False)
llm.eval([1, 2, 3, 4])
t0 = time.perf_counter()
for i in range(n):
    llm.eval([100 + i])
print(n / (time.perf_counter() - t0))
"""

LLAMA_CPP_PROMPT = r"""
import sys, time
from llama_cpp import Llama
path, threads, p = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
llm = Llama(model_path=path, n_threads=threads, n_threads_batch=threads, n_ctx=p + 16, n_batch=p, n_ubatch=p,
            verbose=False)
llm.eval([1 + i % 1000 for i in range(16)])  # warm-up: weights paged in, buffers allocated
llm.reset()
t0 = time.perf_counter()
llm.eval([100 + i % 1000 for i in range(p)])
print(p / (time.perf_counter() - t0))
"""


def ours(engine, model, threads, n, prompt=0, isa=""):
    test = ["-p", str(prompt), "-n", "0"] if prompt else ["-p", "0", "-n", str(n)]
    p = subprocess.run([engine, "bench", "-m", model, "-t", str(threads), *test, "-r", "1", "--no-bandwidth", "--json",
                        *(["--isa", isa] if isa else [])], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"strata-engine bench failed: {p.stderr}")
    j = json.loads(p.stdout)
    for t in j["results"]:
        if t["test"].startswith("pp" if prompt else "tg"):
            return t["tokens_per_s"]
    sys.exit("no such test in strata-engine bench's JSON")


def theirs(model, threads, n, prompt=0):
    script, count = (LLAMA_CPP_PROMPT, prompt) if prompt else (LLAMA_CPP, n)
    p = subprocess.run([sys.executable, "-c", script, model, str(threads), str(count)], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"llama-cpp-python failed: {p.stderr[-2000:]}")
    return float(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("engine")
    ap.add_argument("vocab")
    ap.add_argument("--types", default="q8_0,q4_0,q4_k_m,q5_k_m,q6_k")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dim", type=int, default=1536)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--ffn", type=int, default=4096)
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--files", default="", help="existing GGUF files to time instead of making llama ones")
    ap.add_argument("--prompt", type=int, default=0, help="time prompt processing of this many tokens instead")
    ap.add_argument("--isa", default="", help="strata-engine bench --isa (avx512, amx, avx2, scalar)")
    a = ap.parse_args()
    import llama_cpp
    print("llama.cpp: llama-cpp-python", llama_cpp.__version__, "|", llama_cpp.llama_print_system_info().decode().strip())
    shape = "the files given" if a.files else f"dim {a.dim}, {a.layers} blocks, ffn {a.ffn}"
    what = f"prompt of {a.prompt} tokens" if a.prompt else f"decode of {a.n} tokens after a 4-token prompt"
    print(f"shape: {shape}; {what}; Strata --isa {a.isa or '(best)'}; median of {a.rounds} pairs")
    print("| type | threads | size MiB | Strata tok/s | llama.cpp tok/s | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    entries = [(os.path.basename(f), f) for f in a.files.split(",")] if a.files else \
        [(t, os.path.join(a.dir, f"decode-{a.dim}x{a.layers}-{t}.gguf")) for t in a.types.split(",")]
    for t, model in entries:
        if not os.path.exists(model) and a.files:
            sys.exit(f"{model} does not exist")
        if not os.path.exists(model):
            subprocess.run([a.engine, "make-model", "--arch", "llama", "--dim", str(a.dim), "--layers", str(a.layers),
                            "--heads", str(a.dim // 96), "--kv-heads", "4", "--ffn", str(a.ffn), "--ctx", "2048",
                            "--type", t, "--vocab-from", a.vocab, "-o", model], check=True, capture_output=True)
        size = os.path.getsize(model) / 2**20
        for th in (int(x) for x in a.threads.split(",")):
            s, l = [], []
            for _ in range(a.rounds):
                s.append(ours(a.engine, model, th, a.n, a.prompt, a.isa))
                l.append(theirs(model, th, a.n, a.prompt))
            ms, ml = statistics.median(s), statistics.median(l)
            print(f"| {t} | {th} | {size:.0f} | {ms:.1f} | {ml:.1f} | {ms / ml:.2f} |", flush=True)


if __name__ == "__main__":
    main()
