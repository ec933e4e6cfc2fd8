#!/usr/bin/env bash
# local-slurm on one host, start to stop: start in DIR, sinfo, job steps (srun hostname,
# the GPUs a step is given), status, a second start that leaves the running cluster
# alone; then stop with a batch job still running: it is cancelled, no process of the
# cluster is left, status says so, a second stop does nothing, and nothing was written
# outside DIR. DIR is removed at the end. Skipped (77) without root or Slurm's daemons.
#
#   cluster_test.sh LOCAL_SLURM DIR
set -u
local_slurm=$1 dir=$2
if [ "$(id -u)" != 0 ]; then
  echo "skipped: the local cluster runs its daemons as root"
  exit 77
fi
for daemon in munged slurmctld slurmd; do
  command -v "$daemon" >/dev/null || {
    echo "skipped: no $daemon (scripts/install-deps installs Slurm and munge)"
    exit 77
  }
done
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
host=$(hostname -s)
conf=$dir/etc/slurm.conf
# SLURM_CONF is given to each Slurm command alone: exported, it would be in this
# script's environment, and the process check below would find this script.
slurm() { SLURM_CONF=$conf "$@"; }

# Live processes (not zombies: daemons may linger so under this machine's init) whose
# command line or environment names DIR: the daemons (their -f, --socket), slurmstepd
# and a job's processes (SLURM_CONF). Prints PID NAME.
processes_of_cluster() {
  local proc pid state
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    if [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ]; then continue; fi
    state=$(awk '{print $3}' "$proc/stat" 2>/dev/null) || continue
    if [ -z "$state" ] || [ "$state" = Z ]; then continue; fi
    if grep -qF -- "$dir/" "$proc/cmdline" 2>/dev/null || grep -qF -- "=$dir/" "$proc/environ" 2>/dev/null; then
      echo "$pid $(cat "$proc/comm" 2>/dev/null)"
    fi
  done
}

# Where Slurm and munge write when not told otherwise, and this machine's /etc/hosts
# (which the namespaced nodes see replaced): none may change. In /tmp only the names
# Slurm's and munge's files would have are looked at, since other tests may write there
# meanwhile; the start lock (local-slurm.lock) is the one file local-slurm keeps outside DIR.
outside_dir() {
  find /etc/hosts /etc/slurm /etc/munge /var/spool/slurm* /var/lib/slurm* /var/log/slurm* /run/slurm* \
    /var/run/slurm* /run/munge /var/lib/munge /var/log/munge /dev/shm -newer "$1" 2>/dev/null
  find /tmp -maxdepth 1 -newer "$1" \( -iname '*slurm*' -o -iname '*munge*' \) ! -name local-slurm.lock \
    ! -path "$dir" 2>/dev/null
}

# Leftovers of an earlier run that failed before its own stop.
"$local_slurm" stop "$dir" >/dev/null 2>&1
rm -rf "$dir"
# A failed check below must not leave the cluster running.
trap '"$local_slurm" stop "$dir" >/dev/null 2>&1' EXIT
before=$(mktemp)

if ! "$local_slurm" start "$dir" --gpus a100:2 --cpus 4; then
  echo "FAIL: start failed"
  exit 1
fi
[ "$("$local_slurm" env "$dir")" = "export SLURM_CONF=$conf" ] || fail "env prints $("$local_slurm" env "$dir")"

status=$("$local_slurm" status "$dir") || fail "status of the started cluster fails: $status"
for line in "munged: running" "slurmctld: running" "slurmd on $host: running" "node $host: IDLE"; do
  grep -q "^$line" <<<"$status" || fail "status has no '$line': $status"
done

# One node, up, with the CPUs and GPUs start was given.
sinfo=$(slurm sinfo -h -o '%P %a %D %t %N %c %G')
[ "$sinfo" = "debug* up 1 idle $host 4 gpu:a100:2" ] || fail "sinfo: '$sinfo'"
step=$(slurm srun -N1 -n1 hostname) || fail "srun hostname failed"
[ "$step" = "$(hostname)" ] || fail "srun hostname printed '$step', not '$(hostname)'"
gpus=$(slurm srun -n1 --gpus=2 printenv CUDA_VISIBLE_DEVICES) || fail "srun --gpus=2 failed"
[ "$gpus" = "0,1" ] || fail "a step given both GPUs sees CUDA_VISIBLE_DEVICES='$gpus'"

# start again with the same options: the running daemons stay.
pids=$(cat "$dir"/run/*.pid | sort)
"$local_slurm" start "$dir" --gpus a100:2 --cpus 4 || fail "a second start failed"
[ "$(cat "$dir"/run/*.pid | sort)" = "$pids" ] || fail "a second start with the same options restarted the daemons"

# A batch job still running when stop comes: its slurmstepd would outlive slurmd.
job=$(slurm sbatch --parsable -o /dev/null --wrap "sleep 300") || fail "sbatch failed"
for _ in $(seq 50); do
  running=$(processes_of_cluster)
  grep -q " sleep$" <<<"$running" && break
  sleep 0.2
done
[ "$(slurm squeue -h -j "$job" -o %T 2>/dev/null)" = RUNNING ] || fail "job $job does not run"
# The check after stop must be able to see the cluster: every daemon, the job's step and
# its sleep.
for name in munged slurmctld slurmd slurmstepd sleep; do
  grep -q " $name$" <<<"$running" || fail "no $name among the cluster's processes before stop: ${running//$'\n'/, }"
done

ports=$(sed -n 's/^Slurm\(ctld\|d\)Port=//p' "$conf")
"$local_slurm" stop "$dir" || fail "stop failed"
left=$(processes_of_cluster)
[ -z "$left" ] || fail "processes left after stop: ${left//$'\n'/, }"
for port in $ports; do
  [ -z "$(ss -Hltn "sport = :$port" 2>/dev/null)" ] || fail "port $port still listened on after stop"
done
for file in "$dir"/run/*; do [ -e "$file" ] && fail "$file left after stop"; done
status=$("$local_slurm" status "$dir") && fail "status of the stopped cluster succeeds: $status"
grep -q "^slurmctld: not running" <<<"$status" || fail "status after stop: $status"
"$local_slurm" stop "$dir" || fail "a second stop failed"

written=$(outside_dir "$before")
[ -z "$written" ] || fail "written outside $dir: ${written//$'\n'/, }"
rm -f "$before"

trap - EXIT
if [ $failures = 0 ]; then
  rm -rf "$dir"
  echo "ok: started, ran steps and a job, stopped with nothing left running or written outside $dir"
fi
exit $((failures > 0))
