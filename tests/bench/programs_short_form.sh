#!/usr/bin/env bash
# The benchmark programs in short form: each runs on a few small tiles and prints its
# figures in the shape docs/benchmarks.md quotes, with the counts it was given. Their
# long runs are by hand (bench/run-cpu-benchmarks); this keeps them running.
# Usage: programs_short_form.sh BIN_DIR
set -euo pipefail
bin=${1:?usage: programs_short_form.sh BIN_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Sets `ratio` to the number after "= " on the line starting with PREFIX, and fails
# unless it is in (0, 1.5]. Called in this shell, not in $(...), so its failures count.
ratio=""
check_ratio() {
  local prefix=$1 file=$2
  ratio=$(grep "^$prefix" "$file" | sed -n 's/.* = \([0-9.]*\).*/\1/p' | tail -1)
  if [[ -z $ratio ]]; then
    fail "no '$prefix ... = RATIO' line in $(basename "$file")"
  elif ! awk -v r="$ratio" 'BEGIN { exit !(r > 0 && r <= 1.5) }'; then
    fail "$(basename "$file"): ratio $ratio outside (0, 1.5]"
  fi
}

# The simulated GPU: raw 8-bit tiles and float32 ones. Three slots and a device slower
# than the readers keep more than one batch in flight, which the report says.
for kind in uint8 float; do
  out=$work/fake-device-$kind.txt
  flag=()
  [[ $kind == float ]] && flag=(--float)
  if ! "$bin/mgpr-bench-fake-device" --tiles 64 --batch 8 --tile-size 64 --rounds 2 --compute-ms 5 \
    "${flag[@]}" >"$out" 2>&1; then
    fail "mgpr-bench-fake-device ($kind) exited non-zero"
    cat "$out" >&2
    continue
  fi
  check_ratio "simulated device:" "$out"
  echo "fake device, $kind tiles: ${ratio:-none}"
  [[ $(grep -c '^round [0-9]*: device-only' "$out") -eq 2 ]] || fail "fake device ($kind): not 2 rounds"
  grep -q "tile 3x64x64 $([[ $kind == float ]] && echo float32 || echo uint8)" "$out" ||
    fail "fake device ($kind): the settings line does not name the tiles"
  most=$(sed -n 's/.*at most \([0-9]*\) batches in flight.*/\1/p' "$out" | sort -n | tail -1)
  [[ ${most:-0} -ge 2 ]] || fail "fake device ($kind): at most ${most:-no} batch(es) in flight, not 2 or more"
done

# The pipeline against its model-only rate, on fake tiles (no GDAL needed) and a small
# TorchScript classifier made slow enough (--slow) for its forward pass to be most of a batch.
"$bin/mgpr-test-model" tile-mean "$work/tile-mean.pt" --slow 20 >/dev/null
out=$work/pipeline.txt
if "$bin/mgpr-bench-pipeline" use_fake_data=true dummy_dataset_count=64 model="$work/tile-mean.pt" \
  tile_size=64 batch_size=8 workers=2 threads=1 --rounds 2 --repeats 1 >"$out" 2>&1; then
  check_ratio "mgpr end-to-end / model-only" "$out"
  echo "pipeline: ${ratio:-none}"
  grep -q "64 tiles a measure" "$out" || fail "mgpr-bench-pipeline: not 64 tiles a measure"
  [[ $(grep -c '^round [0-9]*: model-only 64 tiles' "$out") -eq 2 ]] || fail "mgpr-bench-pipeline: not 2 rounds of 64 tiles"
else
  fail "mgpr-bench-pipeline exited non-zero"
  cat "$out" >&2
fi

# The crop classifier of task=detect against the classifier alone: 2 tiles of 64 px with
# 10 boxes each, crops of 16 px, 2 rounds.
"$bin/mgpr-test-model" last-band "$work/last-band.pt" >/dev/null
out=$work/crops.txt
if "$bin/mgpr-bench-crops" "$work/last-band.pt" --input-size 16 --tiles 2 --tile 64 --boxes 10 --box-min 4 \
  --box-max 20 --rounds 2 --repeats 1 >"$out" 2>&1; then
  check_ratio "mgpr crops end to end / model-only" "$out"
  echo "crops: ${ratio:-none}"
  [[ $(grep -c '^round [0-9]*: end to end .* (20 crops)' "$out") -eq 2 ]] || fail "mgpr-bench-crops: not 2 rounds of 20 crops"
else
  fail "mgpr-bench-crops exited non-zero"
  cat "$out" >&2
fi

# The run's store under 4 ranks at 300 tiles/s, without models, a cluster's round trip
# added: every tile done once, the figures the docs quote, and a request a tile at most
# (leases and batched mail).
out=$work/store.txt
if "$bin/mgpr-bench-store" --ranks 4 --tiles-per-s 300 --tiles 600 --batch 4 --round-trip-us 50 >"$out" 2>&1; then
  grep -Eq "^ranks 4, target 300 tiles/s, batch 4, 12 boxes a tile, round trip \+50 us: 600 tiles in [0-9.]+ s" "$out" ||
    fail "mgpr-bench-store: not 600 tiles done"
  per_tile=$(sed -n 's/^store: [0-9]* requests, \([0-9.]*\) a tile.*/\1/p' "$out")
  if [[ -z $per_tile ]] || ! awk -v r="$per_tile" 'BEGIN { exit !(r > 0 && r <= 1) }'; then
    fail "mgpr-bench-store: ${per_tile:-no} requests a tile, not in (0, 1]"
  fi
  grep -q '"p99_us"' "$out" || fail "mgpr-bench-store: no JSON line"
  echo "store: $per_tile requests a tile"
else
  fail "mgpr-bench-store exited non-zero"
  cat "$out" >&2
fi

# The read path: a 512² GeoTIFF in 128² tiles is 16 tiles for each worker count.
if [[ -x $bin/mgpr-bench-read && -x $bin/mgpr-test-image ]]; then
  "$bin/mgpr-test-image" --size 512 "$work/image.tif" >/dev/null
  out=$work/read.txt
  if "$bin/mgpr-bench-read" "$work/image.tif" --tile-size 128 --workers 1 2 --passes 1 >"$out" 2>&1; then
    for workers in 1 2; do
      grep -Eq "^workers=$workers tiles=16 seconds=[0-9.]+ tiles_per_s=[0-9.]+" "$out" ||
        fail "mgpr-bench-read: no line of 16 tiles for $workers worker(s)"
    done
    echo "read path: $(grep -c '^workers=' "$out") worker counts measured"
  else
    fail "mgpr-bench-read exited non-zero"
    cat "$out" >&2
  fi
else
  echo "read path: not measured: this build has no GDAL (mgpr-bench-read)"
fi

[[ $failures -eq 0 ]] || exit 1
echo "the benchmark programs ran in short form"
