#!/usr/bin/env bash
# tools/sanitize.sh [BUILD_DIR] — the engine and server tests under AddressSanitizer and
# UndefinedBehaviorSanitizer: a second build tree (default build-asan; no GUI, no CUDA, -O1 -g1: line tables for the reports, a quarter less compile time than -g),
# the test executables of tests/engine/ and tests/serve/ plus strata-engine (which the serve tests
# start, so the server runs sanitized too). Any report fails the run (halt_on_error). CI runs it
# from tools/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
jobs=${JOBS:-$(nproc)}
flags="-O1 -g1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSTRATA_GUI=OFF -DSTRATA_CUDA=OFF -DSTRATA_SERVER=ON \
      -DSTRATA_TESTS=ON -DCMAKE_CXX_FLAGS_DEBUG="$flags" -DCMAKE_C_FLAGS_DEBUG="$flags" \
      -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
mapfile -t tests < <(find tests/engine tests/serve -name 'test_*.cpp' -printf '%f\n' | sed 's/\.cpp$//' | sort)
cmake --build "$build" -j "$jobs" --target strata-engine "${tests[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
logs="$build/sanitize-logs"
rm -rf "$logs" && mkdir -p "$logs"
# One executable per process, $jobs at a time; a test executable that fails prints its log.
printf '%s\n' "${tests[@]}" | xargs -P "$jobs" -I{} sh -c \
  '"$0/tests/{}" --gtest_brief=1 >"$1/{}.log" 2>&1 && echo "sanitize: {} ok" || { echo "sanitize: {} FAILED"; cat "$1/{}.log"; exit 1; }' \
  "$build" "$logs"
echo "sanitize: ${#tests[@]} engine and serve test executables pass under ASan + UBSan"
