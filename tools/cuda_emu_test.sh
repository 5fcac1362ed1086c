#!/usr/bin/env bash
# tools/cuda_emu_test.sh — the emulated GPU (tests/cuda_emu, docs/backends.md "The emulated GPU"):
# configures its own build tree (build-cuda-emu: -DSTRATA_CUDA_EMULATION=ON, no nvcc, no Qt, no
# HTTP server), builds the emulation and its tests only, and runs `ctest -L gpu` there: every entry
# point of kernels/cuda on CPU threads against the CPU references, the runtime / cuBLAS / NCCL
# emulation's own tests, the ThreadSanitizer build of the matrix-vector kernels (clean) and its
# mutation test (a removed __syncwarp must be caught). Nothing skips.
# It also builds the CUDA backend module (libstrata-backend-cuda.so) against the emulation, which
# strata-engine loads as it loads the real one, and runs the project's GPU tests on it: the cuda
# cases of test_backend_ops, test_gpu_models, test_gpu_nccl_ranks, and stories260K's golden text on
# emulated GPUs (cuda:0, two-GPU layer and tensor splits, GPU + CPU). A skipped case fails there.
# Time on this 2-core machine (2026-12-07, quiet): `ctest -L gpu -j2` 345 tests in 5 min 36 s (the
# longest: the sliding-window ring model, about 2 minutes, and the 256-token golden text). STRATA_CUDA_EMU_BUILD picks another
# build folder.
# Extra arguments go to ctest (e.g. -R Attention).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${STRATA_JOBS:-2}"
build="${STRATA_CUDA_EMU_BUILD:-build-cuda-emu}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA_EMULATION=ON -DSTRATA_CUDA=OFF \
  -DSTRATA_GUI=OFF -DSTRATA_SERVER=OFF -DSTRATA_MPI=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target cuda_emu_tests
(cd "$build" && ctest -L gpu --output-on-failure -j "$jobs" --timeout 900 --no-tests=error "$@")
