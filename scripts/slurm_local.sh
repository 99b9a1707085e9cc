#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for tests and for trying the batch scripts without a real cluster.
#   scripts/slurm_local.sh start [STATE_DIR]   munged + slurmctld + slurmd, waits until the node is idle
#   scripts/slurm_local.sh stop  [STATE_DIR]   cancels the jobs, stops the three daemons it started
#   scripts/slurm_local.sh env   [STATE_DIR]   prints `export SLURM_CONF=...` (use: eval "$(... env)")
#   scripts/slurm_local.sh status [STATE_DIR]
# STATE_DIR (default $GRIDTRAIN_SLURM_DIR or /tmp/gridtrain-slurm) holds everything: slurm.conf, a private munge
# key and socket, spool and state directories, logs. Nothing under /etc is touched: clients find the cluster
# through SLURM_CONF, so a stale cluster can never break a second one, and two clusters with different state
# directories (two build trees) can run side by side on different ports.
# Needs root (slurmd must be able to start jobs), the packages slurm-wlm and munge (scripts/setup.sh --deps).
# Sandbox facts baked in: no cgroups (linuxproc/none plugins), node address 127.0.0.1, CPUs declared with
# config_overrides so 8 ranks fit on a 2-core machine, kill_invalid_depend so a failed chain does not pend.
set -euo pipefail

cmd=${1:-}
state=${2:-${GRIDTRAIN_SLURM_DIR:-/tmp/gridtrain-slurm}}
cpus=${GRIDTRAIN_SLURM_CPUS:-8}
node=$(hostname -s)

die() { echo "slurm_local: error: $*" >&2; exit 1; }
log() { echo "slurm_local: $*"; }

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Stop the daemon whose pid file is $1 (only that process), waiting up to 10 s before SIGKILL.
stop_pid() {
  local f=$1 name=$2 pid
  pid_alive "$f" || { rm -f "$f"; return 0; }
  pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name ($pid) did not stop, killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

write_conf() {
  local ctld_port=$1 d_port=$2
  cat >"$state/slurm.conf" <<EOF
# Written by scripts/slurm_local.sh for a one-node test cluster; do not edit, it is rewritten on start.
ClusterName=gridtrain
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge/munge.socket
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# no cgroups in the sandbox
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
MpiDefault=pmi2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
# a failed parent cancels its afterok dependents instead of leaving them pending forever
DependencyParameters=kill_invalid_depend
# a request larger than the node is rejected at submission instead of pending forever
EnforcePartLimits=ALL
# trust the CPU count below rather than the hardware (8 ranks on 2 cores)
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
KillWait=10
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=4096 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  [ "$(id -u)" -eq 0 ] || die "needs root (slurmd starts the jobs)"
  for p in munged slurmctld slurmd sinfo; do command -v $p >/dev/null || die "$p not found (scripts/setup.sh --deps)"; done
  if [ -f "$state/slurm.conf" ]; then stop_daemons quiet; fi
  rm -rf "$state"
  mkdir -p "$state"/{ctld,spool,log,munge}
  chmod 0755 "$state"

  # private munged: own key, socket and files, owned by the munge user as munged insists
  local m=$state/munge
  if command -v mungekey >/dev/null; then
    mungekey --create --keyfile="$m/munge.key" >/dev/null 2>&1
  else
    dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none
  fi
  chown -R munge:munge "$m"; chmod 0700 "$m"; chmod 0600 "$m/munge.key"
  chmod 0755 "$m"   # slurm clients (root here, but any user in general) must reach the socket
  local mopts=(--socket="$m/munge.socket" --key-file="$m/munge.key" --pid-file="$m/munged.pid"
               --log-file="$m/munged.log" --seed-file="$m/munged.seed")
  if ! runuser -u munge -- munged "${mopts[@]}" 2>"$m/start.err"; then
    # munged refuses directories it finds insecure (a checkout under a group-writable path, say): say why, and
    # try again with --force, which turns those refusals into warnings
    log "munged refused to start ($(tr '\n' ' ' <"$m/start.err")); retrying with --force"
    runuser -u munge -- munged --force "${mopts[@]}" ||
      die "munged did not start: $(tail -3 "$m/munged.log" 2>/dev/null)"
  fi
  for _ in $(seq 50); do [ -S "$m/munge.socket" ] && break; sleep 0.1; done
  munge -n -S "$m/munge.socket" | unmunge -S "$m/munge.socket" >/dev/null \
    || die "munge credential round trip failed (see $m/munged.log)"

  write_conf "$(free_port)" "$(free_port)"
  export SLURM_CONF=$state/slurm.conf
  slurmctld -f "$SLURM_CONF" -i || die "slurmctld did not start: $(tail -5 "$state/log/slurmctld.log" 2>/dev/null)"
  slurmd -f "$SLURM_CONF" -N "$node" || die "slurmd did not start: $(tail -5 "$state/log/slurmd.log" 2>/dev/null)"

  local st=""
  for _ in $(seq 120); do
    st=$(sinfo -h -N -n "$node" -o %T 2>/dev/null || true)
    [ "$st" = idle ] && break
    sleep 0.5
  done
  if [ "$st" != idle ]; then
    echo "--- slurmctld.log"; tail -20 "$state/log/slurmctld.log" 2>/dev/null || true
    echo "--- slurmd.log"; tail -20 "$state/log/slurmd.log" 2>/dev/null || true
    stop_daemons quiet
    die "node $node did not become idle (state '${st:-none}')"
  fi
  echo "export SLURM_CONF=$SLURM_CONF" >"$state/env.sh"
  log "cluster up: node $node idle with $cpus CPUs, state in $state"
  log "use it with: eval \"\$(scripts/slurm_local.sh env $state)\""
}

stop_daemons() {
  local quiet=${1:-}
  if [ -f "$state/slurm.conf" ] && pid_alive "$state/slurmctld.pid"; then
    SLURM_CONF=$state/slurm.conf scancel --full --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 50); do
      [ -z "$(SLURM_CONF=$state/slurm.conf squeue -h -t R,CG -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  stop_pid "$state/slurmd.pid" slurmd
  stop_pid "$state/slurmctld.pid" slurmctld
  stop_pid "$state/munge/munged.pid" munged
  [ -n "$quiet" ] || log "stopped (logs kept in $state/log)"
}

case "$cmd" in
  start) start ;;
  stop) stop_daemons ;;
  env) [ -f "$state/slurm.conf" ] || die "no cluster in $state (start it first)"; echo "export SLURM_CONF=$state/slurm.conf" ;;
  status)
    for d in munge/munged slurmctld slurmd; do
      if pid_alive "$state/$d.pid"; then echo "$(basename $d): running ($(cat "$state/$d.pid"))"; else echo "$(basename $d): not running"; fi
    done
    [ -f "$state/slurm.conf" ] && SLURM_CONF=$state/slurm.conf sinfo 2>/dev/null || true ;;
  *) echo "usage: $0 start|stop|env|status [STATE_DIR]" >&2; exit 2 ;;
esac
