#!/usr/bin/env bash
# A single-node SLURM on this machine, for testing `kt experiment slurm` against the real engine.
#
#   scripts/slurm-local.sh install   install Debian's slurm-wlm and munge when missing (root on Debian only)
#   scripts/slurm-local.sh start     write a config into $KT_SLURM_DIR and start munged, slurmctld and slurmd
#   scripts/slurm-local.sh status    say which daemons run and show the node
#   scripts/slurm-local.sh stop      cancel every job, stop the daemons, leave nothing running
#
# Everything lives in $KT_SLURM_DIR (default ${TMPDIR:-/tmp}/kt-slurm-local-<uid>): slurm.conf, cgroup.conf,
# the munge key and socket, state, spool, logs and pid files. Nothing under /etc is changed. Clients find the
# cluster through SLURM_CONF: `start` prints the line to export (`eval "$(scripts/slurm-local.sh start)"`).
# The node is this host with its CPUs and memory, no GPUs; the one partition is `debug`. Process tracking is
# proctrack/linuxproc and task/none, so neither systemd nor a writable cgroup tree is needed (containers).
# Ports: $KT_SLURM_PORT (slurmctld, default 16817) and the next one (slurmd).
#
# Exit status: 0 done; 1 a daemon failed (its log is printed); 3 this machine cannot run SLURM here (not root,
# not Debian, or the packages are missing), with a message saying what to do.
set -euo pipefail

dir=${KT_SLURM_DIR:-${TMPDIR:-/tmp}/kt-slurm-local-$(id -u)}
port=${KT_SLURM_PORT:-16817}
wait_s=${KT_SLURM_WAIT:-30}

say() { echo "slurm-local: $*" >&2; }
cannot() {
  say "$*"
  exit 3
}

have_slurm() {
  command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 &&
    command -v munged >/dev/null 2>&1 && command -v sbatch >/dev/null 2>&1
}

install() {
  if have_slurm; then
    say "slurm-wlm and munge are installed ($(slurmd -V))"
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    cannot "slurm-wlm and munge are not installed and installing them needs root: run" \
      "'sudo apt-get install -y slurm-wlm munge', then this script again"
  fi
  if [[ ! -f /etc/debian_version ]] || ! command -v apt-get >/dev/null 2>&1; then
    cannot "slurm-wlm and munge are not installed and this is not Debian/Ubuntu: install SLURM (slurmctld," \
      "slurmd, sbatch) and munge with the system's package manager"
  fi
  say "installing slurm-wlm and munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq slurm-wlm munge >/dev/null ||
    { apt-get update -qq && apt-get install -y -qq slurm-wlm munge >/dev/null; } ||
    cannot "apt-get could not install slurm-wlm and munge (no network or no package source?)"
  have_slurm || cannot "slurm-wlm was installed but slurmctld, slurmd, sbatch or munged is still missing"
}

# pid from a pid file when that process is alive.
alive() {
  local pid
  [[ -f "$1" ]] || return 1
  pid=$(cat "$1" 2>/dev/null || true)
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# Waits up to $wait_s seconds for a command to succeed.
wait_for() {
  local what=$1
  shift
  local deadline=$((SECONDS + wait_s))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      say "$what did not come up within ${wait_s}s"
      return 1
    fi
    sleep 0.2
  done
}

show_log() {
  if [[ -f "$1" ]]; then
    say "last lines of $1:"
    tail -n 20 "$1" >&2
  fi
}

write_config() {
  local host cpus mem_mb
  host=$(hostname -s)
  cpus=$(nproc)
  # RealMemory a little below the total, so slurmd's own measurement never falls short of it.
  mem_mb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  chmod 700 "$dir" "$dir/munge"
  cat >"$dir/slurm.conf" <<EOF
# Written by scripts/slurm-local.sh: one node (this host), no accounting, no cgroups.
ClusterName=ktlocal
SlurmctldHost=$host
SlurmUser=$(id -un)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MaxArraySize=1001
# Requeued jobs may run again right away (the requeue test needs no waiting).
JobRequeue=1
KillWait=10
MinJobAge=600
SchedulerParameters=sched_interval=1
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$dir/cgroup.conf" <<'EOF'
# Not used: proctrack/linuxproc and task/none load no cgroup plugin. Present because slurmd looks for it.
CgroupAutomount=no
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
EOF
  if [[ ! -f "$dir/munge/munge.key" ]]; then
    head -c 1024 /dev/urandom >"$dir/munge/munge.key"
  fi
  chmod 400 "$dir/munge/munge.key"
}

start() {
  if [[ $(id -u) -ne 0 ]]; then
    cannot "slurmd must run as root to start jobs as their user; run this script as root (a CI container" \
      "usually is), or use a real cluster"
  fi
  have_slurm || cannot "slurm-wlm and munge are not installed: run '$0 install' first (as root on Debian)"
  if alive "$dir/slurmctld.pid" >/dev/null; then
    say "already running in $dir"
    echo "export SLURM_CONF=$dir/slurm.conf"
    return 0
  fi
  write_config
  export SLURM_CONF=$dir/slurm.conf

  if ! alive "$dir/munge/munged.pid" >/dev/null; then
    munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
      --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
      --seed-file="$dir/munge/munged.seed" ||
      { show_log "$dir/munge/munged.log"; stop_all; exit 1; }
  fi
  wait_for munged munge --socket="$dir/munge/munge.socket" -n ||
    { show_log "$dir/munge/munged.log"; stop_all; exit 1; }

  # -c: a clean start, no state from an earlier cluster in this directory; -i: ignore state errors.
  slurmctld -c -i -f "$dir/slurm.conf" || { show_log "$dir/slurmctld.log"; stop_all; exit 1; }
  wait_for slurmctld scontrol ping || { show_log "$dir/slurmctld.log"; stop_all; exit 1; }
  slurmd -f "$dir/slurm.conf" || { show_log "$dir/slurmd.log"; stop_all; exit 1; }
  node_idle() { sinfo -h -o %t | grep -qx 'idle'; }
  wait_for "the node" node_idle || { show_log "$dir/slurmd.log"; show_log "$dir/slurmctld.log"; stop_all; exit 1; }
  say "running in $dir: node $(hostname -s), $(nproc) CPUs, partition debug"
  echo "export SLURM_CONF=$dir/slurm.conf"
}

# Sends TERM to the process in a pid file, waits, then KILL.
stop_one() {
  local name=$1 pidfile=$2 pid
  pid=$(alive "$pidfile") || { rm -f "$pidfile"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + wait_s))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      say "$name ($pid) did not stop within ${wait_s}s of SIGTERM: killing it"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  rm -f "$pidfile"
}

stop_all() {
  export SLURM_CONF=$dir/slurm.conf
  if alive "$dir/slurmctld.pid" >/dev/null; then
    scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
    # Give the jobs' steps their KillWait to end before slurmd goes.
    local deadline=$((SECONDS + wait_s))
    while [[ -n "$(squeue -h -t running,completing -o %i 2>/dev/null)" ]] && ((SECONDS < deadline)); do
      sleep 0.5
    done
  fi
  stop_one slurmd "$dir/slurmd.pid"
  stop_one slurmctld "$dir/slurmctld.pid"
  stop_one munged "$dir/munge/munged.pid"
}

status() {
  local running=0
  for d in slurmctld:"$dir/slurmctld.pid" slurmd:"$dir/slurmd.pid" munged:"$dir/munge/munged.pid"; do
    local pid
    if pid=$(alive "${d#*:}"); then
      echo "${d%%:*} running (pid $pid)"
      running=$((running + 1))
    else
      echo "${d%%:*} not running"
    fi
  done
  if ((running == 3)); then
    SLURM_CONF=$dir/slurm.conf sinfo
  fi
  ((running == 3))
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop)
    stop_all
    say "stopped (files stay in $dir)"
    ;;
  status) status ;;
  *)
    echo "usage: $0 install|start|status|stop   (state in \$KT_SLURM_DIR, default $dir)" >&2
    exit 64
    ;;
esac
