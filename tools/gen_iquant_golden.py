#!/usr/bin/env python3
"""tools/gen_iquant_golden.py — writes tests/data/iquant_golden.bin: random blocks of every IQ, ternary and
MXFP4 type and their values as decoded by the gguf package (gguf.quants.dequantize, llama.cpp's
reference decoders in Python). tests/kernels/test_iquants.cpp checks Strata's decoders against them
bit for bit.

Blocks are random bytes with the scale fields set to finite fp16 values (both signs, 2^-14 .. 2), MXFP4
exponents 100 .. 150 and 0, 1, 2, 250 (the subnormal e = 0 and 1 among them).
File: per type: u32 ggml type id, u32 block count, the blocks' bytes, then count * block_elems f32.

Usage: tools/gen_iquant_golden.py tests/data/iquant_golden.bin"""
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T, GGML_QUANT_SIZES
from gguf import quants

N_BLOCKS = 24
TYPES = ["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "IQ4_NL", "IQ4_XS", "TQ1_0",
         "TQ2_0", "MXFP4"]
D_OFFSET = {"TQ1_0": 52, "TQ2_0": 64}  # where the f16 scale sits (else at 0)


def random_f16(rng, n):
    mag = np.exp2(rng.uniform(-14, 1, n)).astype(np.float16)
    sign = np.where(rng.random(n) < 0.5, -1, 1).astype(np.float16)
    return (mag * sign).view(np.uint16)


def blocks_of(name, rng):
    qt = T[name]
    elems, size = GGML_QUANT_SIZES[qt]
    b = rng.integers(0, 256, (N_BLOCKS, size), dtype=np.uint8)
    if name == "MXFP4":
        b[:, 0] = rng.integers(100, 150, N_BLOCKS)
        b[:4, 0] = [0, 1, 2, 250]
    elif name == "IQ1_M":
        d = random_f16(rng, N_BLOCKS)
        sc = b[:, 48:56].copy().view(np.uint16)  # [N][4]
        for k in range(4):
            sc[:, k] = (sc[:, k] & 0x0FFF) | (((d >> (4 * k)) & 0xF) << 12)
        b[:, 48:56] = sc.view(np.uint8)
    else:
        off = D_OFFSET.get(name, 0)
        b[:, off:off + 2] = random_f16(rng, N_BLOCKS).view(np.uint8).reshape(N_BLOCKS, 2)
    return qt, elems, b


def main():
    rng = np.random.default_rng(20261205)
    with open(sys.argv[1], "wb") as f:
        for name in TYPES:
            qt, elems, b = blocks_of(name, rng)
            y = quants.dequantize(b.reshape(-1), qt).astype(np.float32).reshape(-1)
            assert y.size == N_BLOCKS * elems and np.all(np.isfinite(y)), name
            f.write(struct.pack("<II", int(qt), N_BLOCKS))
            f.write(b.tobytes())
            f.write(y.tobytes())


if __name__ == "__main__":
    main()
