#!/usr/bin/env bash
# tools/run.sh — set up, build (Release) and start Strata: the terminal chat of strata-engine on
# the model given (--model FILE.gguf), else the last one used, else one found on this machine,
# else ../shared/models/stories260K.gguf. Extra arguments go to `strata-engine chat`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh >&2
exec build/app/strata-engine chat "$@"
