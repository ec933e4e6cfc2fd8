#!/usr/bin/env bash
# bench/scale in short form: 4 rasters of 1024² and one 4096² mosaic, two CPU ranks. The
# many-rasters boxes are known (a 1024² raster holds 32 x 32 of the grid detector's cells,
# each found once after the overlaps' duplicates are merged); every figure must be there.
# Usage: scale_short_form.sh BIN_DIR
set -euo pipefail
bin=${1:?usage: scale_short_form.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

COUNTS=4 GRIDS=16 MOSAIC=4096 MOSAIC_GRIDS=4 SIDE=1024 MGPR_BINS=$bin OUT=$work \
  "$here/../../bench/scale" >"$work/stdout"
cat "$work/stdout"
# build form rasters grid round tiles boxes loop_s tail_s wall_s rss_mib
awk '
  /^#/ || /^results:/ { next }
  { rows++ }
  $2 == "rasters" && ($6 != 36 || $7 != 4096) { print "FAIL: 4 rasters: " $6 " tiles, " $7 " boxes; want 36 and 4096"; bad = 1 }
  $2 == "mosaic" && ($6 != 81 || $7 <= 0) { print "FAIL: the mosaic: " $6 " tiles, " $7 " boxes; want 81 and some"; bad = 1 }
  NF != 11 || $8 <= 0 || $9 < 0 || $10 < $8 || $11 !~ /^[1-9][0-9]*,[1-9][0-9]*$/ { print "FAIL: figures missing: " $0; bad = 1 }
  END { if (rows != 2) { print "FAIL: " rows + 0 " runs, want 2"; bad = 1 } exit bad }
' "$work/stdout"
