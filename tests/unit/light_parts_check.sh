#!/usr/bin/env bash
# The plugin and the launcher run on login nodes and inside slurmstepd: they must not
# load LibTorch or GDAL, and the plugin must export only Slurm's entry points.
set -u
plugin=$1; shift
status=0
exports=$(nm -D --defined-only "$plugin" | awk '{print $3}')
unexpected=$(echo "$exports" | grep -v -E '^(slurm_spank_|plugin_)' || true)
if [ -n "$unexpected" ]; then
  echo "FAIL: $plugin exports symbols other than slurm_spank_*/plugin_*:"; echo "$unexpected" | head -20
  status=1
fi
echo "$exports" | grep -q '^slurm_spank_init$' || { echo "FAIL: $plugin does not export slurm_spank_init"; status=1; }
for binary in "$plugin" "$@"; do
  heavy=$(ldd "$binary" | grep -E 'libtorch|libc10|libgdal' || true)
  if [ -n "$heavy" ]; then echo "FAIL: $binary links $heavy"; status=1; fi
done
[ $status = 0 ] && echo "ok: plugin exports $(wc -w <<<"$exports") Slurm symbols; no LibTorch/GDAL in $plugin $*"
exit $status
