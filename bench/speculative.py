#!/usr/bin/env python3
"""bench/speculative.py — issue 50, item 1: decode speed with speculative decoding against plain
decoding, on edit tasks where the answer copies much of the prompt (a paragraph rewritten with one
change, a function given a docstring, a function with a variable renamed), greedy. Each
configuration runs `strata-engine run --stats` REPS times, alternating with the plain run (pair by
pair, so that a slow moment of the machine hits both), and the median decode tokens/s of each is
kept. The text of every speculative run must equal the plain run's byte for byte, or the script
fails.

Configurations: plain; prompt lookup (`--speculative lookup`); and, with --draft, a draft model
(`--draft FILE`); each adaptive (as many guesses as pay off at the measured pass times, the
default) and fixed (`--draft-fixed`: always --draft-max guesses).

A benchmark, not a test: the figures depend on the machine and on what else runs.

Usage: speculative.py STRATA_ENGINE MODEL.gguf [--draft DRAFT.gguf] [--threads 2] [--reps 5]
                      [--max-tokens 160] [--draft-max 8] [--template chatml|gemma] [--json OUT.json]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys

TEMPLATES = {
    "chatml": "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
    "gemma": "<start_of_turn>user\n{}<end_of_turn>\n<start_of_turn>model\n",
}
CHATML = TEMPLATES["chatml"]

FUNCTION = """```python
def average(values):
    total = 0
    count = 0
    for value in values:
        total += value
        count += 1
    if count == 0:
        return 0
    return total / count
```"""

TASKS = [
    ("rewrite a paragraph, one change",
     'Rewrite this paragraph, changing only "cat" to "dog": The cat sat on the warm windowsill every morning, '
     "watching the birds in the garden below. When the sun rose higher, the cat would stretch, yawn, and walk "
     "slowly to the kitchen, where breakfast was always waiting in a small blue bowl."),
    ("code edit: add a docstring", "Here is a Python function:\n\n" + FUNCTION + "\n\nAdd a docstring to it and show the full function."),
    ("code edit: rename a variable", "Here is a Python function:\n\n" + FUNCTION +
     '\n\nRename the variable "total" to "running_sum" and show the full function.'),
]

STATS = re.compile(r"generated (\d+) tokens in ([\d.]+) ms")
SPEC = re.compile(r"(\d+) passes for (\d+) tokens; (\d+) drafted, (\d+) accepted")


def run(engine, model, prompt, threads, max_tokens, extra):
    cmd = [engine, "run", "-m", model, "-p", prompt, "-n", str(max_tokens), "--temp", "0", "--no-echo", "--stats",
           "-t", str(threads)] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ... failed: {p.stderr}")
    m = STATS.search(p.stderr)
    if not m:
        sys.exit(f"no statistics in: {p.stderr}")
    tokens, ms = int(m.group(1)), float(m.group(2))
    s = SPEC.search(p.stderr)
    spec = {"passes": int(s.group(1)), "drafted": int(s.group(3)), "accepted": int(s.group(4))} if s else None
    return p.stdout, tokens, tokens * 1000.0 / ms, spec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("engine")
    ap.add_argument("model")
    ap.add_argument("--draft", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--draft-max", type=int, default=8)
    ap.add_argument("--json", default="")
    ap.add_argument("--template", default="chatml", choices=sorted(TEMPLATES))
    a = ap.parse_args()

    configs = [("prompt lookup", ["--speculative", "lookup", "--draft-max", str(a.draft_max)]),
               ("prompt lookup, fixed", ["--speculative", "lookup", "--draft-max", str(a.draft_max), "--draft-fixed"])]
    if a.draft:
        configs.append(("draft model", ["--draft", a.draft, "--draft-max", str(a.draft_max)]))
        configs.append(("draft model, fixed", ["--draft", a.draft, "--draft-max", str(a.draft_max), "--draft-fixed"]))
    rows = []
    print(f"model {a.model}, {a.threads} threads, greedy, at most {a.max_tokens} tokens, median of {a.reps}")
    print("| task | mode | tokens | plain tok/s | speculative tok/s | speed-up | target passes | drafted | accepted |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, text in TASKS:
        prompt = TEMPLATES[a.template].format(text)
        for label, extra in configs:
            plain_rates, spec_rates = [], []
            reference = None
            spec = None
            tokens = 0
            for _ in range(a.reps):
                out, tokens, rate, _ = run(a.engine, a.model, prompt, a.threads, a.max_tokens, [])
                plain_rates.append(rate)
                if reference is None:
                    reference = out
                elif out != reference:
                    sys.exit(f"{name}: plain runs disagree")
                out, n, rate, spec = run(a.engine, a.model, prompt, a.threads, a.max_tokens, extra)
                if out != reference or n != tokens:
                    sys.exit(f"{name}, {label}: the text differs from the plain run's")
                spec_rates.append(rate)
            p, s = statistics.median(plain_rates), statistics.median(spec_rates)
            row = {"task": name, "mode": label, "tokens": tokens, "plain_tok_s": round(p, 1), "spec_tok_s": round(s, 1),
                   "speedup": round(s / p, 2), **(spec or {})}
            rows.append(row)
            print(f"| {name} | {label} | {tokens} | {p:.1f} | {s:.1f} | {s / p:.2f}x | {row.get('passes', '')} | "
                  f"{row.get('drafted', '')} | {row.get('accepted', '')} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
