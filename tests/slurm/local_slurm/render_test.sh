#!/usr/bin/env bash
# local-slurm render: the configuration start writes, without starting anything, for
# three shapes (one host; three namespaced hosts with device cgroups and a plugin; no
# GPUs), checked line by line and read back by slurmd's own parser (slurmd -G), and the
# options it refuses. Skipped (77) when not root: the fake GPUs are made with mknod.
#
#   render_test.sh LOCAL_SLURM
set -u
local_slurm=$1
if [ "$(id -u)" != 0 ]; then
  echo "skipped: render makes the fake GPUs' device files (mknod), which needs root"
  exit 77
fi
# Short and in /tmp: render refuses a folder too long for the sockets start would make.
work=$(mktemp -d /tmp/mgpr-render-XXXXXX)
trap 'rm -rf "$work"' EXIT
host=$(hostname -s)
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# has_line FILE LINE: FILE holds LINE, whole.
has_line() { grep -qxF -- "$2" "$1" || fail "$1 has no line '$2'"; }
# value FILE KEY: KEY's value in a KEY=VALUE file.
value() { sed -n "s/^$2=//p" "$1"; }

# slurmd_reads DIR NODE GRES: slurmd parses DIR's slurm.conf and gres.conf for NODE and
# finds GRES (its "Gres Name=... File=..." line, up to the File=).
slurmd_reads() {
  local output
  if ! command -v slurmd >/dev/null; then
    echo "note: no slurmd here; the configuration was not read back by Slurm's parser"
    return
  fi
  output=$(SLURM_CONF=$1/etc/slurm.conf timeout 20 slurmd -f "$1/etc/slurm.conf" -N "$2" -G 2>&1) ||
    fail "slurmd -G cannot read $1/etc for $2: $output"
  grep -qF -- "$3" <<<"$output" || [ -z "$3" ] || fail "slurmd -G for $2 does not find '$3': $output"
}

# Lines that hold a path must name one under DIR: every file of the cluster lives there.
paths_under() {
  local dir=$1 line path
  while IFS= read -r line; do
    path=${line#*=}
    path=${path#socket=}
    case $path in
      "$dir"/*) ;;
      *) fail "$dir/etc/slurm.conf names a path outside $dir: $line" ;;
    esac
  done < <(grep -E '^[A-Za-z]+=(socket=)?/' "$dir/etc/slurm.conf" | grep -v '^MailProg=/bin/true$')
}

common_checks() {
  local dir=$1 port
  grep -nE '@[A-Z_]+@' "$dir"/etc/* && fail "$dir/etc: a template placeholder was left unfilled"
  port=$(value "$dir/etc/slurm.conf" SlurmctldPort)
  if [[ $port =~ ^[0-9]+$ ]] && ((port >= 6817 && port <= 6915 && port % 2 == 1)); then
    has_line "$dir/etc/slurm.conf" "SlurmdPort=$((port + 1))"
  else
    fail "SlurmctldPort '$port' is not an odd port of 6817-6915"
  fi
  has_line "$dir/etc/slurm.conf" "AuthInfo=socket=$dir/munge/munge.socket.2"
  has_line "$dir/etc/slurm.conf" "StateSaveLocation=$dir/state"
  has_line "$dir/etc/slurm.conf" "PlugStackConfig=$dir/etc/plugstack.conf"
  has_line "$dir/etc/slurm.conf" "JobCompLoc=$dir/log/jobcomp.txt"
  has_line "$dir/etc/slurm.conf" "EnforcePartLimits=ALL"
  has_line "$dir/etc/slurm.conf" "SlurmdParameters=config_overrides"
  has_line "$dir/etc/slurm.conf" "GresTypes=gpu"
  paths_under "$dir"
  [ ! -e "$dir/run/shape" ] || fail "render wrote $dir/run/shape: a cluster would look started"
  [ -z "$(ls "$dir/log" 2>/dev/null)" ] || fail "render started something: $dir/log holds $(ls "$dir/log")"
}

# ---- one host, the defaults (a100:4, 8 CPUs)
one=$work/one
if env -u MGPR_LOCAL_GPUS "$local_slurm" render "$one"; then
  common_checks "$one"
  conf=$one/etc/slurm.conf
  has_line "$conf" "SlurmctldHost=$host(127.0.0.1)"
  has_line "$conf" "SlurmdSpoolDir=$one/spool"
  has_line "$conf" "SlurmdPidFile=$one/run/slurmd.pid"
  has_line "$conf" "SlurmdLogFile=$one/log/slurmd.log"
  has_line "$conf" "ProctrackType=proctrack/linuxproc"
  has_line "$conf" "TaskPlugin=task/none"
  # 8 GiB per GPU plus 8 GiB, as a real GPU node would advertise.
  has_line "$conf" "NodeName=$host NodeAddr=127.0.0.1 CPUs=8 RealMemory=40960 Gres=gpu:a100:4 State=UNKNOWN"
  has_line "$conf" "PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP"
  [ "$(grep -c '^NodeName=' "$conf")" = 1 ] || fail "one host, but $(grep -c '^NodeName=' "$conf") NodeName lines"
  # Loopback only when the host name resolves to 127.x (Slurm binds to that address).
  if [[ $(getent ahostsv4 "$host" | awk 'NR == 1 {print $1}') == 127.* ]]; then
    has_line "$conf" "CommunicationParameters=NoCtldInAddrAny,NoInAddrAny"
  else
    grep -q '^CommunicationParameters=' "$conf" && fail "CommunicationParameters set though $host is not on loopback"
  fi
  [ ! -e "$one/etc/cgroup.conf" ] || fail "cgroup.conf written without --constrain-devices"
  [ ! -e "$one/etc/hosts" ] || fail "a hosts file written for one host"
  [ "$(cat "$one/etc/gres.conf")" = "Name=gpu Type=a100 File=$one/dev/nvidia[0-3]" ] ||
    fail "gres.conf: $(cat "$one/etc/gres.conf")"
  [ ! -s "$one/etc/plugstack.conf" ] || fail "plugstack.conf names a plugin though none was given"
  # NVIDIA's major, 195 (c3), minors 0..3: Slurm sets CUDA_VISIBLE_DEVICES from them.
  for i in 0 1 2 3; do
    [ "$(stat -c '%F %t %T' "$one/dev/nvidia$i" 2>/dev/null)" = "character special file c3 $i" ] ||
      fail "$one/dev/nvidia$i is not the character device 195:$i"
  done
  [ "$(find "$one/dev" -mindepth 1 | wc -l)" = 4 ] || fail "$one/dev holds more than the 4 GPUs: $(ls "$one/dev")"
  slurmd_reads "$one" "$host" "Gres Name=gpu Type=a100 Count=4 Index=0"
  # Rendered again (as every start does): the same files, the devices made afresh.
  cp "$conf" "$work/one.slurm.conf"
  "$local_slurm" render "$one" --gpus a100:4 --cpus 8 || fail "a second render of $one failed"
  diff "$work/one.slurm.conf" "$conf" || fail "a second render wrote another slurm.conf"
else
  fail "render $one failed"
fi

# ---- three namespaced hosts, device cgroups, a plugin with arguments
three=$work/three
links_before=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sort)
namespaces_before=$(ip netns list 2>/dev/null | sort)
if "$local_slurm" render "$three" --nodes 3 --gpus h100:1 --cpus 4 --constrain-devices \
  --plugin /bin/true --plugin-args "timeout=30 stall=0"; then
  common_checks "$three"
  conf=$three/etc/slurm.conf
  controller=$(value "$conf" SlurmctldHost)
  subnet=$(sed -n 's/^.*(\(10\.207\.[0-9]*\)\.1)$/\1/p' <<<"$controller")
  [ -n "$subnet" ] || fail "SlurmctldHost '$controller' is not $host on the cluster's bridge (10.207.K.1)"
  has_line "$conf" "SlurmctldHost=$host($subnet.1)"
  ip -4 -o addr show 2>/dev/null | grep -F " $subnet." &&
    fail "the cluster's subnet $subnet.0/24 is one an interface of this machine uses"
  # One slurm.conf for every slurmd: %n (the node's name) keeps their files apart.
  has_line "$conf" "SlurmdSpoolDir=$three/spool/%n"
  has_line "$conf" "SlurmdPidFile=$three/run/slurmd-%n.pid"
  has_line "$conf" "SlurmdLogFile=$three/log/slurmd-%n.log"
  has_line "$conf" "ProctrackType=proctrack/cgroup"
  has_line "$conf" "TaskPlugin=task/cgroup"
  # Memory scheduled and enforced as on a real cluster: a job's --mem is its cgroup's limit.
  has_line "$conf" "SelectTypeParameters=CR_Core_Memory"
  has_line "$conf" "DefMemPerNode=4096"
  grep -q '^CommunicationParameters=' "$conf" &&
    fail "CommunicationParameters set: slurmd must reach srun through the bridge"
  for i in 1 2 3; do
    has_line "$conf" "NodeName=node$i NodeAddr=$subnet.1$i NodeHostname=node$i CPUs=4 RealMemory=16384 Gres=gpu:h100:1 State=UNKNOWN"
    has_line "$three/etc/gres.conf" "NodeName=node$i Name=gpu Type=h100 File=$three/dev/node$i/nvidia0"
    has_line "$three/etc/hosts" "$subnet.1$i node$i"
    [ "$(stat -c '%F %t %T' "$three/dev/node$i/nvidia0" 2>/dev/null)" = "character special file c3 0" ] ||
      fail "$three/dev/node$i/nvidia0 is not the character device 195:0"
  done
  has_line "$conf" "PartitionName=debug Nodes=node1,node2,node3 Default=YES MaxTime=INFINITE State=UP"
  has_line "$three/etc/hosts" "127.0.0.1 localhost"
  has_line "$three/etc/hosts" "$subnet.1 $host"
  [ "$(grep -vc '^#' "$three/etc/hosts")" = 5 ] || fail "hosts: $(cat "$three/etc/hosts")"
  has_line "$three/etc/cgroup.conf" "CgroupPlugin=cgroup/v1"
  has_line "$three/etc/cgroup.conf" "ConstrainDevices=yes"
  has_line "$three/etc/cgroup.conf" "ConstrainRAMSpace=yes"
  has_line "$three/etc/cgroup.conf" "CgroupAutomount=no"
  # The plugin by its resolved path, its arguments as given.
  [ "$(cat "$three/etc/plugstack.conf")" = "required $(realpath /bin/true) timeout=30 stall=0" ] ||
    fail "plugstack.conf: $(cat "$three/etc/plugstack.conf")"
  slurmd_reads "$three" node2 "Gres Name=gpu Type=h100 Count=1 Index=0 ID=7696487 File=$three/dev/node2/nvidia0"
  # render makes nothing outside DIR: no link, no namespace, no cgroup.
  [ "$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sort)" = "$links_before" ] ||
    fail "render changed the machine's links"
  [ "$(ip netns list 2>/dev/null | sort)" = "$namespaces_before" ] || fail "render changed the network namespaces"
  [ ! -e "$three/run/net.env" ] || fail "render recorded a network in $three/run/net.env"
else
  fail "render $three failed"
fi

# ---- no GPUs
none=$work/none
if "$local_slurm" render "$none" --gpus a100:0; then
  common_checks "$none"
  has_line "$none/etc/slurm.conf" "NodeName=$host NodeAddr=127.0.0.1 CPUs=8 RealMemory=8192 State=UNKNOWN"
  [ ! -s "$none/etc/gres.conf" ] || fail "gres.conf for no GPUs: $(cat "$none/etc/gres.conf")"
  [ -z "$(ls "$none/dev")" ] || fail "device files for no GPUs: $(ls "$none/dev")"
  slurmd_reads "$none" "$host" ""
else
  fail "render $none failed"
fi

# ---- refusals: exit status 1 (2 for usage) and a message naming the problem
# refused STATUS MESSAGE ARGS...
refused() {
  local status=$1 message=$2 output rc
  shift 2
  output=$("$local_slurm" "$@" 2>&1)
  rc=$?
  [ "$rc" = "$status" ] || fail "local-slurm $*: exit status $rc, not $status ($output)"
  grep -qF -- "$message" <<<"$output" || fail "local-slurm $*: no '$message' in: $output"
}
refused 1 "--gpus wants TYPE:N, got 'a100'" render "$work/x" --gpus a100
refused 1 "--cpus wants a positive integer" render "$work/x" --cpus 0
refused 1 "--nodes wants 1 to 16, got '17'" render "$work/x" --nodes 17
refused 1 "--nodes wants 1 to 16, got '0'" render "$work/x" --nodes 0
refused 1 "plugin not found: $work/no-plugin.so" render "$work/x" --plugin "$work/no-plugin.so"
refused 1 "must not contain whitespace" render "$work/a b"
refused 1 "socket paths under it need it to be at most" render "/tmp/$(printf '%080d' 0)"
refused 2 "usage: local-slurm render DIR" render "$work/x" --no-such-option
refused 2 "usage: local-slurm start" no-such-command "$work/x"
[ ! -e "$work/x" ] || fail "a refused render still wrote $work/x"
mkdir -p "$work/started/run" && echo "nodes=1 constrain=0" >"$work/started/run/shape"
refused 1 "holds a started cluster" render "$work/started"
[ ! -e "$work/started/etc" ] || fail "render wrote into a started cluster's folder"

if [ $failures = 0 ]; then echo "ok: render wrote and refused as expected"; fi
exit $((failures > 0))
