#!/usr/bin/env bash
# bench/run_benchmarks.sh — the benchmarks behind docs/benchmarks.md: CPU prompt/generation speed
# on TinyLlama-1.1B-shaped random models (Q4_K_M, Q8_0), pipeline overlap over two simulated
# devices, and the cost of tracing. Usage: bench/run_benchmarks.sh [BUILD_DIR] [MODEL_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
MODELS=${2:-/tmp/strata-bench-models}
ENGINE=$BUILD/app/strata-engine
VOCAB=../shared/models/tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf
THREADS=${THREADS:-2}
mkdir -p "$MODELS"

make_model() {  # name type dim layers heads kv_heads ffn [ctx]
  local out=$MODELS/$1.gguf
  [ -f "$out" ] || "$ENGINE" make-model --arch llama --dim "$3" --layers "$4" --heads "$5" --kv-heads "$6" \
      --ffn "$7" --ctx "${8:-2048}" --type "$2" --vocab-from "$VOCAB" -o "$out" -t "$THREADS" >&2
  echo "$out"
}

echo "## machine"
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "## CPU, TinyLlama-1.1B shape, $THREADS threads"
for type in q4_k_m q8_0; do
  m=$(make_model "tinyllama-$type" "$type" 2048 22 32 4 5632)
  "$ENGINE" bench -m "$m" -p 64 -n 32 -r 3 -t "$THREADS"
  echo
done

echo "## Pipeline: 2 simulated devices (1 thread each), 4 sequences"
m=$(make_model "mid-q8_0" q8_0 1024 8 16 4 2816)
"$ENGINE" bench -m "$m" --devices sim:gpu0:4GiB,sim:gpu1:4GiB -p 32 -n 32 -r 3 --parallel 4 --no-bandwidth
echo
echo "## Tracing cost (same model, one CPU device, $THREADS threads): without, then with --trace"
"$ENGINE" bench -m "$m" -p 32 -n 64 -r 5 -t "$THREADS" --no-bandwidth
"$ENGINE" bench -m "$m" -p 32 -n 64 -r 5 -t "$THREADS" --no-bandwidth --trace "$MODELS/bench-trace.json" 2>/dev/null

echo
echo "## Attention at context depth (issue 18): 246M llama shape, Q4_K_M, $THREADS threads"
# dim 1024, 16 layers, 16 heads, 4 KV heads (head_dim 64), ffn 2816, vocab 32000: 245.9 M parameters.
# Strata and llama.cpp (LLAMA_BENCH, e.g. /work/llama-ref/build/bin/llama-bench) on the same file,
# back to back: prompt speed at depth 0, then decode after 0, 1k, 4k and 8k tokens in the cache.
m=$(make_model "llama246m-q4_k_m" q4_k_m 1024 16 16 4 2816 16384)
"$ENGINE" bench -m "$m" -t "$THREADS" -p 512,1024,4096 -n 0 -r 2 --no-bandwidth
"$ENGINE" bench -m "$m" -t "$THREADS" -p 0 -n 32 -d 0,1024,4096,8192 -r 2 --no-bandwidth
if [ -n "${LLAMA_BENCH:-}" ]; then
  "$LLAMA_BENCH" -m "$m" -t "$THREADS" -p 512,1024,4096 -n 0 -r 2
  "$LLAMA_BENCH" -m "$m" -t "$THREADS" -p 0 -n 32 -d 0,1024,4096,8192 -r 2
fi
