#!/usr/bin/env bash
# tools/gpu-check.sh — the GPU checks of Strata in one script (see tools/GPU.md). Needs the CUDA
# toolkit, CMake, a C++ compiler and Python 3; no network, no Qt, no apt. What else it needs
# (CLI11 and nlohmann-json headers, GoogleTest sources, the small test models) comes from a
# folder made by tools/third_party.sh.
#
#   tools/gpu-check.sh [options] [THIRD_PARTY_DIR]       (or STRATA_THIRD_PARTY_DIR=...)
#
# With a GPU it
#   1. configures and builds build-gpu/ (Release, STRATA_CUDA=ON, sm_90, no GUI, no HTTP server);
#   2. runs `ctest -L gpu`: the backend conformance suite (cpu, sim and cuda cases), the
#      stories260K golden text on cuda:0, a cuda:0 + cpu layer split, and a random 16-layer Q4_K_M
#      model whose greedy tokens on cuda:0 match the CPU's, and test_gemm (the host CPU's AVX-512
#      VNNI packed-tile kernels against the scalar reference and, bit for bit, their emulation);
#   3. makes a Llama-2-7B-shape Q4_K_M model (make-model) and runs `strata-engine bench` on cuda:0
#      (pp512, tg128; pp512 again in the fast prompt mode, STRATA_CUDA_FAST_GEMM=1), and measures
#      the GPU's copy bandwidth and cuBLAS F16 throughput with tools/gpu_copy_bandwidth.cu in the
#      same run;
#   2b. runs compute-sanitizer memcheck, racecheck and synccheck over the cuda cases of
#      test_backend_ops and test_gpu_collective (--no-sanitize: not);
#   4. prints one table: decode as a share of copy bandwidth (target >= 70%), prompt processing as
#      a share of cuBLAS F16 (target >= 50%), and each sanitizer's result.
# Without a GPU (no nvidia-smi, or it lists none), or with --no-gpu, it does 1 and 2 only: the
# cuda cases must then report "skipped" (this is the part CI runs).
#
# Options:
#   --no-gpu        the GPU-free part only, even where a GPU is present
#   --gpu           insist on the GPU part (fail when there is no GPU)
#   --no-sanitize   leave out the compute-sanitizer runs (2b)
#   --build-dir D   build folder (default: build-gpu in the checkout)
#   --jobs N        parallel build and test jobs (default: all cores)
#   --models D      folder with stories260K.gguf, its golden JSON and llama-2-tiny-random.gguf
#                   (default: THIRD_PARTY_DIR/models, else ../shared/models beside the checkout)
# Exit status: 0 when everything that ran passed.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=auto
BUILD_DIR=$ROOT/build-gpu
JOBS=$(nproc 2>/dev/null || echo 4)
THIRD_PARTY=${STRATA_THIRD_PARTY_DIR:-}
MODELS=""
SANITIZE=1

usage() { sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; }

while (($#)); do
  case "$1" in
    --no-gpu) MODE=no-gpu ;;
    --no-sanitize) SANITIZE=0 ;;
    --gpu) MODE=gpu ;;
    --build-dir) BUILD_DIR=$2; shift ;;
    --jobs) JOBS=$2; shift ;;
    --models) MODELS=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "gpu-check: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) THIRD_PARTY=$1 ;;
  esac
  shift
done

log() { printf '\n== gpu-check: %s\n' "$*"; }
die() { echo "gpu-check: $*" >&2; exit 1; }
now() { date +%s; }
T_START=$(now)

# --- what is here -------------------------------------------------------------------------------
if [ -z "$THIRD_PARTY" ] && [ -d "$ROOT/third_party/include" ]; then THIRD_PARTY=$ROOT/third_party; fi
if [ -n "$THIRD_PARTY" ]; then
  THIRD_PARTY=$(cd "$THIRD_PARTY" 2>/dev/null && pwd) || die "third-party folder '$THIRD_PARTY' does not exist"
  for f in include/CLI/CLI.hpp include/nlohmann/json.hpp googletest/CMakeLists.txt; do
    [ -e "$THIRD_PARTY/$f" ] || die "$THIRD_PARTY/$f is missing: fill the folder with tools/third_party.sh"
  done
elif [ ! -e /usr/include/CLI/CLI.hpp ] || [ ! -e /usr/include/nlohmann/json.hpp ]; then
  die "no CLI11 / nlohmann-json headers here: pass a folder made by tools/third_party.sh (see tools/GPU.md)"
fi
if [ -z "$MODELS" ]; then
  if [ -n "$THIRD_PARTY" ] && [ -f "$THIRD_PARTY/models/stories260K.gguf" ]; then
    MODELS=$THIRD_PARTY/models
  else
    MODELS=$ROOT/../shared/models
  fi
fi
[ -d "$MODELS" ] && MODELS=$(cd "$MODELS" && pwd)

command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || die "nvcc not found: put the CUDA toolkit's bin/ on PATH"
command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH

GPUS=0
if command -v nvidia-smi >/dev/null 2>&1; then
  GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
if [ "$MODE" = auto ]; then
  if [ "$GPUS" -gt 0 ]; then MODE=gpu; else MODE=no-gpu; fi
elif [ "$MODE" = gpu ] && [ "$GPUS" -eq 0 ]; then
  die "--gpu given but nvidia-smi lists no GPU"
fi
GPU_NAME=none
[ "$GPUS" -gt 0 ] && GPU_NAME=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
mkdir -p "$BUILD_DIR" || die "cannot create $BUILD_DIR"
echo "gpu-check: mode $MODE; GPUs $GPUS ($GPU_NAME); build $BUILD_DIR; jobs $JOBS"
echo "gpu-check: third-party ${THIRD_PARTY:-(system headers)}; models $MODELS"

# Results for the table: name -> text.
declare -A R
ORDER=()
result() { R[$1]=$2; ORDER+=("$1"); }
FAILED=0

# --- 1. configure and build ---------------------------------------------------------------------
log "configure + build (CUDA on, sm_90, Release, no GUI, no server)"
GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)
CMAKE_ARGS=(-S "$ROOT" -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON
            -DCMAKE_CUDA_ARCHITECTURES=90 -DSTRATA_GUI=OFF -DSTRATA_SERVER=OFF
            -DSTRATA_SHARED_MODELS_DIR="$MODELS")
[ -n "$THIRD_PARTY" ] && CMAKE_ARGS+=(-DSTRATA_THIRD_PARTY_DIR="$THIRD_PARTY")
# NCCL beside the toolkit, else the one PyTorch's wheels carry (nvidia-nccl-cu13: nvidia/nccl/
# with include/nccl.h and lib/libnccl.so.2, no unversioned .so for find_library to find).
NVCC_DIR=$(dirname "$(command -v nvcc)")
if [ ! -e "$NVCC_DIR/../include/nccl.h" ] && [ ! -e /usr/include/nccl.h ] && [ ! -e /usr/local/include/nccl.h ]; then
  NCCL_DIR=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) or list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
  [ -n "$NCCL_DIR" ] || NCCL_DIR=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
  NCCL_LIB=$(ls "$NCCL_DIR"/lib/libnccl.so* 2>/dev/null | head -1)
  if [ -n "$NCCL_DIR" ] && [ -e "$NCCL_DIR/include/nccl.h" ] && [ -n "$NCCL_LIB" ]; then
    echo "gpu-check: NCCL from Python's nvidia-nccl wheel: $NCCL_DIR"
    CMAKE_ARGS+=(-DSTRATA_NCCL_INCLUDE="$NCCL_DIR/include" -DSTRATA_NCCL_LIBRARY="$NCCL_LIB")
  fi
fi
# With a GPU the device time is short: build only what steps 2-3 run (the gpu-labelled test
# programs, strata-engine and the CUDA backend module it loads). Without one (CI) build everything,
# so every CUDA source compiles.
TARGETS=()
if [ "$MODE" = gpu ]; then
  TARGETS=(--target strata-engine strata-backend-cuda test_backend_ops test_gpu_models test_gpu_nccl_ranks
           test_gpu_collective test_gemm test_gemm_float)
fi
t0=$(now)
if cmake "${CMAKE_ARGS[@]}" && cmake --build "$BUILD_DIR" -j "$JOBS" "${TARGETS[@]}"; then
  result build "ok ($(($(now) - t0)) s)"
else
  result build "FAILED"
  FAILED=1
fi

# --- 2. ctest -L gpu ----------------------------------------------------------------------------
if [ "$FAILED" -eq 0 ]; then
  log "ctest -L gpu"
  CTEST_LOG=$BUILD_DIR/gpu-check-ctest.log
  t0=$(now)
  (cd "$BUILD_DIR" && ctest -L gpu --output-on-failure -j "$JOBS" --timeout 600) 2>&1 | tee "$CTEST_LOG"
  ctest_rc=${PIPESTATUS[0]}
  count() { grep -cE "Test +#[0-9]+: $1" "$CTEST_LOG" || true; }
  passed=$(count '.* Passed')
  skipped=$(count '.*\*\*\*Skipped')
  total=$(grep -cE 'Test +#[0-9]+: ' "$CTEST_LOG" || true)
  failed=$((total - passed - skipped))
  cuda_total=$(count '(cuda/|GpuModels\.)')
  cuda_passed=$(count '(cuda/|GpuModels\.).* Passed')
  cuda_skipped=$(count '(cuda/|GpuModels\.).*\*\*\*Skipped')
  result "ctest -L gpu" "$passed passed, $failed failed, $skipped skipped of $total ($(($(now) - t0)) s)"
  if [ "$MODE" = gpu ]; then
    result "cuda cases" "$cuda_passed passed, $cuda_skipped skipped of $cuda_total"
  else
    result "cuda cases" "$cuda_skipped skipped of $cuda_total (no GPU: all must skip)"
    [ "$cuda_passed" -eq 0 ] && [ "$cuda_skipped" -eq "$cuda_total" ] || FAILED=1
  fi
  [ "$total" -gt 0 ] || { result "ctest -L gpu" "no tests carry the gpu label"; FAILED=1; }
  [ "$ctest_rc" -eq 0 ] && [ "$failed" -eq 0 ] || FAILED=1
fi

# --- 2b. compute-sanitizer over the cuda cases ----------------------------------------------------
# memcheck (out-of-bounds and misaligned device accesses, leaks of device memory), racecheck
# (shared-memory hazards between a block's threads) and synccheck (barriers and warp operations
# with the wrong threads or masks), each over the cuda cases of the op suite and the all-reduce
# test. racecheck and synccheck slow kernels by 10-100x: they take the op suite without its two
# 32771-row cases. --no-sanitize leaves this step out.
if [ "$MODE" = gpu ] && [ "$FAILED" -eq 0 ] && [ "$SANITIZE" = 1 ]; then
  SANITIZER=$(command -v compute-sanitizer || echo "$NVCC_DIR/compute-sanitizer")
  if [ ! -x "$SANITIZER" ]; then
    result "compute-sanitizer" "FAILED (not found beside nvcc)"
    FAILED=1
  else
    export STRATA_BACKEND_PATH=$BUILD_DIR/app
    for tool in memcheck racecheck synccheck; do
      log "compute-sanitizer --tool $tool"
      filter='cuda/*'
      [ "$tool" = memcheck ] || filter='cuda/*:-*row_tiled*'
      t0=$(now)
      SAN_LOG=$BUILD_DIR/gpu-check-$tool.log
      ok=1
      for prog in "tests/test_backend_ops --gtest_filter=$filter" "tests/test_gpu_collective"; do
        # shellcheck disable=SC2086
        "$SANITIZER" --tool "$tool" --error-exitcode 99 --target-processes all $BUILD_DIR/$prog >>"$SAN_LOG" 2>&1 || ok=0
      done
      errors=$(grep -E '^========= (ERROR SUMMARY|RACECHECK SUMMARY)' "$SAN_LOG" | tail -2 | tr '\n' ' ')
      if [ "$ok" = 1 ]; then
        result "sanitizer $tool" "clean: ${errors:-no report} ($(($(now) - t0)) s)"
      else
        result "sanitizer $tool" "FAILED: ${errors:-see $SAN_LOG} ($(($(now) - t0)) s)"
        FAILED=1
      fi
    done
  fi
fi

# --- 3. 7B-shape Q4_K_M bench and the GPU's own ceilings -----------------------------------------
BENCH_JSON=$BUILD_DIR/gpu-check-bench.json
BENCH_FAST_JSON=$BUILD_DIR/gpu-check-bench-fast.json
CEIL_TXT=$BUILD_DIR/gpu-check-ceilings.txt
if [ "$MODE" = gpu ] && [ -x "$BUILD_DIR/app/strata-engine" ]; then
  ENGINE=$BUILD_DIR/app/strata-engine
  log "copy bandwidth and cuBLAS F16 (tools/gpu_copy_bandwidth.cu)"
  if nvcc -O2 -arch=sm_90 -o "$BUILD_DIR/gpu_copy_bandwidth" "$ROOT/tools/gpu_copy_bandwidth.cu" -lcublas &&
     "$BUILD_DIR/gpu_copy_bandwidth" 0 | tee "$CEIL_TXT"; then
    :
  else
    result "ceilings" "FAILED (gpu_copy_bandwidth)"
    FAILED=1
  fi

  log "7B-shape Q4_K_M model (make-model)"
  VOCAB=$MODELS/llama-2-tiny-random.gguf  # the Llama 2 vocabulary, 32,000 tokens
  [ -f "$VOCAB" ] || VOCAB=$MODELS/tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf
  # --row-pool 64: each matrix's rows repeat 64 drawn rows (the same bytes to read per token, a
  # random model's text either way): about 3 s to write instead of 82 s of quantizing on the
  # first H200 run (make-model of 4 such layers here, 2 threads: 2.2 s against 45.8 s).
  MODEL=$BUILD_DIR/gpu-check/llama-2-7b-shape-q4_k_m-pool64.gguf
  mkdir -p "$BUILD_DIR/gpu-check"
  t0=$(now)
  if [ -f "$MODEL" ] || { "$ENGINE" make-model --arch llama --name llama-2-7b-shape --dim 4096 --layers 32 \
       --heads 32 --kv-heads 32 --ffn 11008 --ctx 4096 --type q4_k_m --row-pool 64 --vocab-from "$VOCAB" -o "$MODEL.tmp" \
       -t "$JOBS" && mv "$MODEL.tmp" "$MODEL"; }; then
    result model "Llama-2-7B shape (4096 x 32 layers, ffn 11008, vocab of $(basename "$VOCAB")) q4_k_m, $(du -BM "$MODEL" | cut -f1)B ($(($(now) - t0)) s)"
    log "bench on cuda:0 (pp512, tg128)"
    if "$ENGINE" bench --model "$MODEL" --devices cuda:0 -p 512 -n 128 -r 3 --no-bandwidth --json >"$BENCH_JSON"; then
      cat "$BENCH_JSON" | head -c 2000; echo
    else
      result bench "FAILED (see above)"
      FAILED=1
    fi
    # The batch-invariant default (every prompt through the mmv kernels) against the fast prompt
    # mode (cuBLAS; not batch-invariant), same model and machine: the cost of invariance on a GPU.
    log "bench on cuda:0, fast prompt mode (STRATA_CUDA_FAST_GEMM=1, pp512)"
    if STRATA_CUDA_FAST_GEMM=1 "$ENGINE" bench --model "$MODEL" --devices cuda:0 -p 512 -n 0 -r 3 --no-bandwidth \
         --json >"$BENCH_FAST_JSON"; then
      cat "$BENCH_FAST_JSON" | head -c 2000; echo
    else
      result "bench fast mode" "FAILED (see above)"
      FAILED=1
    fi
  else
    result model "FAILED (make-model)"
    FAILED=1
  fi
fi

# --- 4. the table -----------------------------------------------------------------------------------
python_table() {
  python3 - "$BENCH_JSON" "$CEIL_TXT" "$BENCH_FAST_JSON" <<'EOF'
import json, os, sys
bench_path, ceil_path, fast_path = sys.argv[1], sys.argv[2], sys.argv[3]
rows = []
ceil = {}
if os.path.exists(ceil_path):
    for line in open(ceil_path):
        k, _, v = line.strip().partition(" ")
        ceil[k] = v
if ceil:
    rows.append(("GPU ceilings", "copy %s GB/s (read+write), read %s GB/s, cuBLAS F16 %s TFLOP/s (%s)" % (
        ceil.get("copy_gbps", "?"), ceil.get("read_gbps", "?"), ceil.get("gemm_f16_tflops", "?"), ceil.get("device", "?"))))
if os.path.exists(bench_path) and os.path.getsize(bench_path) > 0:
    j = json.load(open(bench_path))
    res = {r["test"]: r for r in j.get("results", [])}
    bpt = float(j.get("bytes_per_token", 0))
    params = float(j.get("parameters", 0))
    # Prompt FLOPs per token: 2 per weight of the blocks and the head (the embedding is a lookup;
    # the attention's own FLOPs, ~1% at 512 tokens, are left out).
    flops_per_token = 2.0 * (params - 32000 * 4096)
    tg = res.get("tg128")
    pp = res.get("pp512")
    if tg:
        gbps = tg["tokens_per_s"] * bpt / 1e9
        line = "%.1f tok/s x %.2f GB/token = %.0f GB/s" % (tg["tokens_per_s"], bpt / 1e9, gbps)
        if "copy_gbps" in ceil:
            line += " = %.0f%% of copy bandwidth (target >= 70%%)" % (100 * gbps / float(ceil["copy_gbps"]))
        if "read_gbps" in ceil:
            line += ", %.0f%% of read bandwidth" % (100 * gbps / float(ceil["read_gbps"]))
        rows.append(("decode tg128, cuda:0", line))
    if pp:
        tflops = pp["tokens_per_s"] * flops_per_token / 1e12
        line = "%.0f tok/s = %.1f TFLOP/s" % (pp["tokens_per_s"], tflops)
        if "gemm_f16_tflops" in ceil:
            line += " = %.0f%% of cuBLAS F16 (target >= 50%%)" % (100 * tflops / float(ceil["gemm_f16_tflops"]))
        rows.append(("prompt pp512, cuda:0", line))
    if pp and os.path.exists(fast_path) and os.path.getsize(fast_path) > 0:
        fres = {r["test"]: r for r in json.load(open(fast_path)).get("results", [])}
        fpp = fres.get("pp512")
        if fpp:
            rows.append(("prompt pp512, cuda:0, fast mode (cuBLAS, not batch-invariant)",
                         "%.0f tok/s = %.1f TFLOP/s; the batch-invariant default runs at %.0f%% of it" % (
                             fpp["tokens_per_s"], fpp["tokens_per_s"] * flops_per_token / 1e12,
                             100 * pp["tokens_per_s"] / fpp["tokens_per_s"])))
for r in rows:
    print("%s\t%s" % r)
EOF
}

T_END=$(now)
{
  for k in "${ORDER[@]}"; do printf '%s\t%s\n' "$k" "${R[$k]}"; done
  if [ "$MODE" = gpu ] && command -v python3 >/dev/null 2>&1; then python_table; fi
  if [ "$MODE" = no-gpu ]; then printf 'bench\tnot run (no GPU)\n'; fi
  printf 'total\t%s s, mode %s, GPU %s\n' "$((T_END - T_START))" "$MODE" "$GPU_NAME"
} >"$BUILD_DIR/gpu-check-table.tsv" 2>/dev/null || true

echo
echo "| check | result |"
echo "|---|---|"
while IFS=$'\t' read -r k v; do echo "| $k | $v |"; done <"$BUILD_DIR/gpu-check-table.tsv"
[ "$FAILED" -eq 0 ] && echo "gpu-check: PASS" || echo "gpu-check: FAIL"
exit "$FAILED"
