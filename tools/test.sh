#!/usr/bin/env bash
# tools/test.sh — set up, build (Release) and run the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@"
