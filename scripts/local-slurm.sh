#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, from Debian's packages (slurmctld,
# slurmd, slurm-client, munge: scripts/install-deps.sh --for slurm), to run
# parabench's Slurm path (sbatch, srun, PMIx) without a real cluster.
#
#   scripts/local-slurm.sh [--dir DIR] up|down|status|env
#
#   up      write DIR/slurm.conf, start munged, slurmctld and slurmd, and wait
#           (at most 60 s) until sinfo shows the node idle; a no-op when it is up
#   down    cancel the cluster's jobs, stop the daemons it started (by the PIDs in
#           DIR/run/*.pid) and wait until they are gone, then any job step still
#           running (slurmstepd with a file under DIR open, and its tasks);
#           a no-op when it is down
#   status  each daemon: running (PID) or not, then sinfo; exit 0 up, 1 down or damaged
#   env     print the line that points Slurm's commands at this cluster:
#             eval "$(scripts/local-slurm.sh env)"; sbatch ...
#
# DIR: --dir, else $PARABENCH_SLURM_DIR, else /tmp/parabench-slurm. Everything
# the cluster writes is under DIR: slurm.conf, its own munge key and socket,
# controller state, slurmd's spool, logs (DIR/log) and pid files (DIR/run).
# Nothing system-wide is written; Slurm's commands find the cluster only through
# SLURM_CONF=DIR/slurm.conf. Ports: PARABENCH_SLURM_PORT (default 16817) for
# slurmctld, the next one for slurmd (Slurm's usual 6817/6818 stay free).
#
# The node is this host (`hostname -s`), with the CPUs, sockets and cores that
# `slurmd -C` finds; SlurmUser=root (run as root); ProctrackType=proctrack/linuxproc,
# TaskPlugin=task/affinity (srun --cpu-bind binds each task with sched_setaffinity, so
# the binding run_all records is the one applied; no cgroups;
# PARABENCH_SLURM_TASK=none binds nothing: srun then warns that the "cluster
# configuration lacks support for cpu binding" and ranks run unbound),
# select/cons_tres with CR_Core, MpiDefault=pmix (Debian's Open MPI 4.1 has PMIx
# only: with --mpi=pmi2 its MPI_Init fails). TmpFS (PMIx's per-step files) is DIR/tmp.
# Exit: 0 done; 1 a daemon did not start or stop (its log is shown); 2 usage;
# 3 Slurm or munge not installed, or not root.
set -euo pipefail

DIR=${PARABENCH_SLURM_DIR:-/tmp/parabench-slurm}
PORT=${PARABENCH_SLURM_PORT:-16817}
TASK=${PARABENCH_SLURM_TASK:-affinity}
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
CMD=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) [ $# -ge 2 ] || { echo "local-slurm.sh: --dir needs a directory" >&2; exit 2; }
               DIR=$2; shift ;;
        up|down|status|env) [ -z "$CMD" ] || { echo "local-slurm.sh: one command at a time" >&2; exit 2; }
               CMD=$1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "local-slurm.sh: unknown argument '$1'; expected [--dir DIR] up|down|status|env" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$CMD" ] || { echo "local-slurm.sh: expected up, down, status or env; see --help" >&2; exit 2; }
[[ "$PORT" =~ ^[0-9]+$ ]] && [ "$PORT" -ge 1024 ] && [ "$PORT" -le 65534 ] \
    || { echo "local-slurm.sh: PARABENCH_SLURM_PORT '$PORT' is not a port in 1024..65534" >&2; exit 2; }
[[ "$TASK" =~ ^(none|affinity)$ ]] || { echo "local-slurm.sh: PARABENCH_SLURM_TASK '$TASK' is not none or affinity" >&2; exit 2; }
case "$DIR" in /*) ;; *) DIR=$PWD/$DIR ;; esac
CONF=$DIR/slurm.conf
RUN=$DIR/run LOG=$DIR/log
export SLURM_CONF=$CONF
NODE=$(hostname -s)
# The daemons in the order they start; `down` stops them in reverse.
DAEMONS=(munged slurmctld slurmd)

if [ "$CMD" = env ]; then printf 'export SLURM_CONF=%q\n' "$CONF"; exit 0; fi

# pid_of NAME: the PID in NAME's pid file when that process is alive and is NAME
# (a PID reused by something else after a crash is not ours).
pid_of() {
    local f=$RUN/$1.pid p
    [ -r "$f" ] || return 1
    p=$(tr -dc '0-9' <"$f")
    [ -n "$p" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] && echo "$p"
}
# Job steps left running: the slurmstepd processes that hold a file under DIR open
# (they log to DIR/log/slurmd.log; a `tail -f` of that log is not one of them),
# then every process below them (the tasks). By /proc and PID, never by name alone.
strays() {
    local fd p
    for fd in /proc/[0-9]*/fd/*; do
        case "$(readlink "$fd" 2>/dev/null)" in "$DIR"/*) p=${fd#/proc/}; echo "${p%%/*}" ;; esac
    done | sort -u | while read -r p; do
        if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmstepd ]; then echo "$p"; fi
    done
}
below() { # PID...: the processes below them
    cat /proc/[0-9]*/stat 2>/dev/null | awk -v roots="$*" '{ pid = $1; sub(/.*\) /, ""); parent[pid] = $2 }
        END { n = split(roots, q, " ")
              for (i = 1; i <= n; i++) for (p in parent) if (parent[p] == q[i]) { q[++n] = p; print p } }'
}
show_log() { [ -s "$LOG/$1.log" ] && { echo "  last lines of $LOG/$1.log:"; tail -n 15 "$LOG/$1.log" | sed 's/^/  | /'; } >&2; return 0; }
node_state() { sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n 1; }

status() {
    local d p up=0
    for d in "${DAEMONS[@]}"; do
        if p=$(pid_of "$d"); then echo "$d: running (pid $p)"; up=$((up + 1)); else echo "$d: not running"; fi
    done
    if [ "$up" -eq 0 ]; then echo "local Slurm: down ($DIR)"; return 1; fi
    if [ "$up" -lt ${#DAEMONS[@]} ]; then echo "local Slurm: DAMAGED, some daemons are missing (run down, then up)"; return 1; fi
    echo "local Slurm: up ($CONF); node $NODE: $(node_state || echo unknown)"
    sinfo 2>/dev/null | sed 's/^/  /'
    return 0
}

down() {
    local d p i left alive
    if [ -n "$(pid_of slurmctld)" ]; then # jobs first: their slurmstepd outlive slurmd otherwise
        scancel --full --quiet --user=root 2>/dev/null || true
        for i in $(seq 50); do
            [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
    for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do
        d=${DAEMONS[$i]}
        p=$(pid_of "$d") || { rm -f "$RUN/$d.pid"; continue; }
        kill -TERM "$p" 2>/dev/null || true
        for _ in $(seq 75); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$p" 2>/dev/null; then
            echo "local-slurm.sh: $d (pid $p) ignored SIGTERM for 15 s; killing it" >&2
            kill -KILL "$p" 2>/dev/null || true
        fi
        rm -f "$RUN/$d.pid"
    done
    # Steps whose job was not cancelled in time: stopped by PID, found through their open log.
    left=$(strays | tr '\n' ' ')
    if [ -n "$left" ]; then
        left="$(below "$left" | tr '\n' ' ')$left"
        echo "local-slurm.sh: stopping job processes left over: $left" >&2
        # shellcheck disable=SC2086 # one PID per word
        kill -KILL $left 2>/dev/null || true
        for _ in $(seq 50); do # until every one is gone (kill -0 fails only for the last)
            alive=0
            for p in $left; do kill -0 "$p" 2>/dev/null && alive=1; done
            [ "$alive" = 0 ] && break
            sleep 0.1
        done
    fi
    for d in "${DAEMONS[@]}"; do
        if pid_of "$d" >/dev/null; then echo "local-slurm.sh: $d is still running" >&2; return 1; fi
    done
    echo "local Slurm: down"
}

write_conf() {
    local hw
    # Sockets, cores and threads as slurmd finds them: a node whose configuration
    # claims more than the hardware has is drained at registration.
    hw=$(slurmd -C 2>/dev/null | head -n 1 | grep -o 'CPUs=[0-9]* Boards=[0-9]* SocketsPerBoard=[0-9]* CoresPerSocket=[0-9]* ThreadsPerCore=[0-9]*') \
        || hw="CPUs=$(nproc)"
    : >"$DIR/plugstack.conf" # none of /etc/slurm/plugstack.conf.d's SPANK plugins
    cat >"$CONF" <<EOF
# Written by scripts/local-slurm.sh: a one-node cluster on this host; every path is under $DIR.
ClusterName=parabench
SlurmctldHost=$NODE
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$RUN/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
PlugStackConfig=$DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/$TASK
TmpFS=$DIR/tmp
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=60
NodeName=$NODE $hw State=UNKNOWN
PartitionName=local Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
}

# start NAME COMMAND...: run a daemon (it forks and writes its pid file), wait for the pid file.
start() {
    local d=$1 p; shift
    "$@" >>"$LOG/$d.start.log" 2>&1 || { echo "local-slurm.sh: $d failed to start (exit $?)" >&2; cat "$LOG/$d.start.log" >&2; show_log "$d"; return 1; }
    for _ in $(seq 50); do
        p=$(pid_of "$d") && { echo "$d: started (pid $p)"; return 0; }
        sleep 0.2
    done
    echo "local-slurm.sh: $d did not write $RUN/$d.pid within 10 s" >&2
    cat "$LOG/$d.start.log" >&2 2>/dev/null; show_log "$d"
    return 1
}

up() {
    local d missing=() state
    for d in munged mungekey slurmctld slurmd sinfo srun sbatch; do
        command -v "$d" >/dev/null 2>&1 || missing+=("$d")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "local-slurm.sh: not installed: ${missing[*]}; run scripts/install-deps.sh --for slurm" >&2
        exit 3
    fi
    [ "$(id -u)" -eq 0 ] || { echo "local-slurm.sh: run as root (SlurmUser=root, jobs run as root)" >&2; exit 3; }
    if status >/dev/null; then
        state=$(node_state || true)
        case "$state" in idle|mixed|allocated|completing)
            echo "local Slurm: already up ($CONF); node $NODE: $state"; return 0 ;;
        esac
    fi
    # Whatever is left of an earlier, broken start goes first: a fresh cluster every time.
    down >/dev/null
    for p in "$PORT" $((PORT + 1)); do
        if ss -Htln "sport = :$p" 2>/dev/null | grep -q .; then
            echo "local-slurm.sh: port $p is in use; choose others with PARABENCH_SLURM_PORT=N (N and N+1)" >&2
            exit 1
        fi
    done
    rm -rf "$DIR/state" "$DIR/spool" "$LOG"
    mkdir -p "$DIR" "$RUN" "$LOG" "$DIR/state" "$DIR/spool" "$DIR/etc" "$DIR/tmp"
    chmod 0700 "$DIR" "$RUN" "$DIR/etc"
    [ -s "$DIR/etc/munge.key" ] || mungekey --create --keyfile="$DIR/etc/munge.key" >/dev/null
    chmod 0600 "$DIR/etc/munge.key"
    write_conf

    start munged munged --force --socket="$RUN/munge.socket" --key-file="$DIR/etc/munge.key" \
        --pid-file="$RUN/munged.pid" --log-file="$LOG/munged.log" --seed-file="$DIR/state/munged.seed" || { down >/dev/null; exit 1; }
    start slurmctld slurmctld -f "$CONF" || { down >/dev/null; exit 1; }
    start slurmd slurmd -f "$CONF" -N "$NODE" || { down >/dev/null; exit 1; }

    for _ in $(seq 120); do
        state=$(node_state || true)
        [ "$state" = idle ] && { echo "local Slurm: up ($CONF); node $NODE: idle"; echo "  eval \"\$($0 --dir $DIR env)\" points sbatch, srun and sinfo at it"; return 0; }
        sleep 0.5
    done
    echo "local-slurm.sh: node $NODE is not idle after 60 s (state: ${state:-no answer from slurmctld})" >&2
    sinfo -N -l 2>&1 | sed 's/^/  /' >&2 || true
    show_log slurmctld; show_log slurmd
    down >/dev/null
    exit 1
}

case "$CMD" in
    up) up ;;
    down) down ;;
    status) status ;;
esac
