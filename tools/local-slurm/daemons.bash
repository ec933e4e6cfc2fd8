# shellcheck shell=bash
# daemons.bash: the cluster's processes (munged, slurmctld, the slurmds), sourced by
# local-slurm. Processes are found by the pid files under DIR/run only, never by name:
# other clusters run the same binaries.
#
# Reads the cluster's read-only globals (local-slurm: DIR, CONF, HOST, NODE_NAMES) and
# calls namespaced, start_node_slurmd (hosts.bash) and die.

# pid_of PIDFILE: the recorded pid. Daemons delete their pid file as they exit, so it
# may vanish at any moment: read it once, tolerate failure.
pid_of() {
  local pid
  pid=$(cat "$1" 2>/dev/null) && [[ $pid =~ ^[0-9]+$ ]] && echo "$pid"
}

# alive_pid PID NAME: PID is a live process called NAME. Under this machine's init,
# dead daemons may never be reaped and linger as zombies, so state Z counts as gone.
# The name check guards against a recycled pid.
alive_pid() {
  local stat
  [[ $(cat "/proc/$1/comm" 2>/dev/null) == "$2" ]] || return 1
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) } # comm may contain spaces; state follows ") "
  [[ ${stat%% *} != Z ]]
}

# alive PIDFILE NAME: the process PIDFILE records is alive and called NAME.
alive() {
  local pid
  pid=$(pid_of "$1") && alive_pid "$pid" "$2"
}

# stop_pid PIDFILE NAME: SIGTERM, wait up to 10 s, then SIGKILL; removes PIDFILE.
stop_pid() {
  local pid i
  if pid=$(pid_of "$1") && alive_pid "$pid" "$2"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      alive_pid "$pid" "$2" || break
      sleep 0.1
    done
    if alive_pid "$pid" "$2"; then
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
    fi
  fi
  rm -f "$1"
}

# port_free PORT: nothing listens on TCP PORT.
port_free() {
  if command -v ss >/dev/null; then
    [[ -z $(ss -Hltn "sport = :$1" 2>/dev/null) ]]
    return
  fi
  # No ss: probe.
  if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 1; fi
}

# pick_ports: prints the first free slurmctld and slurmd port pair among 6817 6818,
# 6819 6820, ...
pick_ports() {
  local port
  for ((port = 6817; port < 6917; port += 2)); do
    if port_free "$port" && port_free $((port + 1)); then
      echo "$port $((port + 1))"
      return
    fi
  done
  die "no free port pair in 6817-6916"
}

# slurmd_pidfile NODE
slurmd_pidfile() {
  if namespaced; then echo "$DIR/run/slurmd-$1.pid"; else echo "$DIR/run/slurmd.pid"; fi
}

# The daemons get fd 9 (the start lock) closed, or they would hold it forever.
start_munge() {
  local i key=$DIR/munge/munge.key socket=$DIR/munge/munge.socket.2
  # Generated once and kept: munged insists on a private (0400) key.
  [[ -s $key ]] || dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
  chmod 0400 "$key"
  rm -f "$socket" "$socket.lock"
  # --force turns munged's strict permission checks on DIR's parents (e.g. a
  # group-writable checkout) into warnings.
  munged --force --socket="$socket" --key-file="$key" --pid-file="$DIR/run/munged.pid" \
    --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed" \
    >>"$DIR/log/munged.log" 2>&1 9>&- || return 1
  for ((i = 0; i < 50; i++)); do
    [[ -S $socket ]] && return 0
    sleep 0.1
  done
  return 1
}

# Every daemon gets -f and SLURM_CONF: none may fall back to /etc/slurm.
start_ctld() {
  SLURM_CONF=$CONF slurmctld -f "$CONF" >>"$DIR/log/slurmctld.log" 2>&1 9>&-
}

start_slurmds() {
  local i
  if namespaced; then
    for ((i = 1; i <= ${#NODE_NAMES[@]}; i++)); do start_node_slurmd "$i" || return 1; done
  else
    SLURM_CONF=$CONF slurmd -f "$CONF" -N "$HOST" >>"$DIR/log/slurmd.log" 2>&1 9>&-
  fi
}

daemons_alive() {
  local node
  alive "$DIR/run/munged.pid" munged && alive "$DIR/run/slurmctld.pid" slurmctld || return 1
  for node in "${NODE_NAMES[@]}"; do alive "$(slurmd_pidfile "$node")" slurmd || return 1; done
}

# node_field NODE NAME: one field (State, SlurmdStartTime, ...) of a node.
node_field() {
  SLURM_CONF=$CONF scontrol -o show node "$1" 2>/dev/null | tr ' ' '\n' |
    sed -n "s/^$2=//p" || true
}

# state_ok STATE: usable, i.e. IDLE/MIXED/ALLOCATED and not drained, failed or
# NOT_RESPONDING (slurmctld restores a restarted node as IDLE+NOT_RESPONDING until its
# slurmd registers again).
state_ok() {
  [[ $1 =~ ^(IDLE|MIXED|ALLOCATED)(\+[A-Z_]+)*$ ]] &&
    ! [[ $1 =~ NOT_RESPONDING|DRAIN|FAIL|POWER|REBOOT|INVALID ]]
}

# node_ready NODE SINCE: usable, and registered by a slurmd started at or after SINCE
# (seconds since the epoch). A drained or down state survives restarts in
# StateSaveLocation, so the node is resumed when seen so.
node_ready() {
  local state started
  state=$(node_field "$1" State) started=$(node_field "$1" SlurmdStartTime)
  started=$(date -d "${started:-@0}" +%s 2>/dev/null || echo 0)
  if state_ok "$state" && ((started >= $2)); then return 0; fi
  if [[ $state == *DOWN* || $state == *DRAIN* ]]; then
    SLURM_CONF=$CONF scontrol update nodename="$1" state=resume >/dev/null 2>&1 || true
  fi
  return 1
}

# wait_idle TRIES SINCE: waits TRIES x 0.2 s for every node to be ready (node_ready).
wait_idle() {
  local i node ready
  for ((i = 0; i < $1; i++)); do
    ((i < 10)) || daemons_alive || return 1 # died (pid files appear late)
    ready=1
    for node in "${NODE_NAMES[@]}"; do node_ready "$node" "$2" || ready=0; done
    ((ready)) && return 0
    sleep 0.2
  done
  return 1
}

# wait_sched FIRST_LINE: slurmctld's first scheduling pass comes ~3 s after it starts;
# a job submitted before that pends, and 'sbatch --wait' (polling at growing intervals)
# then takes ~10 s instead of ~2. The pass logs "SchedulerParameters=" in
# slurmctld.log from FIRST_LINE on: wait up to 5 s for it, never fail on it.
wait_sched() {
  local i
  for ((i = 0; i < 50; i++)); do
    [[ $(tail -n +"$1" "$DIR/log/slurmctld.log") == *SchedulerParameters=* ]] && return
    sleep 0.1
  done
}

# Job steps run in slurmstepd processes that outlive slurmd, so cancel every job while
# the daemons are still up and wait (KillWait 5 s + margin) until the steps' sockets in
# the spool folder are gone. Pending jobs are cancelled too, so none surprises the next
# start.
cancel_jobs() {
  local ids i
  alive "$DIR/run/slurmctld.pid" slurmctld || return 0
  ids=$(SLURM_CONF=$CONF squeue -h -o %A 2>/dev/null) || return 0
  [[ -n $ids ]] || return 0
  # shellcheck disable=SC2086  # one word per job id
  SLURM_CONF=$CONF scancel $ids 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    compgen -G "$DIR/spool/*_*" >/dev/null || compgen -G "$DIR/spool/*/*_*" >/dev/null || return 0
    sleep 0.2
  done
}
