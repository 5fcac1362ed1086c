#!/usr/bin/env bash
# tools/run.sh — set up, build (Release) and start Strata: the Qt workstation when it was built
# and a display is there, else the terminal chat of strata-engine. The model: --model FILE.gguf,
# else the last one used, else one found on this machine (LM Studio, Hugging Face, llama.cpp
# caches), else ../shared/models/stories260K.gguf. Extra arguments go to the program.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh >&2
if [ -x build/strata ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; }; then
  exec build/strata --engine build/app/strata-engine "$@"
fi
echo "run: no display (or no GUI build): starting the terminal chat" >&2
exec build/app/strata-engine chat "$@"
