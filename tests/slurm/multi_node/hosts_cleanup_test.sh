#!/usr/bin/env bash
# local-slurm start DIR --nodes 3, then stop, leaves no namespace, link, mount, cgroup or
# process behind: after a clean run, and after daemons were killed with SIGKILL and a
# stray process was left on a host. stop is idempotent. A second cluster (OTHER, the
# multi-node test cluster) runs beside it on its own bridge and subnet and survives it.
#
#   hosts_cleanup_test.sh LOCAL_SLURM DIR OTHER_DIR
set -u
local_slurm=$1 dir=$2 other=$3
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

constrain=()
[ -f /sys/fs/cgroup/devices/devices.allow ] && constrain=(--constrain-devices)

# Namespace inodes of DIR's nodes, to find their processes after the names are gone.
netns_inodes() {
  local f
  for f in /run/netns/*; do
    [ -e "$f" ] || continue
    grep -qx "$(basename "$f")" <<<"$1" && stat -L -c %i "$f"
  done
}

check_nothing_left() {
  local what=$1 names=$2 links=$3 inodes=$4 pid ino name link
  for name in $names; do
    ip netns list | awk '{print $1}' | grep -qx "$name" && fail "$what: namespace $name left"
    grep -q " /run/netns/$name " /proc/self/mountinfo && fail "$what: mount /run/netns/$name left"
  done
  for link in $links; do ip link show "$link" >/dev/null 2>&1 && fail "$what: link $link left"; done
  for ino in $inodes; do
    for pid in /proc/[0-9]*; do
      [ "$(stat -L -c %i "$pid/ns/net" 2>/dev/null)" = "$ino" ] &&
        fail "$what: process ${pid#/proc/} ($(cat "$pid/comm" 2>/dev/null)) left in a node's network"
    done
  done
  for name in $names; do
    compgen -G "/sys/fs/cgroup/*/$name" >/dev/null && fail "$what: cgroup $(compgen -G "/sys/fs/cgroup/*/$name") left"
  done
  for f in "$dir"/run/*.pid; do [ -e "$f" ] && fail "$what: pid file $f left"; done
  "$local_slurm" status "$other" >/dev/null || fail "$what: the other cluster ($other) was disturbed"
}

# One round: start, let COMMAND disturb it, stop, check; then stop once more.
round() {
  local what=$1 disturb=$2 links_before names links inodes other_bridge bridge
  links_before=$(ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | sort)
  ns_before=$(ip netns list | awk '{print $1}' | sort)
  "$local_slurm" start "$dir" --nodes 3 --gpus a100:1 "${constrain[@]}" || { fail "$what: start failed"; return; }
  names=$(comm -13 <(echo "$ns_before") <(ip netns list | awk '{print $1}' | sort))
  links=$(comm -13 <(echo "$links_before") <(ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | sort))
  inodes=$(netns_inodes "$names")
  [ "$(wc -w <<<"$names")" = 3 ] || fail "$what: expected 3 node namespaces, got: $names"
  [ "$(wc -w <<<"$links")" = 4 ] || fail "$what: expected a bridge and 3 veth links, got: $links"
  bridge=$(sed -n 's/.*BRIDGE=\(\S*\).*/\1/p' "$dir/run/net.env")
  other_bridge=$(sed -n 's/.*BRIDGE=\(\S*\).*/\1/p' "$other/run/net.env")
  if [ -z "$bridge" ] || [ "$bridge" = "$other_bridge" ]; then
    fail "$what: bridge '$bridge' vs the other's '$other_bridge'"
  fi
  [ "$(sed -n 's/SUBNET=\(\S*\).*/\1/p' "$dir/run/net.env")" != "$(sed -n 's/SUBNET=\(\S*\).*/\1/p' "$other/run/net.env")" ] ||
    fail "$what: both clusters on one subnet"
  [ "$("$local_slurm" exec "$dir" node3 hostname)" = node3 ] || fail "$what: node3 is not its own host"
  eval "$disturb"
  "$local_slurm" stop "$dir" || fail "$what: stop failed"
  check_nothing_left "$what" "$names" "$links" "$inodes"
  "$local_slurm" stop "$dir" || fail "$what: a second stop failed"
  echo "$what: namespaces (${names//$'\n'/ }), links (${links//$'\n'/ }) and processes all gone"
}

round "clean stop" ":"
# A daemon killed outright, and a process on a node that no job owns.
# shellcheck disable=SC2016  # expanded when round evaluates it
round "after kill -9" '
  setsid "$local_slurm" exec "$dir" node3 sleep 600 </dev/null >/dev/null 2>&1 &
  sleep 0.5
  kill -KILL "$(cat "$dir/run/slurmd-node2.pid")" "$(cat "$dir/run/slurmctld.pid")"'

[ $failures = 0 ] && echo "nothing left behind"
exit $((failures > 0))
