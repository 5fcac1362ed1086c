#!/usr/bin/env python3
"""tests/reference/reference_forward.py — strata-engine's logits on random-weight models of every
supported architecture against the independent NumPy forward pass of reference_model.py.

Cases: llama (MHA and GQA), the IQ4_XS / IQ4_NL / TQ2_0 / MXFP4 weight types, llama with a sliding window (Mistral), qwen2, qwen3 (head size apart
from dim / heads), gemma3 (local + global layers, window shorter than the prompt), phi3 (fused
tensors, long-context RoPE factors, context past the original so the long factors apply), the
mixture-of-experts ones (qwen3moe with 8 and with 128 experts, Mixtral-style llama, qwen2moe with
its shared expert), deepseek2's latent attention (V3's shape with sigmoid gating, selection bias and
expert groups; V2-Lite's with YaRN, with and without DeepSeek's log multiplier), each
with an f32 KV cache (tolerance 1e-4 relative: max |a-b| / max |b|) and gemma3 / llama also with
the default f16 cache against the reference with K and V rounded to f16 (tolerance 1e-3); deepseek2
also with the f16 cache.

Usage: reference_forward.py STRATA_ENGINE VOCAB_GGUF WORKDIR
Exit 0 when every case agrees, 1 when not (or when numpy / gguf, which setup installs, are missing)."""
import os
import subprocess
import sys

try:
    import numpy as np
    import reference_model as ref
except ImportError as e:  # pragma: no cover
    print(f"FAIL: {e} (tools/setup.sh installs numpy and gguf)")
    sys.exit(1)

PROMPT = ("Once upon a time there was a little girl who lived in a village near the forest. "
          "Whenever she went out, the little girl wore a red riding cloak")

# name, make-model arguments, run arguments
CASES = [
    ("llama-mha", ["--arch", "llama", "--heads", "4", "--kv-heads", "4"], []),
    ("llama-gqa", ["--arch", "llama", "--heads", "4", "--kv-heads", "2"], []),
    ("mistral-window", ["--arch", "llama", "--heads", "4", "--kv-heads", "2", "--sliding-window", "7"], []),
    ("qwen2", ["--arch", "qwen2", "--heads", "4", "--kv-heads", "2"], []),
    ("qwen3", ["--arch", "qwen3", "--heads", "4", "--kv-heads", "2", "--head-dim", "32"], []),
    ("gemma3", ["--arch", "gemma3", "--heads", "4", "--kv-heads", "1", "--head-dim", "32", "--layers", "4",
                "--sliding-window", "6", "--swa-pattern", "2"], []),
    # mistral3 (llama's block, its own keys) with YaRN; smollm3 with 8 layers: layers 3 and 7 have no RoPE.
    ("mistral3-yarn", ["--arch", "mistral3", "--heads", "4", "--kv-heads", "2", "--yarn-factor", "4"], []),
    ("smollm3", ["--arch", "smollm3", "--heads", "4", "--kv-heads", "2", "--layers", "8"], []),
    # gemma2: local/global layers (window 6 < prompt), soft-caps small enough to bend the scores and
    # logits of these random weights (the file's defaults, 50 / 30, would barely touch them).
    ("gemma2", ["--arch", "gemma2", "--heads", "4", "--kv-heads", "2", "--head-dim", "32", "--layers", "4",
                "--sliding-window", "6", "--attn-softcap", "0.5", "--final-softcap", "3"], []),
    # glm4: Q/K/V biases, RoPE (interleaved) on 16 of 32 dimensions, gate and up fused in ffn_up,
    # post-norms after attention and the FFN.
    ("glm4", ["--arch", "glm4", "--heads", "4", "--kv-heads", "2", "--head-dim", "32", "--rope-dims", "16"], []),
    # olmo2: no input norms, whole-row Q/K norms, post-norms; olmo3 (same arch): a window on layers 0-2
    # (llama.cpp's default period 4, not written) with a plain RoPE, YaRN on the global layer 3.
    ("olmo2", ["--arch", "olmo2", "--heads", "4", "--kv-heads", "2"], []),
    ("olmo3-window-yarn", ["--arch", "olmo2", "--heads", "4", "--kv-heads", "2", "--layers", "4",
                           "--sliding-window", "6", "--yarn-factor", "4"], []),
    # gpt-oss: Q/K/V and output biases, a sink logit per head, layers 0 and 2 local (window 6 < the
    # prompt), YaRN everywhere, biased router with a softmax over its top-k logits, biased experts
    # with the clamped SwiGLU; gpt-oss-clamp's larger weights (std 1) drive the experts' gate and up
    # projections past the clamp's limit of 7.
    ("gpt-oss", ["--arch", "gpt-oss", "--heads", "4", "--kv-heads", "2", "--head-dim", "32", "--layers", "4",
                 "--sliding-window", "6", "--yarn-factor", "4", "--experts", "8", "--experts-used", "2",
                 "--expert-ff", "32"], []),
    ("gpt-oss-clamp", ["--arch", "gpt-oss", "--heads", "4", "--kv-heads", "2", "--head-dim", "32", "--layers", "2",
                       "--experts", "4", "--experts-used", "2", "--expert-ff", "32", "--std", "1"], []),
    # starcoder2: LayerNorms with biases (blocks and head), Q/K/V and output biases, a non-gated GELU
    # FFN with up and down biases.
    ("starcoder2", ["--arch", "starcoder2", "--heads", "4", "--kv-heads", "2"], []),
    # cohere2: one LayerNorm (no bias) for attention and the FFN in parallel, local layers 0-2 (window 6
    # < the prompt) with RoPE and global layer 3 without, logits times logit_scale, the tied head.
    ("cohere2", ["--arch", "cohere2", "--heads", "4", "--kv-heads", "2", "--layers", "4", "--sliding-window", "6"], []),
    # granite's scales (embedding 12, residual 0.22, logits / 8, query 1/64); granitemoe's routed experts.
    ("granite", ["--arch", "granite", "--heads", "4", "--kv-heads", "2"], []),
    ("granitemoe", ["--arch", "granitemoe", "--heads", "4", "--kv-heads", "2", "--experts", "4", "--experts-used", "2",
                    "--expert-ff", "32"], []),
    # YaRN: factor 4 over an original context of 32 (a 65-token prompt runs past it), NeoX and interleaved.
    ("qwen2-yarn", ["--arch", "qwen2", "--heads", "4", "--kv-heads", "2", "--yarn-factor", "4", "--yarn-orig-ctx", "32"],
     []),
    ("llama-yarn", ["--arch", "llama", "--heads", "4", "--kv-heads", "2", "--yarn-factor", "8"], []),
    ("phi3-long", ["--arch", "phi3", "--heads", "4", "--kv-heads", "4"], []),
    ("phi3-short", ["--arch", "phi3", "--heads", "4", "--kv-heads", "4"], ["--ctx", "16"]),  # same file as phi3-long
    # Mixture of experts: top-k routing (renormalised for qwen3moe and Mixtral, not for qwen2moe),
    # merged 3-D expert tensors, qwen2moe's sigmoid-gated shared expert; the 128-expert top-8 case
    # is Qwen3-30B-A3B's routing shape scaled down.
    ("qwen3moe", ["--arch", "qwen3moe", "--heads", "4", "--kv-heads", "2", "--head-dim", "32", "--experts", "8",
                  "--experts-used", "2", "--expert-ff", "64"], []),
    ("qwen3moe-128", ["--arch", "qwen3moe", "--heads", "4", "--kv-heads", "2", "--head-dim", "32", "--experts",
                      "128", "--experts-used", "8", "--expert-ff", "32"], []),
    ("mixtral", ["--arch", "llama", "--heads", "4", "--kv-heads", "2", "--experts", "4", "--experts-used", "2"], []),
    ("qwen2moe", ["--arch", "qwen2moe", "--heads", "4", "--kv-heads", "2", "--experts", "8", "--experts-used", "4",
                  "--expert-ff", "32", "--shared-expert-ff", "128"], []),
    # Weight types decoded block by block (gguf-py's dequantize is the reference's): the 256-element
    # deepseek2 (MLA): DeepSeek V3's shape (q_a/q_b, sigmoid gating with the selection bias, expert
    # groups, renormalised weights times 2.5, a dense first layer, a shared expert), and V2-Lite's
    # (one attn_q, softmax gating, no bias, no renormalisation) with YaRN 4 past its original
    # context of 32, with and without DeepSeek's log multiplier (which moves YaRN's magnitude from
    # cos/sin into the query scale).
    ("deepseek2", ["--arch", "deepseek2", "--heads", "4", "--q-lora-rank", "32", "--kv-lora-rank", "64",
                   "--rope-dims", "16", "--head-dim", "48", "--v-head-dim", "32", "--experts", "8",
                   "--experts-used", "2", "--expert-groups", "4", "--expert-groups-used", "2", "--expert-ff", "48",
                   "--layers", "3", "--dense-layers", "1", "--expert-weights-scale", "2.5"], []),
    ("deepseek2-lite-yarn", ["--arch", "deepseek2", "--heads", "4", "--q-lora-rank", "0", "--kv-lora-rank", "32",
                             "--rope-dims", "16", "--head-dim", "48", "--experts", "8", "--experts-used", "2",
                             "--gating", "softmax", "--selection-bias", "false", "--expert-weights-norm", "false",
                             "--expert-ff", "48", "--layers", "2", "--dense-layers", "1", "--yarn-factor", "4",
                             "--yarn-orig-ctx", "32", "--yarn-log-mul", "0.0707"], []),
    ("deepseek2-lite-yarn0", ["--arch", "deepseek2", "--heads", "4", "--q-lora-rank", "0", "--kv-lora-rank", "32",
                              "--rope-dims", "16", "--head-dim", "48", "--experts", "8", "--experts-used", "2",
                              "--gating", "softmax", "--selection-bias", "false", "--expert-weights-norm", "false",
                              "--expert-ff", "48", "--layers", "2", "--dense-layers", "1", "--yarn-factor", "4",
                              "--yarn-orig-ctx", "32"], []),
    # types need rows that are multiples of 256 (make-model falls back to q8_0 elsewhere).
    ("llama-iq4_xs", ["--arch", "llama", "--heads", "4", "--kv-heads", "2", "--dim", "256", "--ffn", "256",
                      "--type", "iq4_xs"], []),
    ("llama-tq2_0", ["--arch", "llama", "--heads", "4", "--kv-heads", "2", "--dim", "256", "--ffn", "256",
                     "--type", "tq2_0"], []),
    ("qwen3-iq4_nl", ["--arch", "qwen3", "--heads", "4", "--kv-heads", "2", "--head-dim", "32", "--type", "iq4_nl"], []),
    ("qwen3-mxfp4", ["--arch", "qwen3", "--heads", "4", "--kv-heads", "2", "--head-dim", "32", "--type", "mxfp4"], []),
]
F16_CASES = {"llama-gqa", "gemma3", "deepseek2"}


def run_case(engine, vocab, work, name, make_args, run_args, kv_type):
    path = os.path.join(work, f"ref-{name.replace('-short', '-long')}.gguf")
    if not os.path.exists(path):
        opts = {"--dim": "64", "--layers": "2", "--ffn": "96", "--ctx": "128", "--type": "f32", "--std": "0.1"}
        opts.update(dict(zip(make_args[0::2], make_args[1::2])))  # a case's own values win
        args = [x for kv in opts.items() for x in kv]
        subprocess.run([engine, "make-model"] + args + ["--vocab-from", vocab, "-o", path], check=True)
    ctx = int(run_args[run_args.index("--ctx") + 1]) if "--ctx" in run_args else 128
    prompt = PROMPT if ctx >= 128 else "Once upon a time"
    ids = subprocess.run([engine, "tokenize", "-m", path, "-p", prompt], check=True, capture_output=True,
                         text=True).stdout.split()
    tokens = [int(i) for i in ids]
    dump = path + f".{kv_type}.logits"
    subprocess.run([engine, "run", "-m", path, "-n", "0", "--dump-logits", dump, "-t", "1", "--kv-type", kv_type,
                    "--ctx", str(ctx), "-p", prompt], check=True, capture_output=True)
    ours = np.fromfile(dump, dtype=np.float32)
    m = ref.Model(path)
    ref.swiglu_oai.clamped = 0
    want = ref.forward(m, tokens, kv_f16=kv_type == "f16", n_ctx=ctx)[-1]
    err = float(np.max(np.abs(ours - want)) / np.max(np.abs(want)))
    tol = 1e-4 if kv_type == "f32" else 1e-3
    ok = err < tol and ours.shape == want.shape
    gap = f", smallest top-k router logit gap {m.min_route_gap:.1e}" if m.min_route_gap < float("inf") else ""
    if ref.swiglu_oai.clamped:
        gap += f", {ref.swiglu_oai.clamped} expert activations clamped"
    print(f"{name:15s} kv {kv_type}: {len(tokens)} tokens, max rel error {err:.2e} (tolerance {tol:.0e}){gap} "
          f"{'ok' if ok else 'FAIL'}")
    return ok


def main():
    engine, vocab, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failures = 0
    for name, make_args, run_args in CASES:
        failures += not run_case(engine, vocab, work, name, make_args, run_args, "f32")
        if name in F16_CASES:
            failures += not run_case(engine, vocab, work, name, make_args, run_args, "f16")
    # A llama file's window key is ignored, as llama.cpp does: llama-gqa and mistral-window share their
    # weights (same seed), and a 65-token prompt reaches past the 7-position window.
    a = np.fromfile(os.path.join(work, "ref-llama-gqa.gguf.f32.logits"), dtype=np.float32)
    b = np.fromfile(os.path.join(work, "ref-mistral-window.gguf.f32.logits"), dtype=np.float32)
    moved = float(np.max(np.abs(a - b)))
    print(f"llama's window key changes the logits by {moved:.1e} {'ok (ignored)' if moved == 0 else 'FAIL (applied?)'}")
    failures += moved != 0
    # YaRN must matter: qwen2-yarn has qwen2's weights (same seed) and a 65-token prompt past its
    # original context of 32.
    a = np.fromfile(os.path.join(work, "ref-qwen2.gguf.f32.logits"), dtype=np.float32)
    b = np.fromfile(os.path.join(work, "ref-qwen2-yarn.gguf.f32.logits"), dtype=np.float32)
    moved = float(np.max(np.abs(a - b)))
    print(f"yarn changes the logits by up to {moved:.3f} {'ok' if moved > 1e-2 else 'FAIL (yarn ignored?)'}")
    failures += moved <= 1e-2
    # DeepSeek's yarn_log_multiplier must matter too: the two lite files share their weights (same
    # seed) and differ only in that key, which moves YaRN's magnitude into the query scale.
    a = np.fromfile(os.path.join(work, "ref-deepseek2-lite-yarn.gguf.f32.logits"), dtype=np.float32)
    b = np.fromfile(os.path.join(work, "ref-deepseek2-lite-yarn0.gguf.f32.logits"), dtype=np.float32)
    moved = float(np.max(np.abs(a - b)))
    print(f"deepseek2's yarn_log_multiplier changes the logits by up to {moved:.3f} "
          f"{'ok' if moved > 1e-2 else 'FAIL (ignored?)'}")
    failures += moved <= 1e-2
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
