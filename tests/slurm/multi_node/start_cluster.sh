#!/usr/bin/env bash
# Starts the multi-node test cluster: eight hosts with two GPUs each (most tests use the
# first two; the scale test all of them), device cgroups where the machine has the
# cgroup v1 devices controller (the devices test says when not).
set -eu
local_slurm=$1 dir=$2 plugin=$3
constrain=()
if [ -f /sys/fs/cgroup/devices/devices.allow ]; then
  constrain=(--constrain-devices)
else
  echo "no cgroup v1 devices controller at /sys/fs/cgroup/devices: starting without --constrain-devices"
fi
exec "$local_slurm" start "$dir" --nodes 8 --gpus a100:2 "${constrain[@]}" --plugin "$plugin"
