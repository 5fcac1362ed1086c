"""tests/reference/reference_model.py — an independent NumPy forward pass of the decoder
architectures Strata runs (llama / Mistral / Mixtral, qwen2, qwen3, gemma3, phi3, qwen2moe,
qwen3moe, and the later rows: gemma2, glm4, olmo2, gpt-oss, starcoder2, deepseek2 (MLA), ...), written from the
architectures' published definitions, not from Strata's code. Tensors are read and dequantized
with the `gguf` package (gguf-py), so quantized real models can be checked too.

Arithmetic is float64 throughout; the KV cache can be rounded to float16 to mirror an F16 cache.
"""
import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


def _field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    v = f.parts[f.data[0]]
    if f.types and f.types[0].name == "STRING":
        return bytes(v).decode()
    return v.tolist()[0] if hasattr(v, "tolist") else v


class Model:
    def __init__(self, path):
        self.reader = GGUFReader(path)
        self.tensors = {t.name: t for t in self.reader.tensors}
        r = self.reader
        self.arch = _field(r, "general.architecture")
        p = self.arch + "."
        self.n_layers = _field(r, p + "block_count")
        self.n_embd = _field(r, p + "embedding_length")
        self.n_heads = _field(r, p + "attention.head_count")
        self.n_kv = _field(r, p + "attention.head_count_kv", self.n_heads)
        self.head_dim = _field(r, p + "attention.key_length", self.n_embd // self.n_heads)
        # starcoder2: LayerNorms (weight and bias) instead of RMS norms, and a non-gated GELU FFN with biases.
        self.layer_norm = self.arch in ("starcoder2", "cohere2")
        # cohere2 (Command R7B): attention and the FFN in parallel from one norm, no RoPE on the global
        # layers, logits times logit_scale, the embedding as the head.
        self.parallel = self.arch == "cohere2"
        self.eps = _field(r, p + ("attention.layer_norm_epsilon" if self.layer_norm else "attention.layer_norm_rms_epsilon"),
                          1e-5)
        self.rope_base = _field(r, p + "rope.freq_base", 10000.0)
        self.rope_dims = _field(r, p + "rope.dimension_count", self.head_dim)
        self.ctx_train = _field(r, p + "context_length", 2048)
        scaling = _field(r, p + "rope.scaling.type", "none")
        self.rope_scale = 1.0 / _field(r, p + "rope.scaling.factor", 1.0) if scaling in ("linear", "yarn") else 1.0
        self.ctx_orig = _field(r, p + "rope.scaling.original_context_length", 0)
        self.attn_factor = _field(r, p + "rope.scaling.attn_factor", 1.0)
        # YaRN (arXiv 2309.00071, as llama.cpp applies it): per pair i a mix of the interpolated
        # frequency (scale) and the original, ramping from original (i below the pair that turns
        # beta_fast rotations over ctx_orig) to interpolated (above the one that turns beta_slow);
        # cos and sin times 1 + 0.1 ln(1 / scale).
        self.yarn = scaling == "yarn"
        # deepseek2 (DeepSeek V2/V3, Kimi K2): multi-head latent attention, see mla_attention.
        self.mla = self.arch == "deepseek2"
        if self.yarn:
            ctx0 = self.ctx_orig or self.ctx_train
            # llama.cpp's deepseek2 reads none of these three keys: YaRN there always runs with
            # ext_factor 1, beta_fast 32, beta_slow 1 (DeepSeek's and Kimi's own values).
            ext = 1.0 if self.mla else _field(r, p + "rope.scaling.yarn_ext_factor", 1.0)
            fast = 32.0 if self.mla else _field(r, p + "rope.scaling.yarn_beta_fast", 32.0)
            slow = 1.0 if self.mla else _field(r, p + "rope.scaling.yarn_beta_slow", 1.0)
            corr = lambda n_rot: self.rope_dims * np.log(ctx0 / (n_rot * 2 * np.pi)) / (2 * np.log(self.rope_base))
            lo, hi = max(0.0, np.floor(corr(fast))), min(self.rope_dims - 1.0, np.ceil(corr(slow)))
            i = np.arange(self.rope_dims // 2, dtype=np.float64)
            ramp = 1.0 - np.clip((i - lo) / max(0.001, hi - lo), 0.0, 1.0)
            mix = ramp * ext
            # theta = pos * inv_freq * (scale (1 - mix) + mix): as divisors of the unscaled frequency.
            self.yarn_divisors = 1.0 / (self.rope_scale * (1.0 - mix) + mix)
            self.yarn_mscale = 1.0 + 0.1 * np.log(1.0 / self.rope_scale) if ext != 0 else 1.0
        if self.mla:
            self._init_deepseek2(r, p)
        self.neox = self.arch in ("qwen2", "qwen3", "gemma3", "gemma2", "phi3", "qwen2moe", "qwen3moe", "olmo2",
                                  "gpt-oss", "starcoder2")
        # gemma2: tanh soft-caps on the attention scores and the logits.
        self.attn_softcap = _field(r, p + "attn_logit_softcapping", 50.0) if self.arch == "gemma2" else 0.0
        self.final_softcap = _field(r, p + "final_logit_softcapping", 30.0) if self.arch == "gemma2" else 0.0
        # Mixture of experts: softmax over all experts, top-k, weights renormalised over the k
        # for Mixtral (llama) and qwen3moe, not for qwen2moe (as the published models define it).
        self.n_expert = _field(r, p + "expert_count", 0)
        self.n_expert_used = _field(r, p + "expert_used_count", 0)
        self.norm_topk = self.arch in ("llama", "qwen3moe", "mistral3", "granitemoe")
        # The smallest router-logit gap between a token's k-th and (k+1)-th expert seen: how far the
        # top-k choice is from a tie (float32 logits carry errors of ~1e-6 of their size).
        self.min_route_gap = float("inf")
        self.gelu = self.arch in ("gemma3", "gemma2")
        # gpt-oss (OpenAI's model code): the router picks the top k of its biased logits and
        # softmaxes those k; experts have biases and a clamped SwiGLU (swiglu_oai).
        self.gpt_oss = self.arch == "gpt-oss"
        # granite: embedding, residual updates and logits scaled by the file's keys.
        self.residual_scale = _field(r, p + "residual_scale", 1.0)
        self.logit_scale = _field(r, p + "logit_scale", 1.0)
        if self.arch == "cohere2":  # multiplies the logits (granite's divides them)
            self.logit_scale = 1.0 / self.logit_scale
        self.embd_scale = np.sqrt(self.n_embd) if self.arch in ("gemma3", "gemma2") else _field(r, p + "embedding_scale", 1.0)
        self.q_scale = _field(r, p + "attention.scale", 0.0) or 1.0 / np.sqrt(self.head_dim)
        # Sliding windows: gemma3 has 5 local layers per global one (or the file's pattern);
        # llama (Mistral) applies a window to every layer; phi3's is ignored, as llama.cpp does.
        window = _field(r, p + "attention.sliding_window", 0)
        # llama (and mistral3, smollm3) files' windows are ignored too: llama.cpp's llama graph has none.
        self.window = 0 if self.arch in ("phi3", "llama", "mistral3", "smollm3") else window
        # Pattern P: 0 = every layer local, else layer i local unless (i + 1) % P == 0.
        self.swa_pattern = _field(r, p + "attention.sliding_window_pattern",
                                  {"gemma3": 6, "gemma2": 2, "olmo2": 4, "gpt-oss": 2, "cohere2": 4}.get(self.arch, 0))
        # The local layers' own RoPE base (gemma3: default 10000; olmo2: default the model's).
        self.rope_base_local = _field(r, p + "rope.freq_base_swa", self.rope_base if self.arch == "olmo2" else 10000.0)
        self.bos = _field(r, "tokenizer.ggml.bos_token_id", None)
        self.add_bos = bool(_field(r, "tokenizer.ggml.add_bos_token", False))
        self._cache = {}

    def _init_deepseek2(self, r, p):
        """deepseek2's keys. Attention: the head_count heads share one latent KV row per token,
        c = rms_norm(kv_lora dims of attn_kv_a_mqa x) plus one roped key part k_pe of qk_rope dims
        (rope.dimension_count); per head the query is qk_nope + qk_rope dims (key_length_mla), the
        value v_head dims (value_length_mla). key_length / value_length (kv_lora + qk_rope, kv_lora)
        describe the latent cache and are not needed here."""
        self.kv_lora = _field(r, p + "attention.kv_lora_rank")
        self.q_lora = _field(r, p + "attention.q_lora_rank", 0) or 0  # 0 / absent: a plain attn_q ("lite")
        self.qk_rope = self.rope_dims
        # Older files (one attn_kv_b) lack the _mla keys; key_length / value_length are then the heads'.
        self.k_mla = _field(r, p + "attention.key_length_mla", self.head_dim)
        self.v_mla = _field(r, p + "attention.value_length_mla", _field(r, p + "attention.value_length", self.head_dim))
        self.qk_nope = self.k_mla - self.qk_rope
        self.n_dense_lead = _field(r, p + "leading_dense_block_count", 0)
        # Routing: softmax (1, also when absent) or sigmoid (2) of the router logits; the selection
        # adds exp_probs_b; optional expert groups; the weights are the unbiased probabilities,
        # optionally renormalised over the k, times expert_weights_scale.
        self.gating = _field(r, p + "expert_gating_func", 1) or 1
        self.expert_weights_norm = bool(_field(r, p + "expert_weights_norm", False))
        self.expert_weights_scale = float(_field(r, p + "expert_weights_scale", 1.0))
        self.n_groups = _field(r, p + "expert_group_count", 0)
        self.n_group_used = _field(r, p + "expert_group_used_count", 0)
        # YaRN magnitudes as llama.cpp derives them. f = rope.scaling.factor (1 / freq_scale),
        # A = rope.scaling.attn_factor (default 1), L = rope.scaling.yarn_log_multiplier / 0.1 (the
        # converter stores 0.1 * mscale_all_dim; absent: 0), g(f) = 1 + 0.1 ln f.
        # llama.cpp first forms the context's attn_factor Y:
        #   YaRN, L != 0:  Y = A / g(f)      (its mscale / mscale_all_dim ratio is 1 for deepseek2)
        #   YaRN, L == 0:  Y = A g(f) / g(f) = A
        #   no YaRN:       Y = A
        # The rope kernel multiplies cos/sin by Y and, under YaRN (ext_factor != 0), by g(f) again:
        #   cos/sin factor:  YaRN, L != 0: A        YaRN, L == 0: A g(f)        no YaRN: A
        # deepseek2's graph then undoes the 1/g(f): attn_factor_org = Y g(f), and scales the scores by
        #   kq_scale = mscale^2 / sqrt(key_length_mla),  mscale = Y g(f) (1 + 0.1 L ln f):
        #   YaRN, L != 0: mscale = A (1 + 0.1 L ln f)   YaRN, L == 0: mscale = A g(f)   (so the roped
        #   part carries g(f)^2 twice over, as llama.cpp computes it)   no YaRN: A g(f) (1 + 0.1 L ln f)
        #   with f the linear factor (1 without scaling).
        A = float(self.attn_factor)
        L = float(_field(r, p + "rope.scaling.yarn_log_multiplier", 0.0)) / 0.1
        f = 1.0 / self.rope_scale
        gf = 1.0 + 0.1 * np.log(f)
        if self.yarn:
            mget = lambda s, ms: 1.0 if s <= 1.0 else 1.0 + 0.1 * ms * np.log(s)
            mscale_num = L if L != 1.0 else 1.0
            y = (mget(f, mscale_num) / mget(f, L) if L != 0 else mget(f, 1.0)) / gf
        else:
            y = 1.0
        y *= A
        self.mla_rope_factor = y * gf if self.yarn else y
        mscale = y * gf * (1.0 + 0.1 * L * np.log(f))
        self.mla_kq_scale = mscale * mscale / np.sqrt(self.k_mla)

    def tensor(self, name):
        """float64 array in row-major [rows][cols] order, or None when absent."""
        if name in self._cache:
            return self._cache[name]
        t = self.tensors.get(name)
        if t is None:
            return None
        dims = [int(d) for d in t.shape]  # ggml order: dims[0] innermost
        a = dequantize(t.data, t.tensor_type).astype(np.float64).reshape(list(reversed(dims)))
        self._cache[name] = a
        return a

    def layer_is_local(self, layer):
        if self.window <= 0:
            return False
        return self.swa_pattern == 0 or (layer + 1) % self.swa_pattern != 0


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def layer_norm(x, w, b, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * w
    return y if b is None else y + b


def norm(m, x, w, b):
    """The model's norm: LayerNorm (starcoder2) or RMS norm."""
    return layer_norm(x, w, b, m.eps) if m.layer_norm else rms_norm(x, w, m.eps)


def rope(x, positions, base, rope_dims, neox, scale=1.0, divisors=None, attn_factor=1.0):
    """x: [T][heads][head_dim]; rotates the first rope_dims dims of every head."""
    half = rope_dims // 2
    i = np.arange(half, dtype=np.float64)
    inv_freq = base ** (-2.0 * i / rope_dims)
    if divisors is not None:
        inv_freq = inv_freq / divisors
    theta = np.outer(np.asarray(positions, dtype=np.float64) * scale, inv_freq)  # [T][half]
    c = (np.cos(theta) * attn_factor)[:, None, :]
    s = (np.sin(theta) * attn_factor)[:, None, :]
    out = x.copy()
    if neox:
        a, b = x[..., :half], x[..., half:rope_dims]
        out[..., :half] = a * c - b * s
        out[..., half:rope_dims] = a * s + b * c
    else:
        a, b = x[..., 0:rope_dims:2], x[..., 1:rope_dims:2]
        out[..., 0:rope_dims:2] = a * c - b * s
        out[..., 1:rope_dims:2] = a * s + b * c
    return out


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def swiglu_oai(gate, up, alpha=1.702, limit=7.0):
    """gpt-oss's clamped SwiGLU: the gate clamped above at limit, the up projection to [-limit, limit]
    and shifted by 1."""
    x = np.minimum(gate, limit)
    y = np.clip(up, -limit, limit)
    swiglu_oai.clamped += int(np.sum(gate > limit) + np.sum(np.abs(up) > limit))
    return x / (1.0 + np.exp(-alpha * x)) * (y + 1.0)


swiglu_oai.clamped = 0  # elements the clamp changed, over every call (how much a case exercises it)


def _deepseek2_group_mask(m, sel):
    """DeepSeek V3's group-limited routing on one token's selection scores [n_expert]: experts in
    n_groups groups of consecutive ids; a group scores the sum of its two best selection values;
    the experts outside the best n_group_used groups drop out (-inf). No groups: sel unchanged."""
    G = m.n_groups
    if G <= 1:
        return sel
    grouped = sel.reshape(G, -1)
    score = -np.sort(-grouped, axis=1)[:, :2].sum(axis=1)
    order = np.argsort(-score, kind="stable")
    u = m.n_group_used
    if u < G:
        m.min_route_gap = min(m.min_route_gap, float(score[order[u - 1]] - score[order[u]]))
    out = np.full_like(grouped, -np.inf)
    out[order[:u]] = grouped[order[:u]]
    return out.reshape(-1)


def moe_ffn(m, g, h):
    """The mixture-of-experts FFN of one layer on h [T][n_embd]: every token runs its top-k experts
    (gated SiLU FFNs), summed with their router probabilities; plus the shared expert if present
    (times sigmoid of its gate where there is one)."""
    logits = h @ g("ffn_gate_inp.weight").T  # [T][E]
    if g("ffn_gate_inp.bias") is not None:
        logits = logits + g("ffn_gate_inp.bias")
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    if m.mla and m.gating == 2:  # deepseek2 (V3, Kimi K2): sigmoid gates
        p = 1.0 / (1.0 + np.exp(-logits))
    # deepseek2: experts are chosen by p + exp_probs_b (V3's balancing bias), weighted by p.
    sel = p + g("exp_probs_b.bias") if m.mla and g("exp_probs_b.bias") is not None else p
    gate_e, up_e, down_e = g("ffn_gate_exps.weight"), g("ffn_up_exps.weight"), g("ffn_down_exps.weight")
    zero = lambda rows, cols: np.zeros((rows, cols))
    E = gate_e.shape[0]
    gate_b = g("ffn_gate_exps.bias") if g("ffn_gate_exps.bias") is not None else zero(E, gate_e.shape[1])
    up_b = g("ffn_up_exps.bias") if g("ffn_up_exps.bias") is not None else zero(E, up_e.shape[1])
    down_b = g("ffn_down_exps.bias") if g("ffn_down_exps.bias") is not None else zero(E, down_e.shape[1])
    k = m.n_expert_used
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        if m.mla:
            st = _deepseek2_group_mask(m, sel[t])
            order = np.argsort(-st, kind="stable")
            top = order[:k]
            if k < m.n_expert and np.isfinite(st[order[k]]):
                m.min_route_gap = min(m.min_route_gap, float(st[order[k - 1]] - st[order[k]]))
        else:
            order = np.argsort(-p[t], kind="stable")
            top = order[:k]
            if k < m.n_expert:
                m.min_route_gap = min(m.min_route_gap, float(logits[t, order[k - 1]] - logits[t, order[k]]))
        w = p[t, top]
        if m.norm_topk:
            w = w / w.sum()
        if m.mla:
            if m.expert_weights_norm:  # the sum clamped to >= 2^-14, as llama.cpp does
                w = w / max(w.sum(), 6.103515625e-5)
            if m.expert_weights_scale not in (0.0, 1.0):
                w = w * m.expert_weights_scale
        if m.gpt_oss:  # a softmax over the chosen logits (the same ranking as p's)
            w = np.exp(logits[t, top] - logits[t, top].max())
            w = w / w.sum()
        for e, we in zip(top, w):
            gate, up = gate_e[e] @ h[t] + gate_b[e], up_e[e] @ h[t] + up_b[e]
            a = swiglu_oai(gate, up) if m.gpt_oss else silu(gate) * up
            out[t] += we * (down_e[e] @ a + down_b[e])
    if g("ffn_gate_shexp.weight") is not None:
        s = (silu(h @ g("ffn_gate_shexp.weight").T) * (h @ g("ffn_up_shexp.weight").T)) @ g("ffn_down_shexp.weight").T
        gate = g("ffn_gate_inp_shexp.weight")
        if gate is not None:
            s = s * (1.0 / (1.0 + np.exp(-(h @ gate))))[:, None]
        out += s
    return out


def mla_attention(m, g, h, pos, kv_f16=False):
    """deepseek2's multi-head latent attention on h [T][n_embd], written the plain (non-absorbed)
    way; returns the attention output after attn_output [T][n_embd].
    Per token: q = q_b(rms_norm(q_a h)) (or attn_q h), per head q_nope (first qk_nope dims) and q_pe
    (qk_rope dims); kv = kv_a_mqa h: the latent c = rms_norm(kv[:kv_lora]) and one shared key part
    k_pe = kv[kv_lora:]; q_pe and k_pe get the interleaved RoPE. Head hh's key at position j is
    [K_b[hh]^T c_j, k_pe_j] (attn_k_b: [heads][kv_lora][qk_nope]), its value V_b[hh] c_j
    (attn_v_b: [heads][v_head][kv_lora]); scores times kq_scale (see Model._init_deepseek2)."""
    T = h.shape[0]
    nh, nope, rd, kvl = m.n_heads, m.qk_nope, m.qk_rope, m.kv_lora
    if g("attn_q_a.weight") is not None:
        q = rms_norm(h @ g("attn_q_a.weight").T, g("attn_q_a_norm.weight"), m.eps) @ g("attn_q_b.weight").T
    else:
        q = h @ g("attn_q.weight").T
    q = q.reshape(T, nh, m.k_mla)
    q_nope, q_pe = q[..., :nope], q[..., nope:]
    kv = h @ g("attn_kv_a_mqa.weight").T
    c = rms_norm(kv[:, :kvl], g("attn_kv_a_norm.weight"), m.eps)  # [T][kv_lora]
    k_pe = kv[:, kvl:].reshape(T, 1, rd)
    if m.yarn:
        scale, div = 1.0, m.yarn_divisors
    else:
        scale, div = m.rope_scale, None
    q_pe = rope(q_pe, pos, m.rope_base, rd, False, scale, div, m.mla_rope_factor)
    k_pe = rope(k_pe, pos, m.rope_base, rd, False, scale, div, m.mla_rope_factor)[:, 0]  # [T][qk_rope]
    if kv_f16:  # llama.cpp caches [c, k_pe] per token (the values are a view of the same rows)
        c = c.astype(np.float16).astype(np.float64)
        k_pe = k_pe.astype(np.float16).astype(np.float64)
    k_b, v_b = g("attn_k_b.weight"), g("attn_v_b.weight")
    if k_b is None:  # older files: one attn_kv_b [heads * (qk_nope + v_head)][kv_lora]
        kv_b = g("attn_kv_b.weight").reshape(nh, nope + m.v_mla, kvl)
        k_b, v_b = kv_b[:, :nope].transpose(0, 2, 1), kv_b[:, nope:]
    k_b = k_b.reshape(nh, kvl, nope)
    v_b = v_b.reshape(nh, m.v_mla, kvl)
    mask = np.tril(np.ones((T, T), dtype=bool))
    out = np.zeros((T, nh, m.v_mla))
    for hh in range(nh):
        k_nope = c @ k_b[hh]  # [T][qk_nope]
        s = (q_nope[:, hh] @ k_nope.T + q_pe[:, hh] @ k_pe.T) * m.mla_kq_scale
        s = np.where(mask, s, -np.inf)
        s = np.exp(s - s.max(axis=1, keepdims=True))
        s /= s.sum(axis=1, keepdims=True)
        out[:, hh] = (s @ c) @ v_b[hh].T
    return out.reshape(T, nh * m.v_mla) @ g("attn_output.weight").T


def forward(m, tokens, kv_f16=False, n_ctx=None):
    """Logits [T][n_vocab] (float64) of every position of `tokens`, attended causally from 0.
    kv_f16: keys and values rounded to float16, as an F16 KV cache stores them. n_ctx: the
    context the engine runs with (phi3 picks its long RoPE factors beyond ctx_orig)."""
    out_w = None if m.arch == "cohere2" else m.tensor("output.weight")
    if out_w is None:
        out_w = m.tensor("token_embd.weight")
    z = (final_hidden(m, tokens, kv_f16, n_ctx) @ out_w.T) / m.logit_scale
    return m.final_softcap * np.tanh(z / m.final_softcap) if m.final_softcap > 0 else z


def final_hidden(m, tokens, kv_f16=False, n_ctx=None):
    """The final hidden state [T][n_embd] (float64) after the output norm: what the head multiplies
    (and what /v1/embeddings pools)."""
    T = len(tokens)
    hd, nh, nkv = m.head_dim, m.n_heads, m.n_kv
    emb = m.tensor("token_embd.weight")
    x = emb[np.asarray(tokens)] * m.embd_scale
    divisors = m.tensor("rope_freqs.weight")
    if m.arch == "phi3":
        long_ctx = m.ctx_orig and (n_ctx or m.ctx_train) > m.ctx_orig
        divisors = m.tensor("rope_factors_long.weight" if long_ctx else "rope_factors_short.weight")
    pos = np.arange(T)
    group = nh // nkv
    for l in range(m.n_layers):
        g = lambda n: m.tensor(f"blk.{l}.{n}")
        # olmo2 has no input norms: attention and the FFN read the residual stream itself.
        h = x if g("attn_norm.weight") is None else norm(m, x, g("attn_norm.weight"), g("attn_norm.bias"))
        if m.mla:
            o = mla_attention(m, g, h, pos, kv_f16)
        else:
            if g("attn_qkv.weight") is not None:
                qkv = h @ g("attn_qkv.weight").T
                q, k, v = np.split(qkv, [nh * hd, nh * hd + nkv * hd], axis=1)
            else:
                q, k, v = h @ g("attn_q.weight").T, h @ g("attn_k.weight").T, h @ g("attn_v.weight").T
            if g("attn_q.bias") is not None:
                q = q + g("attn_q.bias")
                k = k + g("attn_k.bias")
                v = v + g("attn_v.bias")
            if g("attn_q_norm.weight") is not None and g("attn_q_norm.weight").shape[-1] == nh * hd != hd:
                # olmo2: one norm over each token's whole Q row and whole K row, before the heads split.
                q = rms_norm(q, g("attn_q_norm.weight"), m.eps)
                k = rms_norm(k, g("attn_k_norm.weight"), m.eps)
            elif g("attn_q_norm.weight") is not None:
                q = rms_norm(q.reshape(T, nh, hd), g("attn_q_norm.weight"), m.eps)
                k = rms_norm(k.reshape(T, nkv, hd), g("attn_k_norm.weight"), m.eps)
            q = q.reshape(T, nh, hd)
            k = k.reshape(T, nkv, hd)
            v = v.reshape(T, nkv, hd)
            local = m.layer_is_local(l)
            plain_local = local and m.arch in ("gemma3", "olmo2")  # local layers with a plain RoPE of their own base
            if plain_local:
                base, scale = m.rope_base_local, 1.0
            else:
                base, scale = m.rope_base, m.rope_scale
            # olmo2's local layers do not scale cos/sin by the attention factor either (gemma3's do).
            af, div = (1.0 if plain_local and m.arch == "olmo2" else m.attn_factor), divisors
            if m.yarn and not plain_local:
                scale, af = 1.0, af * m.yarn_mscale
                div = m.yarn_divisors if divisors is None else divisors * m.yarn_divisors
            nope = (m.arch == "smollm3" and (l + 1) % 4 == 0) or (m.arch == "cohere2" and not local)
            if not nope:  # smollm3: every 4th layer has no RoPE; cohere2: its global layers have none
                q = rope(q, pos, base, m.rope_dims, m.neox, scale, div, af)
                k = rope(k, pos, base, m.rope_dims, m.neox, scale, div, af)
            if kv_f16:
                k = k.astype(np.float16).astype(np.float64)
                v = v.astype(np.float16).astype(np.float64)
            mask = np.tril(np.ones((T, T), dtype=bool))
            if local:
                mask &= (pos[:, None] - pos[None, :]) < m.window
            att = np.zeros((T, nh, hd))
            for hh in range(nh):
                j = hh // group
                s = (q[:, hh] @ k[:, j].T) * m.q_scale
                if m.attn_softcap > 0:
                    s = m.attn_softcap * np.tanh(s / m.attn_softcap)
                s = np.where(mask, s, -np.inf)
                sinks = g("attn_sinks.weight")
                if sinks is not None:
                    # gpt-oss: a learned logit per head joins the softmax's denominator, with no value.
                    mx = np.maximum(s.max(axis=1, keepdims=True), sinks[hh])
                    s = np.exp(s - mx)
                    s /= s.sum(axis=1, keepdims=True) + np.exp(sinks[hh] - mx)
                else:
                    s = np.exp(s - s.max(axis=1, keepdims=True))
                    s /= s.sum(axis=1, keepdims=True)
                att[:, hh] = s @ v[:, j]
            o = att.reshape(T, nh * hd) @ g("attn_output.weight").T
        if g("attn_output.bias") is not None:
            o = o + g("attn_output.bias")
        if g("post_attention_norm.weight") is not None and not m.gpt_oss:
            o = rms_norm(o, g("post_attention_norm.weight"), m.eps)
        if m.parallel:  # cohere2: the FFN reads the attention's normalised input; both updates at once
            gate, up = h @ g("ffn_gate.weight").T, h @ g("ffn_up.weight").T
            x = x + o + (silu(gate) * up) @ g("ffn_down.weight").T
            continue
        x = x + o * m.residual_scale
        # gpt-oss's converter names the FFN's input norm post_attention_norm.
        ffn_norm = g("post_attention_norm.weight") if m.gpt_oss else g("ffn_norm.weight")
        h = x if ffn_norm is None else norm(m, x, ffn_norm, g("ffn_norm.bias"))
        if g("ffn_gate_inp.weight") is not None:
            x = x + moe_ffn(m, g, h) * m.residual_scale
            continue
        if m.layer_norm:  # starcoder2: down(gelu(up h + b_up)) + b_down, no gate
            f = gelu_tanh(h @ g("ffn_up.weight").T + g("ffn_up.bias")) @ g("ffn_down.weight").T + g("ffn_down.bias")
            x = x + f
            continue
        if g("ffn_gate.weight") is not None:
            gate, up = h @ g("ffn_gate.weight").T, h @ g("ffn_up.weight").T
        else:  # phi3: gate and up rows fused in ffn_up
            gate, up = np.split(h @ g("ffn_up.weight").T, 2, axis=1)
        act = gelu_tanh(gate) if m.gelu else gate / (1.0 + np.exp(-gate))
        f = (act * up) @ g("ffn_down.weight").T
        if g("post_ffw_norm.weight") is not None:
            f = rms_norm(f, g("post_ffw_norm.weight"), m.eps)
        x = x + f * m.residual_scale
    return norm(m, x, m.tensor("output_norm.weight"), m.tensor("output_norm.bias"))


def log_softmax(logits):
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def perplexity(m, tokens, n_ctx, bos=None, kv_f16=False):
    """llama-perplexity's method: non-overlapping windows of n_ctx tokens (the first token of each
    replaced by BOS when the model adds one); in each, the logits of positions [n_ctx/2, n_ctx-1)
    predict the next token; PPL = exp(mean NLL) over all windows."""
    nll, count = 0.0, 0
    first = n_ctx // 2
    for start in range(0, len(tokens) - n_ctx + 1, n_ctx):
        window = list(tokens[start:start + n_ctx])
        if bos is not None:
            window[0] = bos
        lp = log_softmax(forward(m, window, kv_f16=kv_f16, n_ctx=n_ctx))
        for i in range(first, n_ctx - 1):
            nll -= lp[i, window[i + 1]]
            count += 1
    return float(np.exp(nll / count)), count
