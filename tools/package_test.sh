#!/usr/bin/env bash
# tools/package_test.sh BUILD_DIR — builds the Debian packages from a built tree (cpack -G DEB),
# checks their file lists and Depends, validates their metadata (desktop-file-validate,
# appstreamcli, lintian: errors fail, warnings are printed), then unpacks strata into a scratch root
# with dpkg -x and runs strata-engine --version and strata --version from there. In a build with
# CUDA, strata-cuda too: strata names nothing of NVIDIA's and its strata-engine links no CUDA
# library; strata-engine run from strata alone says the CUDA module is not installed, and once
# strata-cuda is unpacked beside it, loads it. CTest runs it as packaging_deb.
set -euo pipefail
build=$(cd "${1:?usage: package_test.sh BUILD_DIR}" && pwd)
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
app_id=$(sed -n 's/^STRATA_APP_ID:STRING=//p' "$build/CMakeCache.txt")
[ -n "$version" ] && [ -n "$app_id" ] || { echo "package_test: no project version or STRATA_APP_ID in $build" >&2; exit 1; }
for tool in cpack dpkg-deb desktop-file-validate appstreamcli lintian; do
  command -v "$tool" >/dev/null || { echo "package_test: $tool is missing (tools/setup.sh installs it)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/strata-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "package_test: FAIL: $*" >&2; exit 1; }

# 1. The package.
(cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; fail "cpack"; }
deb=$(ls "$work"/out/strata_"$version"_*.deb 2>/dev/null | head -n 1)
[ -f "$deb" ] || { cat "$work/cpack.log" >&2; fail "no strata_${version}_*.deb"; }
echo "package_test: built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

# 2. Its files: these must be there, and nothing from the build or the tests may be.
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$work/files"
expected=(/usr/bin/strata /usr/bin/strata-engine
          "/usr/share/applications/$app_id.desktop" "/usr/share/metainfo/$app_id.metainfo.xml"
          /usr/share/icons/hicolor/scalable/apps/strata.svg /usr/share/doc/strata/copyright
          /usr/share/doc/strata/changelog.gz /usr/share/doc/strata/README.md /usr/share/doc/strata/api.md)
for size in 16 24 32 48 64 128 256 512; do expected+=("/usr/share/icons/hicolor/${size}x${size}/apps/strata.png"); done
for f in "${expected[@]}"; do grep -qxF "$f" "$work/files" || fail "$f is not in the package"; done
if grep -E '^/usr/(include|lib)/|/test_|_bench$|\.a$' "$work/files"; then fail "build or test files in the package (above)"; fi
depends=$(dpkg-deb -f "$deb" Depends)
for p in libqt6core6 libqt6widgets6 libqt6sql6-sqlite libqcustomplot2.1-qt6 libcpp-httplib0.11 libc6; do
  grep -qE "(^|, )$p( |,|$)" <<<"$depends" || fail "Depends lacks $p: $depends"
done
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "package version $(dpkg-deb -f "$deb" Version), project $version"
echo "package_test: $(wc -l <"$work/files") entries; Depends: $depends"

# 3. Metadata.
root="$work/root"
dpkg-deb -x "$deb" "$root"
desktop-file-validate "$root/usr/share/applications/$app_id.desktop" || fail "desktop-file-validate"
appstreamcli validate --no-net "$root/usr/share/metainfo/$app_id.metainfo.xml" || fail "appstreamcli validate"
# lintian: E: fails; W: and I: are printed (the ones left are listed in README's packaging section).
lintian --fail-on error --tag-display-limit 0 "$deb" | tee "$work/lintian.log" || fail "lintian reported errors"
echo "package_test: lintian: $(grep -c '^E:' "$work/lintian.log" || true) errors, $(grep -c '^W:' "$work/lintian.log" || true) warnings"

# 4. Run from the scratch root (dpkg -x, no install): the version the project says.
got=$("$root/usr/bin/strata-engine" --version) || fail "strata-engine --version exited $?"
[ "$got" = "strata-engine $version" ] || fail "strata-engine --version: '$got'"
got=$("$root/usr/bin/strata" --version) || fail "strata --version exited $?"
[ "$got" = "strata $version" ] || fail "strata --version: '$got'"
echo "package_test: strata-engine and strata $version run from the unpacked package"

# 5. The CUDA module's package, in a build that makes it.
if grep -q '^STRATA_CUDA_PACKAGE_DEPENDS:INTERNAL=' "$build/CMakeCache.txt"; then
  cuda_deb=$(ls "$work"/out/strata-cuda_"$version"_*.deb 2>/dev/null | head -n 1)
  [ -f "$cuda_deb" ] || fail "no strata-cuda_${version}_*.deb"
  dpkg-deb -c "$cuda_deb" | awk '{print $6}' | sed 's|^\./|/|' >"$work/cuda-files"
  grep -qE '^/usr/lib/([^/]+/)?strata/libstrata-backend-cuda\.so$' "$work/cuda-files" || fail "strata-cuda lacks the module"
  grep -qxF /usr/share/doc/strata-cuda/copyright "$work/cuda-files" || fail "strata-cuda lacks its copyright file"
  if grep -E '/bin/|\.a$' "$work/cuda-files"; then fail "strata-cuda holds more than the module (above)"; fi
  cuda_depends=$(dpkg-deb -f "$cuda_deb" Depends)
  for p in "strata (= $version)" cuda-cudart- libcublas- libnccl2; do
    grep -qF "$p" <<<"$cuda_depends" || fail "strata-cuda's Depends lacks $p: $cuda_depends"
  done
  if grep -qiE 'cuda|cublas|nccl' <<<"$depends"; then fail "strata depends on NVIDIA's packages: $depends"; fi
  if ldd "$root/usr/bin/strata-engine" | grep -iE 'cudart|cublas|nccl'; then fail "strata-engine links CUDA (above)"; fi
  lintian --fail-on error --tag-display-limit 0 "$cuda_deb" | tee "$work/lintian-cuda.log" || fail "lintian reported errors on strata-cuda"
  without=$("$root/usr/bin/strata-engine" devices) || fail "strata-engine devices exited $? without the module"
  grep -q '^CUDA: CUDA module not installed' <<<"$without" || fail "without strata-cuda, devices says: $without"
  dpkg-deb -x "$cuda_deb" "$root"
  with=$("$root/usr/bin/strata-engine" devices) || fail "strata-engine devices exited $? with the module"
  grep -q '^CUDA: ' <<<"$with" || fail "with strata-cuda, devices says: $with"
  if grep -qE '^CUDA: CUDA module (not installed|did not load|.*another build)' <<<"$with"; then
    fail "with strata-cuda unpacked, the module is not used: $(grep '^CUDA: ' <<<"$with")"
  fi
  echo "package_test: strata-cuda: $(wc -l <"$work/cuda-files") entries; Depends: $cuda_depends"
  echo "package_test: without it: $(grep '^CUDA: ' <<<"$without")"
  echo "package_test: with it:    $(grep '^CUDA: ' <<<"$with")"
fi
