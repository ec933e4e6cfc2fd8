#!/usr/bin/env bash
# Stops the test cluster and fails if any daemon it started is still alive.
set -u
local_slurm=$1 dir=$2
pids=()
for file in "$dir"/run/*.pid; do [ -f "$file" ] && pids+=("$(cat "$file")"); done
"$local_slurm" stop "$dir" || { echo "local-slurm stop failed"; exit 1; }
alive=0
for pid in "${pids[@]}"; do
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
  if [ -n "$state" ] && [ "$state" != Z ]; then
    echo "daemon pid $pid ($(tr '\0' ' ' < "/proc/$pid/cmdline")) still running after stop"
    alive=1
  fi
done
[ ${#pids[@]} -gt 0 ] || { echo "no daemon pid files under $dir/run: was the cluster started?"; exit 1; }
[ $alive = 0 ] && echo "stopped ${#pids[@]} daemons; none left running"
exit $alive
