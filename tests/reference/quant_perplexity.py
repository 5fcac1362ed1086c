#!/usr/bin/env python3
"""tests/reference/quant_perplexity.py — a quantized file keeps its F16 file's perplexity: for one
random-weight model of every supported architecture (the first case of each in reference_forward.py's
CASES, plus the mixture-of-experts variants), make-model writes the same weights (same seed) as F16
and as Q8_0; strata-engine perplexity scores both over tests/data/perplexity_passage.txt (window 64,
llama-perplexity's method) and the Q8_0 figure must be within 1% of the F16 one. The Q8_0 run also
compares its logits with the F16 run's (--kl-base): the mean KL divergence must stay under 1e-2
(measured: at most 2.3e-3, gpt-oss, except deepseek2's 7.8e-3, whose attention has four quantized
products a token instead of two and whose expert weights are scaled by 2.5; llama.cpp on the same
Q8_0 file is as far from the float reference as Strata, which is within KL 2.4e-6 of llama.cpp)
(the top token's agreement is printed; these near-uniform random models have many near-ties, so
it is no bound).

The weights' standard deviation is 0.1, as in reference_forward.py. Random weights much larger
than that make a chaotic network in which a 1e-3 rounding of a weight grows layer by layer (at
0.25, gpt-oss's Q8_0 file is 3% off its F16 file and smollm3's 1.1%), which says nothing about
how a trained model takes quantization.

Usage: quant_perplexity.py STRATA_ENGINE VOCAB_GGUF PASSAGE WORKDIR
Exit 0 when every architecture stays within bounds, 1 otherwise."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_forward import CASES  # noqa: E402  (one list of every architecture's test model)

CTX = 64
PPL_TOLERANCE = 0.01   # |ppl(Q8_0) / ppl(F16) - 1|
KL_AT_MOST = 1e-2      # mean KL divergence of Q8_0's next-token distributions from F16's


def pick_cases():
    """One case per architecture (its first in CASES), plus the MoE variants of dense archs."""
    seen, picked = set(), []
    for name, make_args, _ in CASES:
        arch = make_args[make_args.index("--arch") + 1]
        key = arch + ("-moe" if "--experts" in make_args else "")
        if key in seen or "--type" in make_args:  # the weight-type cases pick their own type
            continue
        seen.add(key)
        picked.append((name, make_args))
    return picked


def make(engine, vocab, work, name, make_args, wtype):
    path = os.path.join(work, f"qp-{name}-{wtype}.gguf")
    if not os.path.exists(path):
        opts = {"--dim": "64", "--layers": "2", "--ffn": "96", "--ctx": "256", "--std": "0.1", "--seed": "11"}
        opts.update(dict(zip(make_args[0::2], make_args[1::2])))
        opts["--type"] = wtype
        args = [x for kv in opts.items() for x in kv]
        subprocess.run([engine, "make-model"] + args + ["--vocab-from", vocab, "-o", path], check=True,
                       capture_output=True)
    return path


def perplexity(engine, path, passage, extra):
    out = subprocess.run([engine, "perplexity", "-m", path, "-f", passage, "--ctx", str(CTX), "-t", "2",
                          "--kv-type", "f32"] + extra, check=True, capture_output=True, text=True)
    text = out.stdout + out.stderr
    m = re.search(r"PPL = ([0-9.]+)", text)
    if not m:
        raise RuntimeError(f"no perplexity in the output of {path}:\n{text}")
    return float(m.group(1)), text


def main():
    engine, vocab, passage, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    failures = 0
    for name, make_args in pick_cases():
        f16 = make(engine, vocab, work, name, make_args, "f16")
        q8 = make(engine, vocab, work, name, make_args, "q8_0")
        base = f16 + ".logits"
        ppl_f16, _ = perplexity(engine, f16, passage, ["--save-logits", base])
        ppl_q8, text = perplexity(engine, q8, passage, ["--kl-base", base])
        kl = re.search(r"KL divergence vs .*?: mean ([0-9.eE+-]+)", text)
        top1 = re.search(r"top-1 agreement ([0-9.]+)%", text)
        if not kl or not top1:
            print(f"{name}: no KL / top-token figures in the --kl-base output:\n{text}")
            failures += 1
            continue
        rel = ppl_q8 / ppl_f16 - 1
        same_top = float(top1.group(1)) / 100
        ok = abs(rel) <= PPL_TOLERANCE and float(kl.group(1)) <= KL_AT_MOST
        print(f"{name:15s} F16 {ppl_f16:10.3f}  Q8_0 {ppl_q8:10.3f}  ({rel * 100:+.3f}%, mean KL {float(kl.group(1)):.2e}, "
              f"same top token {same_top * 100:.1f}%) {'ok' if ok else 'FAIL'}")
        failures += not ok
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
