#!/usr/bin/env bash
# tools/test.sh — set up, build (Release) and run the whole test suite with CTest (the Debian
# package's test, packaging_deb, among them), and again capped at AVX2 where the CPU has AVX-512;
# the ISA-leak check of a Debug kernel build; the engine and serve tests under ASan + UBSan
# (STRATA_CI_SANITIZE=0 leaves them out); the CUDA kernels and backend on the emulated GPU
# (tools/cuda_emu_test.sh; STRATA_CI_CUDA_EMU=0 leaves it out); then build the GPU machine's configuration (CUDA on,
# sm_90, no Qt, no HTTP server) and run its GPU-labelled tests, which report themselves skipped
# where there is no GPU (tools/gpu-check.sh --no-gpu), so that configuration cannot break unseen.
# This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@")
# On a CPU with AVX-512 VNNI (/proc/cpuinfo says avx512_vnni) the suite ran on the AVX-512
# kernels; once more with every run capped at AVX2 (kernels/cpu/isa.h), the paths an AMD Zen 2 / 3
# takes, so that both are tested whichever machine CI gets (the packaging test is ISA-blind and
# stays out).
if grep -qwE "avx512_vnni|avx512vnni" /proc/cpuinfo; then
  (cd build && STRATA_ISA=avx2 ctest --output-on-failure -j "$(nproc)" --timeout 900 -E '^packaging_deb$' "$@")
fi
# No ISA-specific code can reach the scalar path: a Debug build of the CPU kernels, its symbols
# checked and its kernel tests run (tools/isa_check.sh).
tools/isa_check.sh
# The engine and server tests again under ASan + UBSan, in a second build tree (build-asan: no GUI,
# no CUDA, only strata-engine and the engine/serve test executables): tools/sanitize.sh. On by
# default; STRATA_CI_SANITIZE=0 skips it (a quick local run, not CI).
if [ "${STRATA_CI_SANITIZE:-1}" != 0 ]; then
  tools/sanitize.sh
fi
# The CUDA code on the emulated GPU (tools/cuda_emu_test.sh, docs/backends.md "The emulated GPU"):
# its own build tree (build-cuda-emu, no nvcc), every kernel and the CUDA backend module on CPU
# threads, `ctest -L gpu` there with no skips, including the ThreadSanitizer build and its mutation
# test (a removed __syncwarp must be caught). About 3 min of tests on 2 cores plus the build.
# STRATA_CI_CUDA_EMU=0 skips it (a quick local run, not CI).
if [ "${STRATA_CI_CUDA_EMU:-1}" != 0 ]; then
  STRATA_JOBS="$(nproc)" tools/cuda_emu_test.sh
fi
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  tools/gpu-check.sh --no-gpu --jobs "$(nproc)"
else
  echo "test: no CUDA toolkit here; the GPU configuration was not built" >&2
fi
