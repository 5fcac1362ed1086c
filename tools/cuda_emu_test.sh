#!/usr/bin/env bash
# tools/cuda_emu_test.sh — the emulated GPU (tests/cuda_emu, docs/backends.md "The emulated GPU"):
# configures its own build tree (build-cuda-emu: -DSTRATA_CUDA_EMULATION=ON, no nvcc, no Qt, no
# HTTP server), builds the emulation and its tests only, and runs `ctest -L gpu` there: every entry
# point of kernels/cuda on CPU threads against the CPU references, the runtime / cuBLAS / NCCL
# emulation's own tests, the ThreadSanitizer build of the matrix-vector kernels (clean) and its
# mutation test (a removed __syncwarp must be caught). Nothing skips.
# Time on the 2-core CI machine: about 3 min from an empty ccache (2 min of it compiling), about
# 40 s with a warm ccache; the tests themselves run in about 20 s (docs/benchmarks.md has no
# numbers for it: the emulation is never timed as a GPU).
# Extra arguments go to ctest (e.g. -R Attention).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${STRATA_JOBS:-2}"
cmake -S . -B build-cuda-emu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA_EMULATION=ON -DSTRATA_CUDA=OFF \
  -DSTRATA_GUI=OFF -DSTRATA_SERVER=OFF -DSTRATA_MPI=OFF >/dev/null
cmake --build build-cuda-emu -j "$jobs" --target cuda_emu_tests
(cd build-cuda-emu && ctest -L gpu --output-on-failure -j "$jobs" --timeout 900 --no-tests=error "$@")
