#!/usr/bin/env bash
# A Slurm cluster on this machine, from Debian's packages (slurmctld, slurmd,
# slurm-client, munge: scripts/install-deps.sh --for slurm), to run parabench's
# Slurm path (sbatch, srun, PMIx) without a real cluster: one node (this host),
# or N emulated nodes with shaped links between them (--nodes N).
#
#   scripts/local-slurm.sh [--dir DIR] up [--nodes N [--rate RATE]]|down|status|env
#
#   up      write DIR/slurm.conf, start munged, slurmctld and one slurmd per node,
#           and wait (at most 60 s) until sinfo shows every node idle; a no-op
#           when the same cluster is up
#   --nodes N  the nodes are scripts/emulate-cluster.sh's network namespaces
#           pbnode0..pbnode(N-1) (N 2..64), node K at 198.18.0.(K+1); `up` brings
#           the emulated cluster up (uplinks shaped to RATE, default 1gbit) unless one
#           with N nodes is up already. Each node's slurmd runs inside its namespace
#           (and a UTS namespace named after the node), so the job steps and ranks it
#           starts do too: traffic between nodes crosses the shaped links.
#   down    cancel the cluster's jobs, stop the daemons it started (by the PIDs in
#           DIR/run/*.pid) and wait until they are gone, then any job step still
#           running (slurmstepd with a file under DIR open, and its tasks), then
#           the emulated cluster if `up` brought it up; a no-op when it is down
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
# One node: this host (`hostname -s`). Emulated nodes: pbnodeK (NodeAddr 198.18.0.(K+1));
# slurmctld runs in the root namespace, reached from the nodes at the bridge's
# 198.18.0.254. Debian's slurmd is built without --enable-multiple-slurmd, so each
# slurmd is a separate daemon with `-N pbnodeK` in its own namespace (its own
# address, so all use one SlurmdPort); the paths that must differ per node
# (SlurmdSpoolDir, SlurmdPidFile, SlurmdLogFile, TmpFS) name the node with %n, which
# slurmd expands itself. Every node has the CPUs, sockets and cores that
# `slurmd -C` finds (the emulated nodes share this machine's cores: bind with
# --cpu-bind=none, run_all.sh --bind none). SlurmUser=root (run as root); ProctrackType=proctrack/linuxproc,
# TaskPlugin=task/affinity (srun --cpu-bind binds each task with sched_setaffinity, so
# the binding run_all records is the one applied; no cgroups;
# PARABENCH_SLURM_TASK=none binds nothing: srun then warns that the "cluster
# configuration lacks support for cpu binding" and ranks run unbound),
# select/cons_tres with CR_Core, MpiDefault=pmix (Debian's Open MPI 4.1 has PMIx
# only: with --mpi=pmi2 its MPI_Init fails). TmpFS (PMIx's per-step files) is DIR/tmp/NODE.
# Exit: 0 done; 1 a daemon did not start or stop (its log is shown); 2 usage;
# 3 Slurm or munge not installed, not root, or the emulated cluster cannot come up.
set -euo pipefail

DIR=${PARABENCH_SLURM_DIR:-/tmp/parabench-slurm}
PORT=${PARABENCH_SLURM_PORT:-16817}
TASK=${PARABENCH_SLURM_TASK:-affinity}
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
CMD="" NNODES="" RATE=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) [ $# -ge 2 ] || { echo "local-slurm.sh: --dir needs a directory" >&2; exit 2; }
               DIR=$2; shift ;;
        up|down|status|env) [ -z "$CMD" ] || { echo "local-slurm.sh: one command at a time" >&2; exit 2; }
               CMD=$1 ;;
        --nodes) [ $# -ge 2 ] || { echo "local-slurm.sh: --nodes needs a number of nodes, 2..64" >&2; exit 2; }
               NNODES=$2; shift ;;
        --rate) [ $# -ge 2 ] || { echo "local-slurm.sh: --rate needs a rate, e.g. 1gbit (see emulate-cluster.sh --help)" >&2; exit 2; }
               RATE=$2; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "local-slurm.sh: unknown argument '$1'; expected [--dir DIR] up [--nodes N [--rate RATE]]|down|status|env" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$CMD" ] || { echo "local-slurm.sh: expected up, down, status or env; see --help" >&2; exit 2; }
if [ -n "$NNODES" ]; then
    [ "$CMD" = up ] || { echo "local-slurm.sh: --nodes goes with up only" >&2; exit 2; }
    [[ "$NNODES" =~ ^[0-9]{1,2}$ ]] && [ "$((10#$NNODES))" -ge 2 ] && [ "$((10#$NNODES))" -le 64 ] \
        || { echo "local-slurm.sh: --nodes '$NNODES' is not a number of nodes in 2..64 (one node: leave --nodes out)" >&2; exit 2; }
    NNODES=$((10#$NNODES))
fi
[ -z "$RATE" ] || [ -n "$NNODES" ] || { echo "local-slurm.sh: --rate goes with --nodes N (it shapes the emulated links)" >&2; exit 2; }
[[ "$PORT" =~ ^[0-9]+$ ]] && [ "$PORT" -ge 1024 ] && [ "$PORT" -le 65534 ] \
    || { echo "local-slurm.sh: PARABENCH_SLURM_PORT '$PORT' is not a port in 1024..65534" >&2; exit 2; }
[[ "$TASK" =~ ^(none|affinity)$ ]] || { echo "local-slurm.sh: PARABENCH_SLURM_TASK '$TASK' is not none or affinity" >&2; exit 2; }
case "$DIR" in /*) ;; *) DIR=$PWD/$DIR ;; esac
CONF=$DIR/slurm.conf
RUN=$DIR/run LOG=$DIR/log
export SLURM_CONF=$CONF
EMU=$(cd "$(dirname "$0")" && pwd)/emulate-cluster.sh
EMU_NET=198.18.0 # emulate-cluster.sh's addresses: node K is .(K+1), the bridge .254
# The nodes: those of the running cluster (DIR/nodes, written by up), this host by default.
NODES=("$(hostname -s)")
[ -s "$DIR/nodes" ] && read -r -a NODES <"$DIR/nodes"
# The daemons in the order they start, by pid file name (run/NAME.pid); `down` stops them in reverse.
daemons() { local n; echo munged slurmctld; for n in "${NODES[@]}"; do echo "slurmd-$n"; done; }

if [ "$CMD" = env ]; then printf 'export SLURM_CONF=%q\n' "$CONF"; exit 0; fi

# pid_of NAME: the PID in run/NAME.pid when that process is alive and is the daemon
# (NAME up to a '-': slurmd-pbnode0 is a slurmd; a PID reused by something else after a
# crash is not ours).
pid_of() {
    local f=$RUN/$1.pid p
    [ -r "$f" ] || return 1
    p=$(tr -dc '0-9' <"$f")
    [ -n "$p" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "${1%%-*}" ] && echo "$p"
}
# Job steps left running: the slurmstepd processes that hold a file under DIR open
# (they log to DIR/log/slurmd-NODE.log; a `tail -f` of that log is not one of them),
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
# node_states: "NODE STATE" per node, as slurmctld sees them; all_idle: every node idle.
node_states() { sinfo -h -N -o '%N %T' 2>/dev/null | sort -u; }
all_idle() {
    local states
    states=$(node_states) && [ "$(grep -c ' idle$' <<<"$states")" -eq ${#NODES[@]} ]
}
# emu_nodes: the number of nodes of the emulated cluster that is up (intact), or nothing.
emu_nodes() { "$EMU" status 2>/dev/null | sed -n '/^emulated cluster: up$/,$ s/^  nodes: \([0-9]*\) .*/\1/p'; }

status() {
    local d p up=0 all=0
    for d in $(daemons); do
        all=$((all + 1))
        if p=$(pid_of "$d"); then echo "$d: running (pid $p)"; up=$((up + 1)); else echo "$d: not running"; fi
    done
    if [ "$up" -eq 0 ]; then echo "local Slurm: down ($DIR)"; return 1; fi
    if [ "$up" -lt "$all" ]; then echo "local Slurm: DAMAGED, some daemons are missing (run down, then up)"; return 1; fi
    echo "local Slurm: up ($CONF); nodes: $(node_states | tr '\n' ' ')"
    sinfo 2>/dev/null | sed 's/^/  /'
    return 0
}

down() {
    local d p left alive
    if [ -n "$(pid_of slurmctld)" ]; then # jobs first: their slurmstepd outlive slurmd otherwise
        scancel --full --quiet --user=root 2>/dev/null || true
        for _ in $(seq 50); do
            [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
    for d in $(daemons | tac); do
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
    for d in $(daemons); do
        if pid_of "$d" >/dev/null; then echo "local-slurm.sh: $d is still running" >&2; return 1; fi
    done
    rm -f "$DIR/nodes"
    # The emulated cluster goes too when this script brought it up.
    if [ -e "$RUN/emulated-cluster" ]; then
        "$EMU" down || { echo "local-slurm.sh: $EMU down failed; the emulated cluster is still up" >&2; return 1; }
        rm -f "$RUN/emulated-cluster"
    fi
    echo "local Slurm: down"
}

# emulated: whether the nodes are emulate-cluster.sh's (pbnodeK), not this host.
emulated() { [[ "${NODES[0]}" =~ ^pbnode[0-9]+$ ]]; }

write_conf() {
    local hw ctl=${NODES[0]} k what="a one-node cluster on this host"
    # Sockets, cores and threads as slurmd finds them: a node whose configuration
    # claims more than the hardware has is drained at registration.
    hw=$(slurmd -C 2>/dev/null | head -n 1 | grep -o 'CPUs=[0-9]* Boards=[0-9]* SocketsPerBoard=[0-9]* CoresPerSocket=[0-9]* ThreadsPerCore=[0-9]*') \
        || hw="CPUs=$(nproc)"
    if emulated; then
        ctl="$(hostname -s)($EMU_NET.254)" # the root namespace, as the nodes reach it: the bridge
        what="${#NODES[@]} emulated nodes (scripts/emulate-cluster.sh), the controller on this host"
    fi
    : >"$DIR/plugstack.conf" # none of /etc/slurm/plugstack.conf.d's SPANK plugins
    cat >"$CONF" <<EOF
# Written by scripts/local-slurm.sh: $what; every path is under $DIR.
ClusterName=parabench
SlurmctldHost=$ctl
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$RUN/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd-%n.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd-%n.log
PlugStackConfig=$DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/$TASK
TmpFS=$DIR/tmp/%n
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
EOF
    if emulated; then
        for k in "${!NODES[@]}"; do
            echo "NodeName=${NODES[$k]} NodeAddr=$EMU_NET.$((k + 1)) NodeHostname=${NODES[$k]} $hw State=UNKNOWN" >>"$CONF"
        done
    else
        echo "NodeName=${NODES[0]} $hw State=UNKNOWN" >>"$CONF"
    fi
    echo "PartitionName=local Nodes=$(IFS=,; echo "${NODES[*]}") Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >>"$CONF"
}

# start NAME COMMAND...: run a daemon (it forks and writes run/NAME.pid), wait for the pid file.
# The daemon gets none of our descriptors above 2: a lock the caller holds (flock on
# the emulated cluster's lock file) would otherwise stay held as long as the daemon runs.
start() {
    local d=$1 p; shift
    "$@" >>"$LOG/$d.start.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- || { echo "local-slurm.sh: $d failed to start (exit $?)" >&2; cat "$LOG/$d.start.log" >&2; show_log "$d"; return 1; }
    for _ in $(seq 50); do
        p=$(pid_of "$d") && { echo "$d: started (pid $p)"; return 0; }
        sleep 0.2
    done
    echo "local-slurm.sh: $d did not write $RUN/$d.pid within 10 s" >&2
    cat "$LOG/$d.start.log" >&2 2>/dev/null; show_log "$d"
    return 1
}

# start_slurmd NODE: its slurmd, inside the node's network namespace and a UTS
# namespace with the node's hostname when the node is emulated (the job steps and
# tasks it starts inherit both: MPI sees a host per node, and its TCP uses the node's link).
start_slurmd() {
    local n=$1
    mkdir -p "$DIR/spool/$n" "$DIR/tmp/$n"
    if emulated; then
        # nsenter, not `ip netns exec`: that one remounts /sys, and slurmd then finds no
        # /sys/fs/cgroup ("Unable to initialize cgroup plugin").
        # shellcheck disable=SC2016 # $1 and $@ are the inner shell's
        start "slurmd-$n" nsenter --net="/run/netns/$n" unshare --uts \
            sh -c 'hostname "$1" && shift && exec "$@"' sh "$n" slurmd -f "$CONF" -N "$n"
    else
        start "slurmd-$n" slurmd -f "$CONF" -N "$n"
    fi
}

# emu_up: the emulated cluster with NNODES nodes: the one that is up, or one this
# script brings up (and `down` takes down: run/emulated-cluster says so).
emu_up() {
    local have
    have=$(emu_nodes)
    if [ -n "$have" ]; then
        [ "$have" = "$NNODES" ] || { echo "local-slurm.sh: an emulated cluster with $have nodes is up (not $NNODES); take it down first ($EMU down) or use --nodes $have" >&2; exit 3; }
        [ -z "$RATE" ] || echo "local-slurm.sh: the emulated cluster is up already; --rate $RATE is not applied (its rate: $EMU status)" >&2
        return 0
    fi
    local rc=0
    "$EMU" up --nodes "$NNODES" --rate "${RATE:-1gbit}" || rc=$?
    # Its usage errors (a bad --rate) are ours; anything else is the environment's.
    [ "$rc" -eq 0 ] || { echo "local-slurm.sh: $EMU up failed (exit $rc)" >&2; [ "$rc" -eq 2 ] && exit 2; exit 3; }
    mkdir -p "$RUN"
    : >"$RUN/emulated-cluster"
}

up() {
    local d missing=() want=() n
    for d in munged mungekey slurmctld slurmd sinfo srun sbatch; do
        command -v "$d" >/dev/null 2>&1 || missing+=("$d")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "local-slurm.sh: not installed: ${missing[*]}; run scripts/install-deps.sh --for slurm" >&2
        exit 3
    fi
    [ "$(id -u)" -eq 0 ] || { echo "local-slurm.sh: run as root (SlurmUser=root, jobs run as root)" >&2; exit 3; }
    want=("$(hostname -s)")
    [ -z "$NNODES" ] || { want=(); for ((n = 0; n < NNODES; n++)); do want+=("pbnode$n"); done; }
    if [ "${NODES[*]}" = "${want[*]}" ] && status >/dev/null &&
        ! node_states | grep -qv ' \(idle\|mixed\|allocated\|completing\)$'; then
        echo "local Slurm: already up ($CONF); nodes: $(node_states | tr '\n' ' ')"; return 0
    fi
    # Whatever is left of an earlier, broken start (or another cluster) goes first: a fresh cluster every time.
    down >/dev/null
    NODES=("${want[@]}")
    for p in "$PORT" $((PORT + 1)); do
        if ss -Htln "sport = :$p" 2>/dev/null | grep -q .; then
            echo "local-slurm.sh: port $p is in use; choose others with PARABENCH_SLURM_PORT=N (N and N+1)" >&2
            exit 1
        fi
    done
    rm -rf "$DIR/state" "$DIR/spool" "$DIR/tmp" "$LOG"
    mkdir -p "$DIR" "$RUN" "$LOG" "$DIR/state" "$DIR/spool" "$DIR/etc" "$DIR/tmp"
    chmod 0700 "$DIR" "$RUN" "$DIR/etc"
    [ -z "$NNODES" ] || emu_up
    echo "${NODES[*]}" >"$DIR/nodes"
    [ -s "$DIR/etc/munge.key" ] || mungekey --create --keyfile="$DIR/etc/munge.key" >/dev/null
    chmod 0600 "$DIR/etc/munge.key"
    write_conf

    start munged munged --force --socket="$RUN/munge.socket" --key-file="$DIR/etc/munge.key" \
        --pid-file="$RUN/munged.pid" --log-file="$LOG/munged.log" --seed-file="$DIR/state/munged.seed" || { down >/dev/null; exit 1; }
    start slurmctld slurmctld -f "$CONF" || { down >/dev/null; exit 1; }
    for n in "${NODES[@]}"; do start_slurmd "$n" || { down >/dev/null; exit 1; }; done

    for _ in $(seq 120); do
        all_idle && { echo "local Slurm: up ($CONF); nodes: $(node_states | tr '\n' ' ')"; echo "  eval \"\$($0 --dir $DIR env)\" points sbatch, srun and sinfo at it"; return 0; }
        sleep 0.5
    done
    echo "local-slurm.sh: not every node is idle after 60 s (states: $(node_states | tr '\n' ' ' || true))" >&2
    sinfo -N -l 2>&1 | sed 's/^/  /' >&2 || true
    show_log slurmctld; for n in "${NODES[@]}"; do show_log "slurmd-$n"; done
    down >/dev/null
    exit 1
}

case "$CMD" in
    up) up ;;
    down) down ;;
    status) status ;;
esac
