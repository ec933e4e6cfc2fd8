#!/usr/bin/env bash
# cpack in a build whose LibTorch is not Debian's system package (the default build's
# PyTorch wheel, build-torch2's CUDA wheel) refuses, naming what is wrong and both fixes
# (build-debian for the Debian packages, scripts/bundle for this build's runtime), and
# writes no package: with DEB, the packages' generator, and with TGZ, which would carry
# the same run paths into the build machine's folders.
#
#   cpack_refusal_test.sh BUILD_DIR LIBTORCH_FROM_DEBIAN WORK_DIR
# LIBTORCH_FROM_DEBIAN (ON/OFF, from packaging/debian.cmake): ON skips, as cpack is meant
# to work there (tests/package/package_test.sh builds and installs those packages).
set -euo pipefail
build=$(cd "$1" && pwd) from_debian=$2 work=$3
if [[ $from_debian == ON ]]; then
  echo "skipped: this build links Debian's LibTorch, which its packages depend on; package_test.sh packages it"
  exit 77
fi
command -v cpack >/dev/null || { echo "skipped: no cpack here"; exit 77; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
rm -rf "$work" && mkdir -p "$work"
for generator in DEB TGZ; do
  echo "== cpack -G $generator"
  status=0
  (cd "$build" && cpack -G "$generator" -B "$work/$generator") >"$work/$generator.log" 2>&1 || status=$?
  cat "$work/$generator.log"
  [[ $status != 0 ]] || fail "cpack -G $generator succeeded in a build whose LibTorch is not Debian's"
  # CMake wraps the message's first paragraph: compare with its whitespace squeezed.
  message=$(tr -s ' \n' ' ' <"$work/$generator.log")
  for expected in "cpack refuses to package this build" "which is not Debian's system package" \
                  "MGPR_LIBTORCH=debian scripts/build" "cd build-debian && cpack -G DEB" "scripts/bundle $build"; do
    [[ $message == *"$expected"* ]] || fail "cpack -G $generator's message lacks: $expected"
  done
  packages=$(find "$work/$generator" "$build" -maxdepth 1 \( -name '*.deb' -o -name '*.tar.gz' \) -newer "$work" 2>/dev/null || true)
  [[ -z $packages ]] || fail "cpack -G $generator left packages: $packages"
done
[[ $failures == 0 ]] && echo "cpack refused with DEB and TGZ, saying why and what to run, and wrote no package"
exit $((failures > 0))
