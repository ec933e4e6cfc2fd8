# shellcheck shell=bash
# config.bash: the cluster's configuration under DIR/etc, sourced by local-slurm.
# slurm.conf, cgroup.conf and the nodes' hosts file are rendered from the templates
# beside this file (NAME.in), whose @NAME@ placeholders write_config fills in;
# gres.conf and plugstack.conf are a line or so each. Written on every start.
#
# Reads the cluster's read-only globals (local-slurm: DIR, HOST, SHAPE, NODE_NAMES,
# TOOL_DIR) and calls namespaced, constrained, die (local-slurm), node_name, ctl_addr
# and node_addr (hosts.bash).

# render_template TEMPLATE NAME=VALUE...: prints TEMPLATE with every @NAME@ replaced by
# VALUE, in one pass (a value is never searched for placeholders). A placeholder
# without a value is an error.
render_template() {
  local template=$1 text rendered="" name argument
  local -A values=()
  shift
  for argument; do values[${argument%%=*}]=${argument#*=}; done
  text=$(<"$template") || die "cannot read $template"
  while [[ $text =~ @([A-Z_]+)@ ]]; do
    name=${BASH_REMATCH[1]}
    [[ -v values[$name] ]] || die "$template: no value for @$name@"
    rendered+=${text%%"@$name@"*}${values[$name]}
    text=${text#*"@$name@"}
  done
  printf '%s\n' "$rendered$text"
}

# GPUs must be character devices: with regular files slurmd leaves
# CUDA_VISIBLE_DEVICES empty, and a GPU gres without File= is dropped. Major 195 is
# NVIDIA's; with no driver behind it, an open that the device cgroup lets through fails
# with ENXIO, one it refuses with EPERM.
# gres_line FOLDER [NODE]: makes the node's GPU device files in FOLDER and prints their
# gres.conf line.
gres_line() {
  local i file gpus=${SHAPE[gpu_n]}
  mkdir -p "$1"
  for ((i = 0; i < gpus; i++)); do mknod "$1/nvidia$i" c 195 "$i"; done
  file="$1/nvidia0"
  ((gpus == 1)) || file="$1/nvidia[0-$((gpus - 1))]"
  echo "${2:+NodeName=$2 }Name=gpu Type=${SHAPE[gpu_type]} File=$file"
}

# node_line NAME ADDR [HOSTNAME]: the node's line of slurm.conf.
node_line() {
  # Advertise the memory of a real GPU node (8 GiB per GPU, plus 8 GiB), not this
  # machine's (config_overrides): jobs rendered by mgpr-submit ask for 8 GiB per GPU as
  # they would on a real cluster. Unconstrained, nothing enforces it (CR_Core); with
  # --constrain-devices memory is scheduled and each job's cgroup holds it to its --mem.
  local gpus=${SHAPE[gpu_n]}
  local line="NodeName=$1 NodeAddr=$2${3:+ NodeHostname=$3} CPUs=${SHAPE[cpus]} RealMemory=$(((gpus + 1) * 8192))"
  ((gpus == 0)) || line+=" Gres=gpu:${SHAPE[gpu_type]}:$gpus"
  echo "$line State=UNKNOWN"
}

# write_hosts SUBNET: the cluster's own hosts file, bind-mounted over /etc/hosts in
# every node's mount namespace only: the machine's /etc/hosts is never touched.
write_hosts() {
  local i node_hosts=""
  for ((i = 1; i <= ${#NODE_NAMES[@]}; i++)); do
    node_hosts+="$(node_addr "$1" "$i") $(node_name "$i")"$'\n'
  done
  render_template "$TOOL_DIR/hosts.in" CTLD_ADDR="$(ctl_addr "$1")" HOST="$HOST" \
    NODE_HOSTS="${node_hosts%$'\n'}" >"$DIR/etc/hosts"
}

# write_config CTLD_PORT SLURMD_PORT [SUBNET]: every file of DIR/etc and the fake GPUs
# under DIR/dev, for the cluster's shape; SUBNET (10.207.K) when namespaced.
write_config() {
  local ctld_port=$1 slurmd_port=$2 subnet=${3-} i name
  local ctld_addr=127.0.0.1 node_lines="" per_node_suffix="" per_node_folder="" communication=""
  local task=task/none proctrack=proctrack/linuxproc select=CR_Core
  local memory_default="# memory is not scheduled (CR_Core)"

  rm -rf "${DIR:?}"/dev/*
  : >"$DIR/etc/gres.conf"
  if namespaced; then
    ctld_addr=$(ctl_addr "$subnet")
    write_hosts "$subnet"
    for ((i = 1; i <= ${#NODE_NAMES[@]}; i++)); do
      name=$(node_name "$i")
      node_lines+=$(node_line "$name" "$(node_addr "$subnet" "$i")" "$name")$'\n'
      ((SHAPE[gpu_n] == 0)) || gres_line "$DIR/dev/$name" "$name" >>"$DIR/etc/gres.conf"
    done
    # Every slurmd reads this one slurm.conf: %n, the node's name, keeps their files apart.
    per_node_suffix=-%n per_node_folder=/%n
  else
    # Bind the daemons (and srun) to loopback rather than INADDR_ANY. Slurm binds to
    # whatever gethostname() resolves to, so only when that is 127.*. (With namespaces
    # srun must be reachable from the nodes' addresses.)
    if [[ $(getent ahostsv4 "$HOST" | awk 'NR == 1 {print $1}') == 127.* ]]; then
      communication="CommunicationParameters=NoCtldInAddrAny,NoInAddrAny"
    fi
    node_lines=$(node_line "$HOST" 127.0.0.1)$'\n'
    ((SHAPE[gpu_n] == 0)) || gres_line "$DIR/dev" >"$DIR/etc/gres.conf"
  fi
  rm -f "$DIR/etc/cgroup.conf"
  if constrained; then
    task=task/cgroup proctrack=proctrack/cgroup select=CR_Core_Memory
    # A job that names no --mem gets this much per node, and its cgroup holds it there.
    memory_default="DefMemPerNode=4096"
    render_template "$TOOL_DIR/cgroup.conf.in" >"$DIR/etc/cgroup.conf"
  fi

  : >"$DIR/etc/plugstack.conf"
  [[ -z ${SHAPE[plugin]} ]] || echo "required ${SHAPE[plugin]} ${SHAPE[plugin_args]}" >"$DIR/etc/plugstack.conf"

  render_template "$TOOL_DIR/slurm.conf.in" DIR="$DIR" HOST="$HOST" CTLD_ADDR="$ctld_addr" \
    CTLD_PORT="$ctld_port" SLURMD_PORT="$slurmd_port" PER_NODE_SUFFIX="$per_node_suffix" \
    PER_NODE_FOLDER="$per_node_folder" PROCTRACK="$proctrack" TASK="$task" SELECT_PARAMETERS="$select" \
    MEMORY_DEFAULT="$memory_default" \
    COMMUNICATION_PARAMETERS="$communication" NODE_LINES="${node_lines%$'\n'}" \
    PARTITION_NODES="$(IFS=,; echo "${NODE_NAMES[*]}")" >"$DIR/etc/slurm.conf"
}
