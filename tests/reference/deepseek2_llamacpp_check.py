#!/usr/bin/env python3
"""tests/reference/deepseek2_llamacpp_check.py — validates reference_model.py's deepseek2 (MLA)
forward pass against llama.cpp itself (through llama-cpp-python), on small random-weight files
this script writes with gguf-py's GGUFWriter:

  full:       q_lora 32 (attn_q_a / attn_q_a_norm / attn_q_b), 1 dense lead layer + 2 MoE layers of
              8 experts top 2 in 4 groups (2 used), sigmoid gating with exp_probs_b, weights
              renormalised over the k and times 2.5, 1 shared expert; no RoPE scaling.
  lite-yarn:  q_lora 0 (plain attn_q), softmax gating (key absent), no groups, no renormalisation,
              YaRN factor 4 over an original context of 32 with yarn_log_multiplier 0.0707
              (mscale_all_dim 0.707: cos/sin unscaled, kq_scale times (1 + 0.0707 ln 4)^2).
  lite-yarn0: as lite-yarn without yarn_log_multiplier (cos/sin and kq_scale both carry 1 + 0.1 ln 4).
  full-kv_b:  full's configuration in the older layout: one attn_kv_b per layer, no *_mla keys,
              head_count_kv = head_count (llama.cpp's non-MLA path).

llama.cpp runs with an F32 K cache and flash attention off (its flash-attention path rounds K/V to
F16 even for an F32 cache), every position's logits kept; the reference runs in float64. Reported:
max relative error (max |a - b| / max |b|) at the last position and over all positions, the largest
per-position KL(ref || llama.cpp), and the smallest routing gap the reference saw.

Usage: deepseek2_llamacpp_check.py [WORKDIR] [VOCAB_GGUF]   (exit 0 when every file agrees to 1e-4)
"""
import os
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_model as ref  # noqa: E402

N_EMBD, N_LAYER, N_HEAD, N_DENSE = 64, 3, 4, 1
KV_LORA, QK_NOPE, QK_ROPE, V_HEAD = 64, 32, 16, 32
N_EXPERT, N_USED, FF_EXP, FF_DENSE, N_SHARED = 8, 2, 48, 96, 1


def copy_tokenizer(w, vocab_path):
    r = GGUFReader(vocab_path)
    n_vocab = 0
    for key, f in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        t = f.types[0]
        if t == GGUFValueType.ARRAY:
            sub = f.types[-1]
            if sub == GGUFValueType.STRING:
                val = [bytes(f.parts[i]).decode("utf-8", errors="surrogateescape") for i in f.data]
            else:
                val = [f.parts[i].tolist()[0] for i in f.data]
            w.add_key_value(key, val, t, sub_type=sub)
            if key == "tokenizer.ggml.tokens":
                n_vocab = len(val)
        elif t == GGUFValueType.STRING:
            w.add_key_value(key, bytes(f.parts[f.data[0]]).decode(), t)
        else:
            w.add_key_value(key, f.parts[f.data[0]].tolist()[0], t)
    return n_vocab


def write_model(path, vocab_path, seed, q_lora, gating, probs_bias, groups, w_norm, w_scale, yarn, log_mul,
                router_std, kv_b=False):
    rng = np.random.default_rng(seed)
    rnd = lambda *shape: (rng.standard_normal(shape) * 0.1).astype(np.float32)
    nrm = lambda n: (1.0 + 0.05 * rng.standard_normal(n)).astype(np.float32)
    w = GGUFWriter(path, "deepseek2")
    a = "deepseek2."
    n_vocab = copy_tokenizer(w, vocab_path)
    w.add_uint32(a + "context_length", 128)
    w.add_uint32(a + "embedding_length", N_EMBD)
    w.add_uint32(a + "block_count", N_LAYER)
    w.add_uint32(a + "feed_forward_length", FF_DENSE)
    w.add_uint32(a + "attention.head_count", N_HEAD)
    # MLA files: one KV head (the latent row); older files with one attn_kv_b: head_count_kv = head_count
    # and key_length / value_length the per-head sizes, no _mla keys.
    w.add_uint32(a + "attention.head_count_kv", N_HEAD if kv_b else 1)
    w.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-6)
    w.add_float32(a + "rope.freq_base", 10000.0)
    w.add_uint32(a + "rope.dimension_count", QK_ROPE)
    if kv_b:
        w.add_uint32(a + "attention.key_length", QK_NOPE + QK_ROPE)
        w.add_uint32(a + "attention.value_length", V_HEAD)
    else:
        w.add_uint32(a + "attention.key_length", KV_LORA + QK_ROPE)
        w.add_uint32(a + "attention.value_length", KV_LORA)
        w.add_uint32(a + "attention.key_length_mla", QK_NOPE + QK_ROPE)
        w.add_uint32(a + "attention.value_length_mla", V_HEAD)
    # llama.cpp requires q_lora_rank (0 allowed) unless the block count is 26, 27 (or 48 with a
    # 128256-token vocab): its "lite" guess by layer count.
    w.add_uint32(a + "attention.q_lora_rank", q_lora)
    w.add_uint32(a + "attention.kv_lora_rank", KV_LORA)
    w.add_uint32(a + "leading_dense_block_count", N_DENSE)
    w.add_uint32(a + "expert_count", N_EXPERT)
    w.add_uint32(a + "expert_used_count", N_USED)
    w.add_uint32(a + "expert_feed_forward_length", FF_EXP)
    w.add_uint32(a + "expert_shared_count", N_SHARED)
    if w_scale is not None:
        w.add_float32(a + "expert_weights_scale", w_scale)
    w.add_bool(a + "expert_weights_norm", w_norm)
    if gating is not None:
        w.add_uint32(a + "expert_gating_func", gating)
    if groups:
        w.add_uint32(a + "expert_group_count", groups[0])
        w.add_uint32(a + "expert_group_used_count", groups[1])
    if yarn:
        w.add_string(a + "rope.scaling.type", "yarn")
        w.add_float32(a + "rope.scaling.factor", 4.0)
        w.add_uint32(a + "rope.scaling.original_context_length", 32)
        if log_mul is not None:
            w.add_float32(a + "rope.scaling.yarn_log_multiplier", log_mul)

    w.add_tensor("token_embd.weight", rnd(n_vocab, N_EMBD))
    w.add_tensor("output_norm.weight", nrm(N_EMBD))
    w.add_tensor("output.weight", rnd(n_vocab, N_EMBD))
    k_mla = QK_NOPE + QK_ROPE
    for l in range(N_LAYER):
        b = f"blk.{l}."
        w.add_tensor(b + "attn_norm.weight", nrm(N_EMBD))
        if q_lora:
            w.add_tensor(b + "attn_q_a.weight", rnd(q_lora, N_EMBD))
            w.add_tensor(b + "attn_q_a_norm.weight", nrm(q_lora))
            w.add_tensor(b + "attn_q_b.weight", rnd(N_HEAD * k_mla, q_lora))
        else:
            w.add_tensor(b + "attn_q.weight", rnd(N_HEAD * k_mla, N_EMBD))
        w.add_tensor(b + "attn_kv_a_mqa.weight", rnd(KV_LORA + QK_ROPE, N_EMBD))
        w.add_tensor(b + "attn_kv_a_norm.weight", nrm(KV_LORA))
        if kv_b:  # per head qk_nope key rows then v_head value rows: ggml {kv_lora, heads * (qk_nope + v_head)}
            w.add_tensor(b + "attn_kv_b.weight", rnd(N_HEAD * (QK_NOPE + V_HEAD), KV_LORA))
        else:
            w.add_tensor(b + "attn_k_b.weight", rnd(N_HEAD, KV_LORA, QK_NOPE))  # ggml {qk_nope, kv_lora, heads}
            w.add_tensor(b + "attn_v_b.weight", rnd(N_HEAD, V_HEAD, KV_LORA))  # ggml {kv_lora, v_head, heads}
        w.add_tensor(b + "attn_output.weight", rnd(N_EMBD, N_HEAD * V_HEAD))
        w.add_tensor(b + "ffn_norm.weight", nrm(N_EMBD))
        if l < N_DENSE:
            w.add_tensor(b + "ffn_gate.weight", rnd(FF_DENSE, N_EMBD))
            w.add_tensor(b + "ffn_up.weight", rnd(FF_DENSE, N_EMBD))
            w.add_tensor(b + "ffn_down.weight", rnd(N_EMBD, FF_DENSE))
        else:
            # router std: picked so the top-k choices are clear of ties (the smallest gap is printed)
            w.add_tensor(b + "ffn_gate_inp.weight", (router_std * rng.standard_normal((N_EXPERT, N_EMBD))).astype(np.float32))
            if probs_bias:
                w.add_tensor(b + "exp_probs_b.bias", rnd(N_EXPERT))
            w.add_tensor(b + "ffn_gate_exps.weight", rnd(N_EXPERT, FF_EXP, N_EMBD))
            w.add_tensor(b + "ffn_up_exps.weight", rnd(N_EXPERT, FF_EXP, N_EMBD))
            w.add_tensor(b + "ffn_down_exps.weight", rnd(N_EXPERT, N_EMBD, FF_EXP))
            ff_sh = FF_EXP * N_SHARED
            w.add_tensor(b + "ffn_gate_shexp.weight", rnd(ff_sh, N_EMBD))
            w.add_tensor(b + "ffn_up_shexp.weight", rnd(ff_sh, N_EMBD))
            w.add_tensor(b + "ffn_down_shexp.weight", rnd(N_EMBD, ff_sh))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


FILES = [
    ("full", dict(seed=1, q_lora=32, gating=2, probs_bias=True, groups=(4, 2), w_norm=True, w_scale=2.5,
                  yarn=False, log_mul=None, router_std=1.0)),
    ("lite-yarn", dict(seed=2, q_lora=0, gating=None, probs_bias=False, groups=None, w_norm=False, w_scale=None,
                       yarn=True, log_mul=0.0707, router_std=0.2)),
    ("lite-yarn0", dict(seed=2, q_lora=0, gating=None, probs_bias=False, groups=None, w_norm=False, w_scale=None,
                        yarn=True, log_mul=None, router_std=0.2)),
    # the same configuration as full in the older layout (llama.cpp's non-absorbed MHA path)
    ("full-kv_b", dict(seed=1, q_lora=32, gating=2, probs_bias=True, groups=(4, 2), w_norm=True, w_scale=2.5,
                       yarn=False, log_mul=None, router_std=1.0, kv_b=True)),
]


def llamacpp_logits(path, tokens):
    import llama_cpp
    llm = llama_cpp.Llama(model_path=path, n_ctx=128, n_batch=128, logits_all=True, type_k=0, type_v=0,
                          flash_attn=False, n_threads=1, verbose=False)
    llm.eval(tokens)
    out = np.array(llm.scores[:len(tokens)], dtype=np.float64)
    llm.close()
    return out


def kl(p_logits, q_logits):
    lp, lq = ref.log_softmax(p_logits), ref.log_softmax(q_logits)
    return float(np.max(np.sum(np.exp(lp) * (lp - lq), axis=-1)))


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else "/tmp/deepseek2-check"
    vocab = sys.argv[2] if len(sys.argv) > 2 else "/work/shared/models/stories260K.gguf"
    os.makedirs(work, exist_ok=True)
    tokens = [int(t) for t in np.random.default_rng(7).integers(3, 512, size=40)]
    tokens[0] = 1  # BOS
    fails = 0
    for name, kw in FILES:
        path = os.path.join(work, f"deepseek2-{name}.gguf")
        write_model(path, vocab, **kw)
        got = llamacpp_logits(path, tokens)
        m = ref.Model(path)
        want = ref.forward(m, tokens)
        last = float(np.max(np.abs(got[-1] - want[-1])) / np.max(np.abs(want[-1])))
        allp = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        ok = last < 1e-4 and allp < 1e-4
        fails += not ok
        print(f"{name:11s} {len(tokens)} tokens: max rel error last {last:.2e}, all positions {allp:.2e}, "
              f"max KL {kl(want, got):.2e}, kq_scale {m.mla_kq_scale:.6f}, rope factor {m.mla_rope_factor:.6f}, "
              f"smallest route gap {m.min_route_gap:.1e} {'ok' if ok else 'FAIL'}")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
