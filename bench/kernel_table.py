#!/usr/bin/env python3
"""Summarizes the `table` section of bench/run_benchmarks.sh: issue 17's kernel table (W 4096 x
4096, 1 and 64 tokens, 1 and 2 threads), ours beside llama.cpp's test-backend-ops; and the `small`
section the same way (W 4096 x 14336, 2-4 tokens: --cols 14336).

Input: the section's raw output, rounds of
    ### round R, T thread(s)
    <kernel_bench lines: "TYPE tokens=N best B ms (median M, mean A) ... [path]">
    <test-backend-ops lines: "MUL_MAT(type_a=TYPE,type_b=f32,m=4096,n=N,k=4096 ... U us/run ...">
Output: a markdown table, one row per thread count and type, a column group per token count. Each
side's figure is the median over the rounds of its mean time per call (test-backend-ops reports
only a mean), shown as GB/s of weights at 1 token and GFLOP/s at more; the ratio is llama.cpp's time / ours (above 1: Strata
faster), then the lowest and highest ratio of a single round. Cells without a llama.cpp figure
show "-". (test-backend-ops has Q4_K at m = 4096, n = 1, k = 4096 twice, its own multi-column
mat-vec case included: a round's figure is then the mean of the two.)

Usage: bench/kernel_table.py RAW_OUTPUT_FILE [--cols K]   (K: the weight's columns, default 4096)
"""
import re
import statistics
import sys

ROWS = 4096
COLS = 4096  # main() sets it from --cols
# Bytes per weight element of each type (GGUF block sizes).
BYTES_PER_ELEMENT = {
    "f32": 4, "f16": 2, "bf16": 2,
    "q8_0": 34 / 32, "q4_0": 18 / 32, "q4_1": 20 / 32, "q5_0": 22 / 32, "q5_1": 24 / 32,
    "q2_k": 84 / 256, "q3_k": 110 / 256, "q4_k": 144 / 256, "q5_k": 176 / 256, "q6_k": 210 / 256,
}
ROUND = re.compile(r"^### round (\d+), (\d+) thread")
OURS = re.compile(r"^(\w+)\s+tokens=(\d+)\s+best\s+[\d.]+ ms \(median\s+[\d.]+, mean\s+([\d.]+)\).*\[(.*)\]")
THEIRS = re.compile(r"MUL_MAT\(type_a=(\w+),type_b=f32,m=4096,n=(\d+),k=\d+.*?([\d.]+) us/run")


def parse(path):
    """{(threads, type): {(side, n): [mean ms of each round]}}, the paths, the types in order."""
    cells, paths, order = {}, {}, []
    threads = rnd = None
    with open(path) as f:
        for line in f:
            m = ROUND.match(line)
            if m:
                rnd, threads = int(m.group(1)), int(m.group(2))
                continue
            m = OURS.match(line)
            if m and threads is not None:
                key = (threads, m.group(1).lower())
                if key not in cells:
                    cells[key] = {}
                    order.append(key)
                cells[key].setdefault(("ours", int(m.group(2))), []).append((rnd, float(m.group(3))))
                paths.setdefault(key, {})[int(m.group(2))] = m.group(4)
                continue
            m = THEIRS.search(line)
            if m and threads is not None:
                key = (threads, m.group(1).lower())
                cells.setdefault(key, {}).setdefault(("theirs", int(m.group(2))), []).append(
                    (rnd, float(m.group(3)) / 1000))
    return cells, paths, order


def cell(t, n, ours, theirs):
    """One n's columns: ours, theirs (rate and mean ms), ratio of the medians, per-round range."""
    work = ROWS * COLS * BYTES_PER_ELEMENT[t] / 1e6 if n == 1 else 2.0 * ROWS * COLS * n / 1e6  # MB or MFLOP
    o = statistics.median(ms for _, ms in ours)
    text = f"{work / o:.1f} ({o:.2f})"
    if not theirs:
        return text + " | - | -"
    by_round = {}
    for r, ms in theirs:
        by_round.setdefault(r, []).append(ms)
    by_round = {r: statistics.mean(v) for r, v in by_round.items()}
    l = statistics.median(by_round.values())
    per_round = [by_round[r] / ms for r, ms in ours if r in by_round]
    ratio = f"{l / o:.2f}"
    if l / o < 1:
        ratio = f"**{ratio}**"
    spread = f" ({min(per_round):.2f}-{max(per_round):.2f})" if len(per_round) > 1 else ""
    return f"{text} | {work / l:.1f} ({l:.2f}) | {ratio}{spread}"


def main():
    global COLS
    args = sys.argv[1:]
    if len(args) == 3 and args[1] == "--cols":
        COLS = int(args[2])
        args = args[:1]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    cells, paths, order = parse(args[0])
    if not order:
        print(f"{args[0]}: no kernel_bench lines after a '### round' header", file=sys.stderr)
        return 1
    rounds = len({r for c in cells.values() for v in c.values() for r, _ in v})
    ns = sorted({n for c in cells.values() for side, n in c if side == "ours"})
    print(f"Median over {rounds} round(s) of each side's mean ms per call; ratio = llama.cpp / Strata "
          "(lowest-highest of single rounds).\n")
    head = ""
    for n in ns:
        unit = "GB/s" if n == 1 else "GFLOP/s"
        head += f"n={n} Strata {unit} (ms) | llama.cpp {unit} (ms) | ratio | "
    print(f"| threads | type | {head}paths ({'; '.join(f'n={n}' for n in ns)}) |")
    print("|---|---|" + "---|---|---|" * len(ns) + "---|")
    for key in order:
        threads, t = key
        c = cells[key]
        cols = [cell(t, n, c.get(("ours", n), []), c.get(("theirs", n), [])) for n in ns]
        print(f"| {threads} | {t.upper()} | {' | '.join(cols)} | {'; '.join(paths[key].get(n, '') for n in ns)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
