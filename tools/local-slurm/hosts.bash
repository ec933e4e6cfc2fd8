# shellcheck shell=bash
# hosts.bash: the hosts of a namespaced (multi-node) local cluster, sourced by
# local-slurm. Each node is a network namespace (its own address on a bridge made for
# this cluster) whose slurmd also runs in its own UTS namespace (its own hostname) and
# mount namespace (its own /etc/hosts and, with --constrain-devices, its own cgroup
# roots). Everything is named from NET_ID, 4 hex digits of the cluster folder's
# checksum, so stop can find and remove it from the folder alone, also after a crash,
# and two folders never share a name.
#
# Reads the cluster's read-only globals (local-slurm: DIR, CONF, SHAPE, NODE_NAMES,
# NET_ID) and calls constrained, pid_of, alive_pid (daemons.bash) and die.

# The controllers Slurm's cgroup/v1 plugin touches for task/cgroup.
readonly CGROUP_CONTROLLERS=(devices cpuset memory freezer)

# net_id FOLDER: 4 hex digits of FOLDER's checksum.
net_id() { printf '%04x' $(($(printf %s "$1" | cksum | cut -d' ' -f1) % 65536)); }

# The names made outside DIR. A link name has at most 15 characters (IFNAMSIZ).
bridge_name() { echo "mgprbr$NET_ID"; }
netns_prefix() { echo "mgpr-$NET_ID-"; }  # namespaces: mgpr-1a2b-node1, ...
veth_prefix() { echo "mgpr$NET_ID-n"; }   # host ends of the nodes' links: mgpr1a2b-n1, ...
cgroup_prefix() { echo "mgpr-$NET_ID-"; } # per-node cgroup roots: <controller>/mgpr-1a2b-node1

node_name() { echo "node$1"; }
netns_of() { echo "$(netns_prefix)$1"; }

# pick_subnet: prints the first 10.207.K (of 10.207.K.0/24), K from NET_ID onwards,
# that no interface of this machine uses. Only addresses in it are ever assigned.
pick_subnet() {
  local k i used
  used=$(ip -4 -o addr show 2>/dev/null | awk '{print $4}')
  for ((i = 0; i < 256; i++)); do
    k=$(((16#$NET_ID + i) % 256))
    if ! grep -q "^10\.207\.$k\." <<<"$used"; then
      echo "10.207.$k"
      return
    fi
  done
  die "no free 10.207.K.0/24 subnet for the cluster's bridge"
}
# ctl_addr SUBNET, node_addr SUBNET I: the controller's and node I's addresses.
ctl_addr() { echo "$1.1"; }
node_addr() { echo "$1.$((10 + $2))"; }

need_host_tools() {
  local tool
  for tool in ip nsenter unshare mount; do
    command -v "$tool" >/dev/null || die "--nodes > 1 needs '$tool' (iproute2, util-linux: scripts/install-deps)"
  done
  ((EUID == 0)) || die "--nodes > 1 needs root: it creates network namespaces and a bridge"
}

# The devices controller of cgroup v1 must be mounted for ConstrainDevices; say what the
# machine offers instead.
need_devices_cgroup() {
  [[ -f /sys/fs/cgroup/devices/devices.allow ]] && return
  local offered
  offered=$(awk '$3 ~ /^cgroup/ {print $2 " (" $3 ")"}' /proc/mounts | paste -sd, -)
  die "--constrain-devices needs the cgroup v1 devices controller at /sys/fs/cgroup/devices," \
    "which this machine does not offer (cgroup mounts: ${offered:-none}); start without it"
}

# setup_network SUBNET: the bridge (the controller's address) and one namespace per
# node, linked to it by a veth pair (the node's address on eth0). Records both in
# DIR/run/net.env.
setup_network() {
  local subnet=$1 bridge i namespace veth
  bridge=$(bridge_name)
  ip link add "$bridge" type bridge || die "cannot create bridge $bridge"
  ip addr add "$(ctl_addr "$subnet")/24" dev "$bridge"
  ip link set "$bridge" up
  for ((i = 1; i <= ${#NODE_NAMES[@]}; i++)); do
    namespace=$(netns_of "$(node_name "$i")") veth=$(veth_prefix)$i
    ip netns add "$namespace"
    ip link add "$veth" type veth peer name eth0 netns "$namespace"
    ip link set "$veth" master "$bridge" up
    ip -n "$namespace" addr add "$(node_addr "$subnet" "$i")/24" dev eth0
    ip -n "$namespace" link set lo up
    ip -n "$namespace" link set eth0 up
  done
  echo "SUBNET=$subnet BRIDGE=$bridge" >"$DIR/run/net.env"
}

# make_node_cgroups NODE: per-node cgroup roots, made before the node starts and bound
# over the controllers' mount points inside its mount namespace: each slurmd then sees
# a hierarchy of its own, as on a real host, instead of all sharing slurm/uid_0/job_N/
# step_M (a multi-node job has the same step on every node).
make_node_cgroups() {
  local controller folder
  for controller in "${CGROUP_CONTROLLERS[@]}"; do
    [[ -d /sys/fs/cgroup/$controller ]] || continue
    folder=/sys/fs/cgroup/$controller/$(cgroup_prefix)$1
    mkdir -p "$folder"
    if [[ $controller == cpuset ]]; then # a new cpuset admits no task until given CPUs and memory nodes
      cat /sys/fs/cgroup/cpuset/cpuset.cpus >"$folder/cpuset.cpus"
      cat /sys/fs/cgroup/cpuset/cpuset.mems >"$folder/cpuset.mems"
    fi
  done
}

# node_prelude NODE: the commands of the shell that becomes NODE's slurmd: hostname,
# /etc/hosts, cgroups.
node_prelude() {
  local name=$1 controller folder binds=""
  if constrained; then
    for controller in "${CGROUP_CONTROLLERS[@]}"; do
      folder=/sys/fs/cgroup/$controller/$(cgroup_prefix)$name
      [[ -d $folder ]] && binds+="mount --bind $folder /sys/fs/cgroup/$controller && "
    done
  fi
  echo "hostname $name && mount --bind $DIR/etc/hosts /etc/hosts && $binds"
}

# start_node_slurmd I: slurmd for node I inside its namespaces. The mount namespace is
# private, so its binds vanish with its last process. fd 9 (the start lock) is closed,
# or slurmd would hold it forever.
start_node_slurmd() {
  local name namespace
  name=$(node_name "$1")
  namespace=$(netns_of "$name")
  if constrained; then make_node_cgroups "$name"; fi
  SLURM_CONF=$CONF nsenter --net="/run/netns/$namespace" unshare --uts --mount --propagation private \
    /bin/sh -c "$(node_prelude "$name") exec slurmd -f '$CONF' -N '$name'" \
    >>"$DIR/log/slurmd-$name.log" 2>&1 9>&-
}

# node_processes: NODE PID NAME for every process in the nodes' network namespaces.
node_processes() {
  local name pid
  for name in "${NODE_NAMES[@]}"; do
    for pid in $(ip netns pids "$(netns_of "$name")" 2>/dev/null); do
      echo "$name $pid $(cat "/proc/$pid/comm" 2>/dev/null)"
    done
  done
}

# exec_on_node NODE CMD...: CMD in NODE's namespaces (network, hostname, its
# /etc/hosts), entered through its slurmd.
exec_on_node() {
  local name=$1 pid
  shift
  if ! pid=$(pid_of "$DIR/run/slurmd-$name.pid") || ! alive_pid "$pid" slurmd; then
    die "no slurmd running on node '$name' of $DIR"
  fi
  exec nsenter -t "$pid" --net --uts --mount -- "$@"
}

# remove_hosts: every namespace, link, process and cgroup this folder's cluster made,
# found by name: after a crash nothing else records them. Idempotent.
remove_hosts() {
  local namespace pids controller link folder i
  for namespace in $(ip netns list 2>/dev/null | awk -v p="$(netns_prefix)" 'index($1, p) == 1 {print $1}'); do
    # slurmstepd and job processes outlive a killed slurmd; a namespace with a live
    # process keeps its veth too.
    for ((i = 0; i < 50; i++)); do
      pids=$(ip netns pids "$namespace" 2>/dev/null) || break
      [[ -n $pids ]] || break
      # shellcheck disable=SC2086  # one word per pid
      kill -KILL $pids 2>/dev/null || true
      sleep 0.1
    done
    ip netns del "$namespace" 2>/dev/null || true
  done
  for link in $(ip -o link show 2>/dev/null |
    awk -F': ' -v p="$(veth_prefix)" 'index($2, p) == 1 {sub(/@.*/, "", $2); print $2}'); do
    ip link del "$link" 2>/dev/null || true
  done
  ip link del "$(bridge_name)" 2>/dev/null || true
  for controller in "${CGROUP_CONTROLLERS[@]}"; do
    for folder in /sys/fs/cgroup/"$controller"/"$(cgroup_prefix)"*; do
      [[ -d $folder ]] || continue
      # Leaves first; a cgroup folder holds only files the kernel provides.
      find "$folder" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
  done
  rm -f "$DIR/run/net.env"
}
