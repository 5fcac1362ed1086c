#!/usr/bin/env bash
# bench/run_benchmarks.sh — reproduces every table of docs/benchmarks.md, section by section:
#   cpu       CPU prompt/generation speed, TinyLlama-1.1B-shaped random models (Q4_K_M, Q8_0)
#   pipeline  pipeline overlap over two simulated devices (pipelined vs one in flight)
#   trace     the cost of tracing
#   seam      instructions of `run -t 1` under callgrind (the backend seam table; the "before"
#             column needs a build of 0d1a922 passed as SEAM_BEFORE=path/to/strata-engine)
#   serve_itl chunked prefill in `serve` (bench/serve_itl.py)
#   probe     issue 48's probes against `serve` with SmolLM2-135M: RSS under the header bomb and the
#             Range probe, 200 abandoned requests, a short request during a long prefill (bench/serve_probe.py)
#   real      the real models (SmolLM2-135M Q4_1, Gemma 3 270M Q4_K_M) and the f32/f16 KV cache at 4k
#   kernels   the kernel table: every weight type, 4096x4096 mat-vec and x64, 1 and 2 threads, and
#             llama.cpp's test-backend-ops MUL_MAT perf cases (4096 x 14336) beside ours, and the
#             float weights at n = 8, 64, 512 with 1 and 2 threads
#   table     issue 17's kernel table side by side: W 4096 x 4096, 1 and 64 tokens, 1 and 2 threads,
#             every weight type, ours then llama.cpp's test-backend-ops with the cases and thread
#             count bench/llama_perf_cases.py adds to its source (skipped, with a note, without)
#   avx2      the AVX2 paths (what AMD Zen 2 / 3 runs) forced, beside an AVX2-only llama.cpp build
#   small     batches of 2, 3, 4 and 8 tokens (a batched decode step of as many sequences; SMALL_NS
#             picks others), every weight type, the best ISA beside llama.cpp, then the AVX2 paths
#             beside its AVX2 build
#   batched   batched decode: `bench --parallel 8` vs one stream on a 246M Q4_K_M model
#   server    8 concurrent streams: `strata-engine serve` vs llama-server (bench/serve_throughput.py)
#   depth     decode attention alone at depths 1k-8k (bench/attention_bench; AVX2 against AVX-512
#             kernels), then the 246M model's prompt speed and its decode at depths 0-8k, beside
#             llama-bench
# Every bench row prints the read bandwidth measured right after each repetition.
# Usage: bench/run_benchmarks.sh [BUILD_DIR] [MODEL_DIR]; SECTIONS="cpu kernels" picks sections
# (default: all); LLAMA_BIN=dir of llama.cpp's binaries (test-backend-ops, llama-server) for the
# side-by-side sections (default /work/llama-ref/bin: cmake -B /work/llama-ref in its source tree;
# skipped, with a note, when absent); LLAMA_AVX2_BIN the same for its AVX2-only build (the avx2 and
# small sections); WEIGHT_TYPES="q8_0 q4_k" narrows the kernel sections' types; TABLE_ROUNDS /
# SMALL_ROUNDS: rounds of the table / small sections.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
MODELS=${2:-/tmp/strata-bench-models}
ENGINE=$BUILD/app/strata-engine
KBENCH=$BUILD/bench/kernel_bench
VOCAB=../shared/models/tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf
THREADS=${THREADS:-2}
SECTIONS=${SECTIONS:-cpu cpu_side pipeline trace seam serve_itl probe real kernels table dots avx2 small batched server depth}
LLAMA_BIN=${LLAMA_BIN:-/work/llama-ref/bin}
REAL_MODELS=${STRATA_MODEL_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/strata/models}
mkdir -p "$MODELS"

make_model() {  # name type dim layers heads kv_heads ffn [extra make-model options]; CTX=N: its context
  local out=$MODELS/$1.gguf
  [ -f "$out" ] || "$ENGINE" make-model --arch llama --dim "$3" --layers "$4" --heads "$5" --kv-heads "$6" \
      --ffn "$7" --ctx "${CTX:-2048}" --type "$2" --vocab-from "$VOCAB" -o "$out" -t "$THREADS" "${@:8}" >&2
  echo "$out"
}
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
LLAMA_AVX2_BIN=${LLAMA_AVX2_BIN:-/work/llama-avx2/bin}
WEIGHT_TYPES=${WEIGHT_TYPES:-f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k}

# Every weight type at token counts NS ("1,8,512"): our kernels at ISA (best / avx2 / ...) with
# one weight copy (STRATA_BENCH_HOT=1: test-backend-ops reruns one buffer), then the same cases
# from LBIN's test-backend-ops (skipped, with a note, when absent; LBIN empty: skipped silently).
# W 4096 x K (default 14336), THREADS threads (default 1; test-backend-ops takes TBO_THREADS only
# after bench/llama_perf_cases.py, and otherwise runs hardware_concurrency / 2).
kernel_side_by_side() {  # ISA LBIN NS [THREADS [K]]
  local isa=$1 lbin=$2 ns=$3 threads=${4:-1} k=${5:-14336} type
  for type in $WEIGHT_TYPES; do
    STRATA_BENCH_HOT=1 "$KBENCH" "$threads" 4096 "$k" "$isa" "$type" "$ns" | grep tokens=
    if [ -n "$lbin" ] && [ -x "$lbin/test-backend-ops" ]; then
      TBO_THREADS=$threads "$lbin/test-backend-ops" perf -b CPU -o MUL_MAT \
          -p "type_a=${type/_k/_K},type_b=f32,m=4096,n=(${ns//,/|}),k=$k,bs=\[1,1\]" | grep 'MUL_MAT(' | sed 's/,bs=.*pad=0)//'
    fi
  done
  if [ -n "$lbin" ] && [ ! -x "$lbin/test-backend-ops" ]; then echo "no $lbin/test-backend-ops: llama.cpp side not measured"; fi
}

if want cpu; then
  echo "## CPU, TinyLlama-1.1B shape, $THREADS threads"
  for type in q4_k_m q8_0; do
    m=$(make_model "tinyllama-$type" "$type" 2048 22 32 4 5632)
    "$ENGINE" bench -m "$m" -p 64 -n 32 -r 3 -t "$THREADS"
    echo
  done
fi

if want cpu_side; then
  # The issue 17 table: the same TinyLlama-1.1B-shape files at 1 and 2 threads, ours then
  # llama-bench on the same file (LLAMA_BIN; skipped, with a note, when absent), CPU_ROUNDS
  # alternations (default 2).
  echo "## CPU side by side: TinyLlama-1.1B shape, 1 and 2 threads, ours then llama-bench"
  [ -x "$LLAMA_BIN/llama-bench" ] || echo "no $LLAMA_BIN/llama-bench: llama.cpp side not measured"
  for round in $(seq "${CPU_ROUNDS:-2}"); do
    for type in q8_0 q4_k_m; do
      m=$(make_model "tinyllama-$type" "$type" 2048 22 32 4 5632)
      for t in 1 2; do
        echo "### round $round, $type, $t thread(s)"
        "$ENGINE" bench -m "$m" -p 64 -n 32 -r 3 -t "$t" --no-bandwidth
        if [ -x "$LLAMA_BIN/llama-bench" ]; then "$LLAMA_BIN/llama-bench" -m "$m" -p 64 -n 32 -r 3 -t "$t"; fi
      done
    done
  done
  echo
fi

mid=""
if want pipeline || want trace; then mid=$(make_model "mid-q8_0" q8_0 1024 8 16 4 2816); fi
if want pipeline; then
  echo "## Pipeline: 2 simulated devices (1 thread each), 4 sequences"
  "$ENGINE" bench -m "$mid" --devices sim:gpu0:4GiB,sim:gpu1:4GiB -p 32 -n 32 -r 3 --parallel 4 --no-bandwidth
  "$ENGINE" bench -m "$mid" --devices sim:gpu0:4GiB,sim:gpu1:4GiB --placement auto -p 32 -n 32 -r 3 --parallel 4 --no-bandwidth
  echo
fi
if want trace; then
  echo "## Tracing cost (same model, one CPU device, $THREADS threads): without, then with --trace, 3 pairs"
  for i in 1 2 3; do
    "$ENGINE" bench -m "$mid" -p 0 -n 64 -r 5 -t "$THREADS" --no-bandwidth | grep tg64
    "$ENGINE" bench -m "$mid" -p 0 -n 64 -r 5 -t "$THREADS" --no-bandwidth --trace "$MODELS/bench-trace.json" 2>/dev/null | grep tg64
  done
  echo
fi

if want seam; then
  echo "## Backend seam: instructions of run -t 1 (callgrind), dim 1024 / 8 blocks Q4_K_M"
  seam=$(make_model "seam-q4_k_m" q4_k_m 1024 8 16 4 2816)
  for bin in ${SEAM_BEFORE:-} "$ENGINE"; do
    for args in "-p 'Once upon a time there was a little girl who lived in a village' -n 8" "-p Hello -n 40"; do
      out=$(eval valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" run -m "$seam" -t 1 --temp 0 $args 2>&1 >/dev/null |
            grep -m1 'Collected' || true)
      echo "$bin run $args: $out"
    done
  done
  echo
fi

if want serve_itl; then
  echo "## Chunked prefill in serve (bench/serve_itl.py)"
  itl=$MODELS/itl-q8_0.gguf
  [ -f "$itl" ] || "$ENGINE" make-model --arch llama --vocab-from ../shared/models/stories260K.gguf --dim 256 --layers 8 \
      --heads 8 --ffn 768 --ctx 4096 --type q8_0 -o "$itl" -t "$THREADS" >&2
  python3 bench/serve_itl.py "$ENGINE" "$itl" --threads "$THREADS" --chunks 32,64,256,4096 --tokens 48
  echo
fi

if want probe; then
  echo "## The server against issue 48's probes (bench/serve_probe.py)"
  if [ -f "$REAL_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
    python3 bench/serve_probe.py "$ENGINE" "$REAL_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" --threads "$THREADS"
  else
    echo "(skipped: $REAL_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf is missing; tools/setup.sh fetches it)"
  fi
  echo
fi

if want real; then
  echo "## Real models, $THREADS threads, default f16 KV"
  for f in SmolLM2-135M-Instruct.Q4_1.gguf gemma-3-270m-q4_k_m.gguf; do
    if [ -f "$REAL_MODELS/$f" ]; then
      "$ENGINE" bench -m "$REAL_MODELS/$f" -p 64 -n 32 -r 3 -t "$THREADS"
    else
      echo "$f: not in $REAL_MODELS (tools/fetch_models.sh fetches it)"
    fi
  done
  if [ -f "$REAL_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
    echo "### SmolLM2 at a 4k context: a 4,092-token prompt, then 64 tokens, f32 vs f16 KV, two runs each"
    prompt=$(python3 -c "print(' '.join(['the cat sat on the mat.'] * 700))")
    for kv in f32 f16; do
      for i in 1 2; do
        echo "kv $kv:"
        "$ENGINE" run -m "$REAL_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" -t "$THREADS" --ctx 4200 --kv-type "$kv" \
            --temp 0 -n 64 --stats -p "$prompt" 2>&1 >/dev/null | tail -3
      done
    done
  fi
  echo
fi

if want kernels; then
  echo "## Kernel table: y = x W^T, W 4096 x 4096, 1 token (GB/s of weights) and 64 tokens (GFLOP/s)"
  for t in 1 2; do "$KBENCH" "$t" 4096 4096 best all 1,64; done
  echo
  echo "## Side by side with llama.cpp's test-backend-ops perf cases: W 4096 x 14336 (m=4096, k=14336), n = 1, 8, 512, 1 thread,"
  echo "## type by type, ours then theirs (test-backend-ops runs the CPU backend with hardware_concurrency / 2 threads: 1 here;"
  echo "## it reports the mean time per run, compare with our mean)"
  # n = 1 twice: rotating through 160 MB of weight copies (decode from memory), then with
  # STRATA_BENCH_HOT=1 one copy, as test-backend-ops reruns one weight buffer (part of which the
  # 32 MB L3 keeps for the smaller types): the like-for-like figure.
  for type in $WEIGHT_TYPES; do
    "$KBENCH" 1 4096 14336 best "$type" 1,8,512 | grep tokens=
    STRATA_BENCH_HOT=1 "$KBENCH" 1 4096 14336 best "$type" 1 | grep tokens= | sed 's/^/one copy: /'
    if [ -x "$LLAMA_BIN/test-backend-ops" ]; then
      ltype=${type/_k/_K}
      "$LLAMA_BIN/test-backend-ops" perf -b CPU -o MUL_MAT -p "type_a=$ltype,type_b=f32,m=4096,n=(1|8|512),k=14336,bs=\[1,1\]" |
          grep 'MUL_MAT(' | sed 's/,bs=.*pad=0)//'
    fi
  done
  [ -x "$LLAMA_BIN/test-backend-ops" ] || echo "no $LLAMA_BIN/test-backend-ops: llama.cpp side not measured"
  echo
  echo "## Float weights (gemm_float.h: tiles from 16 tokens, streamed rows to 4 (AVX2) / 8 (AVX-512) tokens, 3x4 dot tiles between): W 4096 x 14336,"
  echo "## n = 8, 64, 512, 1 and 2 threads"
  for t in 1 2; do "$KBENCH" "$t" 4096 14336 best f32,f16,bf16 8,64,512 | grep tokens=; done
  echo
fi

if want table; then
  # The issue's shapes: W 4096 x 4096 (9-67 MB: the L3 holds it, so both sides rerun one weight
  # buffer: STRATA_BENCH_HOT=1), 1 token (read as GB/s of weights) and 64 tokens (GFLOP/s), 1 and
  # 2 threads, mean ms per call on both sides. test-backend-ops has these cases and takes its
  # thread count from TBO_THREADS only after bench/llama_perf_cases.py edited its source. A one-token
  # call lasts 0.3-3.4 ms here and its mean moves with what the shared L3 keeps, so the table is
  # TABLE_ROUNDS rounds (default 3) of every cell, ours then theirs, and bench/kernel_table.py
  # gives each side's median of its round means.
  echo "## Kernel table side by side: W 4096 x 4096, n = 1 and 64, ours then llama.cpp ($LLAMA_BIN), type by type"
  have_cases=0
  if [ -x "$LLAMA_BIN/test-backend-ops" ]; then
    have_cases=$("$LLAMA_BIN/test-backend-ops" perf -b CPU -o MUL_MAT \
        -p "type_a=q8_0,type_b=f32,m=4096,n=1,k=4096,bs=\[1,1\]" | grep -c 'MUL_MAT(' || true)
  fi
  [ "$have_cases" -ge 1 ] || echo "no 4096 x 4096 cases in $LLAMA_BIN/test-backend-ops (bench/llama_perf_cases.py): llama.cpp side not measured"
  raw=$(mktemp)
  tbo_bin=""
  if [ "$have_cases" -ge 1 ]; then tbo_bin=$LLAMA_BIN; fi
  for round in $(seq "${TABLE_ROUNDS:-3}"); do
    for t in 1 2; do
      echo "### round $round, $t thread(s)"
      kernel_side_by_side best "$tbo_bin" 1,64 "$t" 4096
    done
  done | tee "$raw"
  echo
  python3 bench/kernel_table.py "$raw"
  rm -f "$raw"
  echo
fi

if want dots; then
  # The one-token dots alone, ours against llama.cpp's ggml_vec_dot_* from its libggml-cpu.so on the
  # same bytes (bench/dot_compare.cpp), 1 thread: W 256 x 4096 (in L2: the kernels' own speed) and
  # W 4096 x 4096 (in L3), then the AVX2 paths (STRATA_ISA=avx2) against the AVX2-only build's.
  echo "## One-token dots, ours then llama.cpp's, same bytes, 1 thread"
  for type in $WEIGHT_TYPES; do
    case $type in f32 | f16 | bf16) continue ;; esac
    for lib in "$LLAMA_BIN" "$LLAMA_AVX2_BIN"; do
      [ -f "$lib/libggml-cpu.so" ] || { echo "no $lib/libggml-cpu.so: skipped"; continue; }
      isa=best
      [ "$lib" = "$LLAMA_AVX2_BIN" ] && isa=avx2
      STRATA_ISA=$isa "$BUILD/bench/dot_compare" "$lib/libggml-cpu.so" "$type" 256 4096 5000
      STRATA_ISA=$isa "$BUILD/bench/dot_compare" "$lib/libggml-cpu.so" "$type" 4096 4096 500
    done
  done
  echo
fi

if want avx2; then
  # What an AVX2-only CPU (AMD Zen 2 / 3) runs, measured on any AVX2 machine: our kernels with the
  # AVX2 paths forced, beside a llama.cpp built for AVX2 only (LLAMA_AVX2_BIN: cmake with
  # -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON and every AVX-512 / AVX-VNNI / AMX
  # option OFF). One weight copy on both sides (STRATA_BENCH_HOT=1: test-backend-ops reruns one
  # buffer), 1 thread, W 4096 x 14336, n = 1, 8, 512, mean ms per call.
  echo "## AVX2 paths side by side: W 4096 x 14336, 1 thread, ours (avx2 forced) then llama.cpp's AVX2-only build"
  kernel_side_by_side avx2 "$LLAMA_AVX2_BIN" 1,8,512
  echo
fi

if want small; then
  # A batched decode step of 2-4 and 8 sequences: W 4096 x 14336, 1 thread, one weight copy on both
  # sides (STRATA_BENCH_HOT=1), mean ms per call; first the best ISA beside LLAMA_BIN, then the AVX2
  # paths forced beside the AVX2-only build (LLAMA_AVX2_BIN, as in the avx2 section).
  # SMALL_ROUNDS rounds (default 1) of the best-ISA side, summarized by bench/kernel_table.py.
  SMALL_NS=${SMALL_NS:-2,3,4,8}
  echo "## Batches of $SMALL_NS tokens: W 4096 x 14336, 1 thread, ours (best ISA) then llama.cpp ($LLAMA_BIN)"
  raw=$(mktemp)
  for round in $(seq "${SMALL_ROUNDS:-1}"); do
    echo "### round $round, 1 thread(s)"
    kernel_side_by_side best "$LLAMA_BIN" "$SMALL_NS"
  done | tee "$raw"
  echo
  python3 bench/kernel_table.py "$raw" --cols 14336
  rm -f "$raw"
  echo
  echo "## Batches of $SMALL_NS tokens: W 4096 x 14336, 1 thread, ours (avx2 forced) then llama.cpp's AVX2-only build"
  kernel_side_by_side avx2 "$LLAMA_AVX2_BIN" "$SMALL_NS"
  echo
fi

big=""
# 246M llama shape: dim 1024, 16 layers, 16 heads, 4 KV heads (head_dim 64), ffn 2816, vocab 32000:
# 245.9 M parameters; a 16k context so that the depth tests fit.
if want batched || want server || want depth; then big=$(CTX=16384 make_model "llama246m-q4_k_m" q4_k_m 1024 16 16 4 2816); fi
if want batched; then
  echo "## Batched decode: 246M Q4_K_M (dim 1024, 16 blocks, 16/4 heads, ffn 2816), $THREADS threads, 3 pairs"
  for i in 1 2 3; do
    "$ENGINE" bench -m "$big" -p 0 -n 32 -r 3 -t "$THREADS"
    "$ENGINE" bench -m "$big" -p 0 -n 32 -r 3 -t "$THREADS" --parallel 8
  done
  echo
fi
if want server; then
  echo "## Server: 8 concurrent streams on the 246M Q4_K_M model, $THREADS threads"
  python3 bench/serve_throughput.py "$big" --strata "$ENGINE" --llama "$LLAMA_BIN/llama-server" --threads "$THREADS" \
      --streams 8 --tokens 64 --rounds 3
fi

if want depth; then
  echo
  echo "## Decode attention alone (bench/attention_bench): the 246M model's shape (16 heads, 4 KV heads, head_dim 64),"
  echo "## 16 layers' caches, depths 1k/4k/8k, 1 and 2 threads; f16 then q8_0 KV"
  "$BUILD/bench/attention_bench" 1,2 1024,4096,8192 f16
  "$BUILD/bench/attention_bench" 1,2 4096 q8_0
  echo
  echo "## The same, AVX2 kernels then AVX-512 (skipped where the CPU has no AVX-512): one layer in cache"
  echo "## (depth 1024, 1 thread), 16 layers' caches, and 96 layers' (384 MiB: more than an L3 holds)"
  for isa in avx2 avx512; do
    "$BUILD/bench/attention_bench" 1 1024 f16 16 4 64 1 "$isa" || true
    "$BUILD/bench/attention_bench" 2 4096 f16 16 4 64 16 "$isa" || true
    "$BUILD/bench/attention_bench" 2 4096 q8_0 16 4 64 16 "$isa" || true
    "$BUILD/bench/attention_bench" 2 4096 f16 16 4 64 96 "$isa" || true
    "$BUILD/bench/attention_bench" 2 4096 q8_0 16 4 64 96 "$isa" || true
  done
  echo
  echo "## Attention at context depth (issue 18): 246M Q4_K_M, $THREADS threads, Strata then llama.cpp, back to back"
  # Prompt speed at depth 0, then decode after 0, 1k, 4k and 8k tokens in the cache.
  "$ENGINE" bench -m "$big" -t "$THREADS" -p 512,1024,4096 -n 0 -r 2 --no-bandwidth
  [ -x "$LLAMA_BIN/llama-bench" ] && "$LLAMA_BIN/llama-bench" -m "$big" -t "$THREADS" -p 512,1024,4096 -n 0 -r 2
  "$ENGINE" bench -m "$big" -t "$THREADS" -p 0 -n 32 -d 0,1024,4096,8192 -r 2 --no-bandwidth
  [ -x "$LLAMA_BIN/llama-bench" ] && "$LLAMA_BIN/llama-bench" -m "$big" -t "$THREADS" -p 0 -n 32 -d 0,1024,4096,8192 -r 2
  [ -x "$LLAMA_BIN/llama-bench" ] || echo "no $LLAMA_BIN/llama-bench: llama.cpp side not measured"
fi
