#!/usr/bin/env bash
# tools/third_party.sh — fills a folder with what a build needs beyond a compiler, CMake and the
# CUDA toolkit, taken from this (Debian) machine's packages, to carry to a machine that has no
# packages and no network (the GPU machine, see tools/GPU.md):
#   DIR/include/CLI/        CLI11 headers            (libcli11-dev:       /usr/include/CLI)
#   DIR/include/nlohmann/   nlohmann-json headers    (nlohmann-json3-dev: /usr/include/nlohmann)
#   DIR/googletest/         GoogleTest sources       (googletest:         /usr/src/googletest)
#   DIR/models/             the shared test models the GPU tests and the bench read
#                           (stories260K.gguf + golden, llama-2-tiny-random.gguf for its vocabulary)
# Usage: tools/third_party.sh [DIR]   (default: third_party/ in the checkout, which git ignores)
# Then:  tools/gpu-check.sh DIR
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$ROOT/third_party}
MODELS=${STRATA_SHARED_MODELS_DIR:-$ROOT/../shared/models}

need() {
  if [ ! -e "$1" ]; then
    echo "third_party: $1 is missing; on Debian: apt-get install -y --no-install-recommends $2" >&2
    exit 1
  fi
}
need /usr/include/CLI/CLI.hpp libcli11-dev
need /usr/include/nlohmann/json.hpp nlohmann-json3-dev
need /usr/src/googletest/CMakeLists.txt googletest

mkdir -p "$DIR/include" "$DIR/models"
rm -rf "$DIR/include/CLI" "$DIR/include/nlohmann" "$DIR/googletest"
# Copies are made writable, so that running this again replaces them.
cp -r /usr/include/CLI "$DIR/include/CLI"
cp -r /usr/include/nlohmann "$DIR/include/nlohmann"
# googletest/ of the source package holds googletest/ and googlemock/ plus the top CMakeLists.txt.
cp -r /usr/src/googletest "$DIR/googletest"
chmod -R u+w "$DIR/include" "$DIR/googletest"

copied=()
for f in stories260K.gguf stories260K.golden.json llama-2-tiny-random.gguf; do
  if [ -f "$MODELS/$f" ]; then
    install -m 0644 "$MODELS/$f" "$DIR/models/$f"
    copied+=("$f")
  else
    echo "third_party: $MODELS/$f not found; the GPU tests that need it will skip" >&2
  fi
done

echo "third_party: filled $DIR ($(du -sh "$DIR" | cut -f1)): include/CLI include/nlohmann googletest models/{${copied[*]:-}}"
