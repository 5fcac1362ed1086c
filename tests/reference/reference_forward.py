#!/usr/bin/env python3
"""tests/reference/reference_forward.py — an independent NumPy implementation of the llama and
qwen2 forward passes (written from the architectures' definitions, reading tensors with the
`gguf` package), checked against strata-engine's logits on random models of both architectures.

Usage: reference_forward.py STRATA_ENGINE VOCAB_GGUF WORKDIR
Exit 0 when every case agrees within 1e-4 relative (max |a-b| / max |b|), 1 when not, 77 (CTest
skip) when numpy or gguf is missing."""
import os
import subprocess
import sys

try:
    import numpy as np
    from gguf import GGUFReader
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e}")
    sys.exit(77)


def tensor(reader, name):
    for t in reader.tensors:
        if t.name == name:
            dims = [int(d) for d in t.shape]  # ggml order: dims[0] innermost
            return np.array(t.data, dtype=np.float32).reshape(list(reversed(dims)))
    return None


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    v = f.parts[f.data[0]]
    if f.types and f.types[0].name == "STRING":
        return bytes(v).decode()
    return v.tolist()[0] if hasattr(v, "tolist") else v


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True) + eps).astype(np.float32) * w


def rope(x, pos, base, rope_dims, neox):
    # x: [heads][head_dim]; rotate the first rope_dims dims.
    half = rope_dims // 2
    out = x.copy()
    for i in range(half):
        theta = pos * base ** (-2.0 * i / rope_dims)
        c, s = np.cos(theta), np.sin(theta)
        a, b = (i, i + half) if neox else (2 * i, 2 * i + 1)
        x0, x1 = x[:, a], x[:, b]
        out[:, a] = x0 * c - x1 * s
        out[:, b] = x0 * s + x1 * c
    return out


def forward(path, tokens):
    r = GGUFReader(path)
    arch = field(r, "general.architecture")
    p = arch + "."
    n_layers = field(r, p + "block_count")
    n_heads = field(r, p + "attention.head_count")
    n_kv = field(r, p + "attention.head_count_kv", n_heads)
    eps = field(r, p + "attention.layer_norm_rms_epsilon", 1e-5)
    base = field(r, p + "rope.freq_base", 10000.0)
    emb = tensor(r, "token_embd.weight")  # [vocab][dim]
    dim = emb.shape[1]
    hd = dim // n_heads
    rope_dims = field(r, p + "rope.dimension_count", hd)
    neox = arch == "qwen2"
    out_w = tensor(r, "output.weight")
    if out_w is None:
        out_w = emb
    x = emb[tokens].astype(np.float32)  # [T][dim]
    T = len(tokens)
    for l in range(n_layers):
        g = lambda n: tensor(r, f"blk.{l}.{n}")
        h = rms_norm(x, g("attn_norm.weight"), eps)
        q = h @ g("attn_q.weight").T
        k = h @ g("attn_k.weight").T
        v = h @ g("attn_v.weight").T
        if g("attn_q.bias") is not None:
            q += g("attn_q.bias"); k += g("attn_k.bias"); v += g("attn_v.bias")
        q = q.reshape(T, n_heads, hd)
        k = k.reshape(T, n_kv, hd)
        v = v.reshape(T, n_kv, hd)
        for t in range(T):
            q[t] = rope(q[t], t, base, rope_dims, neox)
            k[t] = rope(k[t], t, base, rope_dims, neox)
        att = np.zeros((T, n_heads, hd), dtype=np.float32)
        group = n_heads // n_kv
        for t in range(T):
            for hh in range(n_heads):
                kv = hh // group
                s = (k[: t + 1, kv] @ q[t, hh]) / np.sqrt(hd)
                s = np.exp(s - s.max()); s /= s.sum()
                att[t, hh] = s @ v[: t + 1, kv]
        x = x + att.reshape(T, dim) @ g("attn_output.weight").T
        h = rms_norm(x, g("ffn_norm.weight"), eps)
        gate = h @ g("ffn_gate.weight").T
        up = h @ g("ffn_up.weight").T
        x = x + ((gate / (1 + np.exp(-gate))) * up) @ g("ffn_down.weight").T
    h = rms_norm(x[-1], tensor(r, "output_norm.weight"), eps)
    return h @ out_w.T


def main():
    engine, vocab, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failures = 0
    for arch, kv_heads in (("llama", 2), ("qwen2", 2), ("llama", 4)):
        path = os.path.join(work, f"ref-{arch}-{kv_heads}.gguf")
        subprocess.run([engine, "make-model", "--arch", arch, "--dim", "64", "--layers", "2", "--heads", "4",
                        "--kv-heads", str(kv_heads), "--ffn", "96", "--ctx", "64", "--type", "f32", "--std", "0.1",
                        "--vocab-from", vocab, "-o", path], check=True)
        ids = subprocess.run([engine, "tokenize", "-m", path, "-p", "Once upon a time there was"],
                             check=True, capture_output=True, text=True).stdout.split()
        tokens = [int(i) for i in ids]
        dump = path + ".logits"
        subprocess.run([engine, "run", "-m", path, "-p", "Once upon a time there was", "-n", "0",
                        "--dump-logits", dump, "-t", "1"], check=True, capture_output=True)
        ours = np.fromfile(dump, dtype=np.float32)
        ref = forward(path, tokens)
        err = float(np.max(np.abs(ours - ref)) / np.max(np.abs(ref)))
        ok = err < 1e-4
        failures += not ok
        print(f"{arch} kv_heads={kv_heads} tokens={len(tokens)}: max rel error {err:.2e} {'ok' if ok else 'FAIL'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
