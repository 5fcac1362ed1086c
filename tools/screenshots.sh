#!/usr/bin/env bash
# tools/screenshots.sh — starts the Strata GUI under Xvfb with simulated GPUs and stories260K, lets it
# drive itself (--screenshot-script: split placement, one reply, grabs) and saves docs/images/*.png;
# then once more with devices too small for the model (too-small-devices.png: the explanation shown).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
APP=${STRATA_APP:-$BUILD_DIR/strata}
ENGINE=${STRATA_ENGINE:-$BUILD_DIR/app/strata-engine}
MODEL=${MODEL:-../shared/models/stories260K.gguf}
DEVICES=${DEVICES:-cpu,sim:gpu0:24GiB:bw=1008GB/s:tflops=82,sim:gpu1:12GiB:bw=360GB/s:tflops=25}
SMALL_DEVICES=${SMALL_DEVICES:-sim:gpu0:64KiB,sim:gpu1:64KiB}
PROMPT=${PROMPT:-Once upon a time}
OUT=${OUT:-docs/images}

for f in "$APP" "$ENGINE"; do
  [ -x "$f" ] || { echo "screenshots: $f is missing; build first (cmake --build $BUILD_DIR)" >&2; exit 1; }
done
[ -f "$MODEL" ] || { echo "screenshots: model $MODEL not found" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "screenshots: xvfb-run is missing (apt-get install xvfb xauth)" >&2; exit 1; }

# A throw-away home for settings and the conversation database: the user's stay untouched.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$OUT"
XDG_CONFIG_HOME="$scratch/config" XDG_DATA_HOME="$scratch/data" XDG_RUNTIME_DIR="$scratch" \
  timeout 300 xvfb-run -a -s '-screen 0 1600x1000x24' \
  "$APP" --no-settings --data-dir "$scratch" --engine "$ENGINE" --model "$MODEL" --devices "$DEVICES" \
         --ctx 512 --screenshot-script "$OUT" --prompt "$PROMPT"
rm -rf "$scratch"/config "$scratch"/data "$scratch"/strata.sqlite3*
XDG_CONFIG_HOME="$scratch/config" XDG_DATA_HOME="$scratch/data" XDG_RUNTIME_DIR="$scratch" \
  timeout 300 xvfb-run -a -s '-screen 0 1600x1000x24' \
  "$APP" --no-settings --data-dir "$scratch" --engine "$ENGINE" --model "$MODEL" --devices "$SMALL_DEVICES" \
         --ctx 512 --screenshot-script "$OUT" --prompt "$PROMPT"
ls -l "$OUT"/chat.png "$OUT"/placement.png "$OUT"/profiler.png "$OUT"/too-small-devices.png
