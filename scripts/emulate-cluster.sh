#!/usr/bin/env bash
# shellcheck disable=SC2001  # sed 's/^/  /' indents multi-line text; clearer than ${//}
# Emulate a small multi-node cluster on this one machine, so that parabench can be
# checked to tell intra-node from inter-node placement.
#
#   emulate-cluster.sh up --nodes N --rate RATE [--slots S] [--burst BYTES] [--mtu M] [--force]
#   emulate-cluster.sh down [--force]
#   emulate-cluster.sh status
#   emulate-cluster.sh slow NODE RATE
#   emulate-cluster.sh mpirun MPIRUN-ARGS...
#   emulate-cluster.sh env
#
# Each "node" is a network namespace pbnodeI (I = 0..N-1) with one veth (pbeth0 inside,
# pbvI outside) into the bridge pbbr0 in the root namespace. Addresses come from
# 198.18.0.0/24 (inside 198.18.0.0/15, the benchmark-testing range): node I is
# 198.18.0.(I+1), the bridge 198.18.0.254. RATE shapes both directions of every node's
# uplink with tc tbf: egress of pbeth0 inside the node (node -> bridge) and egress of pbvI
# (bridge -> node). There is no added latency (no netem here), only bandwidth.
#
# `mpirun` runs one Open MPI job over the nodes: a hostfile naming them, the rsh agent
# scripts/emulate-cluster-rsh.sh (enters the node's namespace with its own hostname), no
# tree spawn, TCP restricted to the emulated subnet, --bind-to none, --oversubscribe and,
# as root, --allow-run-as-root. Place ranks with -np and --npernode / --map-by, e.g.
#   emulate-cluster.sh mpirun -np 4 --npernode 2 ./build/bin/p2p_sweep --mode bw
# puts ranks 0,1 on pbnode0 and 2,3 on pbnode1.
#
# What `up` made is recorded in $STATE_DIR/state; `down` removes exactly that. `up` with
# the configuration already up is a no-op; with another one it re-creates the cluster.
# With PB_EMU_OWNER set, `up` records it as the cluster's owner: another owner's cluster
# is not re-created, reshaped (`slow`) or taken down without --force.
# Needs root (exit 3 otherwise). Exit codes: 0 ok, 2 usage, 3 environment/setup error;
# `mpirun` returns mpirun's own status.
set -euo pipefail

ME=emulate-cluster.sh
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RSH_AGENT=$SCRIPT_DIR/emulate-cluster-rsh.sh

NS_PREFIX=pbnode          # namespaces pbnode0, pbnode1, ...
VETH_PREFIX=pbv           # root-side veth ends pbv0, pbv1, ...
NS_IF=pbeth0              # the node's end, inside its namespace
BRIDGE=pbbr0
NET=198.18.0              # the /24 used, inside 198.18.0.0/15
SUBNET=$NET.0/24
BRIDGE_IP=$NET.254
MAX_NODES=64
DEFAULT_MTU=9000          # jumbo frames: 1500 costs this small machine too much CPU
TBF_LATENCY=20ms          # how long tbf may queue a packet before dropping it
STATE_DIR=${PB_EMU_STATE_DIR:-/run/parabench-emucluster}
STATE=$STATE_DIR/state
HOSTFILE=$STATE_DIR/hostfile
LOCK=$STATE_DIR.lock

die()   { local rc=$1; shift; echo "$ME: $*" >&2; exit "$rc"; }
usage_error() { echo "$ME: $*" >&2; echo "run '$ME --help' for usage" >&2; exit 2; }
info()  { echo "$ME: $*" >&2; }

usage() {
    cat <<EOF
usage:
  $ME up --nodes N --rate RATE [--slots S] [--burst BYTES] [--mtu M]
      Make N emulated nodes (1..$MAX_NODES) joined by a bridge; shape each node's uplink,
      both directions, to RATE: a number with unit bit, kbit, mbit or gbit (1mbit..100gbit),
      e.g. 1gbit, 500mbit, 2.5gbit; 0 or none: unshaped. S: slots per node in the hostfile
      (default: this machine's cores, $(nproc 2>/dev/null || echo 1)). BYTES: tbf burst, with optional
      K/M suffix (1024^n); default the larger of 64K and 0.5 ms at RATE. M: MTU of the
      emulated links, 1280..65000 (default $DEFAULT_MTU).
      Re-running with the same configuration does nothing; another one re-creates,
      unless the cluster belongs to another PB_EMU_OWNER (--force: re-create anyway).
  $ME down [--force]
      Remove everything 'up' made (recorded in $STATE), killing processes left in the
      nodes; refused when the cluster belongs to another PB_EMU_OWNER. --force also removes objects with this script's names (${NS_PREFIX}N
      namespaces, ${VETH_PREFIX}N links, $BRIDGE) that no state file records.
  $ME status
      Say whether the cluster is up, its configuration and per-uplink traffic.
  $ME slow NODE RATE
      Shape node NODE's uplink (0..N-1), both directions, to RATE instead of the
      cluster's, until the next up or down: one bad link for the report to find.
  $ME mpirun MPIRUN-ARGS...
      Run mpirun over the nodes with the flags the emulation needs. Choose the layout
      with -np and --npernode / --map-by; do not pass --hostfile.
  $ME env
      Print shell exports (OMPI_MCA_*, PB_EMU_HOSTFILE) that make a plain
      'mpirun --hostfile \$PB_EMU_HOSTFILE' (run_all.sh --hostfile) reach the nodes:
      eval "\$($ME env)".
Needs root (exit 3 otherwise). Exit codes: 0 ok, 2 usage error, 3 environment error.
EOF
}

need_root() {
    [ "$(id -u)" -eq 0 ] || die 3 "$1 needs root (network namespaces, veth, tc); run it as root, e.g. with sudo"
}

need_tools() {
    local t
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || die 3 "'$t' not found in PATH; install it (scripts/install-deps.sh)"
    done
}

# parse_rate TEXT -> prints bits/s (0 = unshaped); exit 2 on anything else.
parse_rate() {
    local r=${1,,} num unit
    case $r in 0|none|off|unshaped) echo 0; return ;; esac
    if [[ $r =~ ^([0-9]+(\.[0-9]+)?)(bit|kbit|mbit|gbit)$ ]]; then
        num=${BASH_REMATCH[1]}; unit=${BASH_REMATCH[3]}
    else
        usage_error "--rate '$1': expected a number with unit bit, kbit, mbit or gbit (e.g. 1gbit, 500mbit, 2.5gbit), or 0/none for unshaped"
    fi
    local bps
    bps=$(awk -v n="$num" -v u="$unit" 'BEGIN {
        m = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : 1
        printf "%.0f", n * m }')
    if [ "$bps" -lt 1000000 ] || [ "$bps" -gt 100000000000 ]; then
        usage_error "--rate '$1': out of range; accepted 1mbit..100gbit, or 0/none for unshaped"
    fi
    echo "$bps"
}

# parse_bytes TEXT -> bytes (K/M = 1024^n); exit 2 otherwise.
parse_bytes() {
    local b=$1
    if [[ $b =~ ^([0-9]+)([kKmM]?)$ ]]; then
        local n=${BASH_REMATCH[1]}
        case ${BASH_REMATCH[2]} in k|K) n=$((n * 1024)) ;; m|M) n=$((n * 1048576)) ;; esac
        if [ "$n" -ge 2048 ] && [ "$n" -le $((64 * 1048576)) ]; then echo "$n"; return; fi
    fi
    usage_error "--burst '$1': expected bytes 2048..64M, with optional K or M suffix (1024^n), e.g. 64K"
}

human_rate() {
    awk -v b="$1" 'BEGIN { if (b == 0) print "unshaped";
        else if (b % 1e9 == 0) printf "%dgbit\n", b / 1e9;
        else if (b % 1e6 == 0) printf "%dmbit\n", b / 1e6;
        else printf "%dkbit\n", b / 1e3 }'
}

# ---------------------------------------------------------------- state

record() { echo "$*" >>"$STATE"; }

# The cluster has an owner: PB_EMU_OWNER when it was brought up (empty: anyone's). Another
# owner's cluster is neither rebuilt, reshaped nor taken down, unless --force says so.
OWNER=${PB_EMU_OWNER:-}
[[ $OWNER =~ ^[A-Za-z0-9._:@-]{0,128}$ ]] || { echo "$ME: variable PB_EMU_OWNER: '$OWNER' is not accepted; expected up to 128 letters, digits or ._:@-" >&2; exit 2; }
state_owner() { [ -f "$STATE" ] && sed -n 's/^owner //p' "$STATE" | head -1; }
check_owner() {
    local owner; owner=$(state_owner)
    [ -z "$owner" ] || [ "$owner" = "$OWNER" ] ||
        die 3 "$1: the emulated cluster up now belongs to '$owner' (PB_EMU_OWNER when it was brought up); not touching it: run with PB_EMU_OWNER=$owner$([ "$1" = slow ] || echo ", or add --force")"
}

state_config() { [ -f "$STATE" ] && sed -n 's/^config //p' "$STATE" | head -1; }

# Is everything the state file lists still there and wired as it should be?
state_intact() {
    local kind name
    [ -f "$STATE" ] || return 1
    grep -q '^complete$' "$STATE" || return 1
    while read -r kind name; do
        case $kind in
            netns)  [ -e "/run/netns/$name" ] || return 1 ;;
            veth)   ip link show dev "$name" 2>/dev/null | grep -q "master $BRIDGE" || return 1 ;;
            bridge) ip -4 addr show dev "$name" 2>/dev/null | grep -q "inet $BRIDGE_IP/" || return 1 ;;
        esac
    done <"$STATE"
}

ours_netns()  { [[ $1 =~ ^${NS_PREFIX}[0-9]{1,2}$ ]]; }
ours_veth()   { [[ $1 =~ ^${VETH_PREFIX}[0-9]{1,2}$ ]]; }

kill_netns_procs() {
    local ns=$1 pids
    pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    [ -n "${pids// /}" ] || return 0
    info "stopping processes left in $ns: $pids"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do
        pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
        [ -n "${pids// /}" ] || return 0
        sleep 0.2
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
}

del_netns() {
    local ns=$1
    ours_netns "$ns" || return 0
    [ -e "/run/netns/$ns" ] || return 0
    kill_netns_procs "$ns"
    ip netns delete "$ns" 2>/dev/null || info "warning: could not delete namespace $ns"
}

del_link() {
    local dev=$1
    ip link show dev "$dev" >/dev/null 2>&1 || return 0
    # A namespace just deleted takes its veth pair with it, asynchronously: a link seen a
    # moment ago may be gone by now, which is fine.
    if ! ip link delete dev "$dev" 2>/dev/null && ip link show dev "$dev" >/dev/null 2>&1; then
        info "warning: could not delete link $dev"
    fi
}

# Remove what the state file lists, newest first, then the state itself.
teardown_from_state() {
    [ -f "$STATE" ] || return 0
    local kind name
    while read -r kind name; do
        case $kind in
            netns)  del_netns "$name" ;;
            veth)   if ours_veth "$name"; then del_link "$name"; fi ;;
            bridge) if [ "$name" = "$BRIDGE" ]; then del_link "$name"; fi ;;
        esac
    done < <(tac "$STATE")
    rm -f "$STATE" "$HOSTFILE"
    rmdir "$STATE_DIR" 2>/dev/null || true
}

# Objects with our names that exist now (whoever made them).
existing_ours() {
    local n
    for n in $(ip netns list 2>/dev/null | awk '{print $1}'); do
        if ours_netns "$n"; then echo "netns $n"; fi
    done
    for n in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//'); do
        if ours_veth "$n"; then echo "veth $n"; fi
        if [ "$n" = "$BRIDGE" ]; then echo "bridge $n"; fi
    done
    return 0
}

# ---------------------------------------------------------------- up

# step DESCRIPTION -- command...: run it; on failure undo everything and exit 3.
step() {
    local desc=$1; shift 2
    local err rc=0
    err=$("$@" 2>&1 >/dev/null) || rc=$?
    if [ "$rc" -ne 0 ]; then
        info "up: $desc failed: ${err:-exit status $rc}"
        info "up: undoing what was made"
        teardown_from_state
        exit 3
    fi
}

shape() {   # shape NETNS|"" DEV
    local ns=$1 dev=$2
    local -a tcn=(tc)
    [ -n "$ns" ] && tcn=(tc -n "$ns")
    "${tcn[@]}" qdisc replace dev "$dev" root tbf rate "${RATE_BPS}bit" burst "$BURST" latency "$TBF_LATENCY"
}

cmd_up() {
    local nodes="" rate="" slots="" burst="" mtu=$DEFAULT_MTU force=0
    while [ $# -gt 0 ]; do
        case $1 in
            --nodes|-n) [ $# -ge 2 ] || usage_error "--nodes needs a value"; nodes=$2; shift 2 ;;
            --nodes=*)  nodes=${1#*=}; shift ;;
            --rate|-r)  [ $# -ge 2 ] || usage_error "--rate needs a value"; rate=$2; shift 2 ;;
            --rate=*)   rate=${1#*=}; shift ;;
            --slots)    [ $# -ge 2 ] || usage_error "--slots needs a value"; slots=$2; shift 2 ;;
            --slots=*)  slots=${1#*=}; shift ;;
            --burst)    [ $# -ge 2 ] || usage_error "--burst needs a value"; burst=$2; shift 2 ;;
            --burst=*)  burst=${1#*=}; shift ;;
            --mtu)      [ $# -ge 2 ] || usage_error "--mtu needs a value"; mtu=$2; shift 2 ;;
            --mtu=*)    mtu=${1#*=}; shift ;;
            --force)    force=1; shift ;;
            -h|--help)  usage; exit 0 ;;
            *) usage_error "up: unknown option '$1'; accepted: --nodes N --rate RATE [--slots S] [--burst BYTES] [--mtu M] [--force]" ;;
        esac
    done
    [ -n "$nodes" ] || usage_error "up: --nodes N is required (N = 1..$MAX_NODES)"
    [ -n "$rate" ]  || usage_error "up: --rate RATE is required (e.g. 1gbit, 500mbit, 0/none for unshaped)"
    if ! [[ $nodes =~ ^[0-9]{1,3}$ ]] || [ $((10#$nodes)) -lt 1 ] || [ $((10#$nodes)) -gt $MAX_NODES ]; then
        usage_error "--nodes '$nodes': expected an integer 1..$MAX_NODES"
    fi
    nodes=$((10#$nodes))
    RATE_BPS=$(parse_rate "$rate")
    if [ -z "$slots" ]; then slots=$(nproc 2>/dev/null || echo 1); fi
    if ! [[ $slots =~ ^[0-9]{1,4}$ ]] || [ $((10#$slots)) -lt 1 ]; then
        usage_error "--slots '$slots': expected an integer 1..9999"
    fi
    slots=$((10#$slots))
    if ! [[ $mtu =~ ^[0-9]{4,5}$ ]] || [ $((10#$mtu)) -lt 1280 ] || [ $((10#$mtu)) -gt 65000 ]; then
        usage_error "--mtu '$mtu': expected an integer 1280..65000"
    fi
    mtu=$((10#$mtu))
    if [ -n "$burst" ]; then
        BURST=$(parse_bytes "$burst")
    else
        BURST=$((RATE_BPS / 8 / 2000))          # 0.5 ms at the rate
        [ "$BURST" -ge 65536 ] || BURST=65536
    fi
    [ "$RATE_BPS" -ne 0 ] || BURST=0
    if [ "$RATE_BPS" -ne 0 ] && [ "$BURST" -lt $((mtu + 100)) ]; then
        usage_error "--burst $BURST: must exceed the MTU ($mtu) or tbf drops every full-size packet"
    fi

    need_root "up"
    need_tools ip tc unshare flock awk tac
    mkdir -p "$(dirname "$LOCK")"
    exec 9>"$LOCK"
    flock -w 30 9 || die 3 "up: another $ME is running (lock $LOCK held for 30 s)"

    local config="nodes=$nodes rate=$RATE_BPS burst=$BURST slots=$slots mtu=$mtu"
    if [ -f "$STATE" ]; then
        if [ "$(state_config)" = "$config" ] && state_intact; then
            info "already up: $nodes node(s), $(human_rate "$RATE_BPS") (nothing to do)"
            return 0
        fi
        [ "$force" -eq 1 ] || check_owner "up"
        if [ "$(state_config)" = "$config" ]; then
            info "up: the cluster in $STATE is incomplete or damaged; re-creating it"
        else
            info "up: re-creating the cluster (was: $(state_config); now: $config)"
        fi
        teardown_from_state
    fi

    # Nothing with our names may exist that we did not record.
    local stale
    stale=$(existing_ours)
    if [ -n "$stale" ]; then
        die 3 "up: objects with this script's names exist but no state file records them:
$(echo "$stale" | sed 's/^/  /')
remove them with '$ME down --force' (they can only have come from an earlier run)"
    fi
    local used
    used=$(ip -4 -o addr show to "$SUBNET" 2>/dev/null | awk '{print $2, $4}')
    [ -z "$used" ] || die 3 "up: addresses in $SUBNET are already in use here ($used); not touching them"

    # Can we make namespaces at all? Say so plainly if not.
    mkdir -p "$STATE_DIR"
    : >"$STATE"
    local err
    if ! err=$(ip netns add "${NS_PREFIX}0" 2>&1); then
        rm -f "$STATE"; rmdir "$STATE_DIR" 2>/dev/null || true
        die 3 "up: network namespaces are not permitted here (ip netns add: $err); an unprivileged container or a missing CAP_SYS_ADMIN cannot emulate a cluster"
    fi
    record "netns ${NS_PREFIX}0"

    step "creating bridge $BRIDGE" -- ip link add "$BRIDGE" type bridge
    record "bridge $BRIDGE"
    step "setting MTU $mtu on $BRIDGE" -- ip link set "$BRIDGE" mtu "$mtu"
    step "configuring bridge $BRIDGE" -- ip addr add "$BRIDGE_IP/24" dev "$BRIDGE"
    step "bringing up bridge $BRIDGE" -- ip link set "$BRIDGE" up

    local i ns veth ip
    for ((i = 0; i < nodes; i++)); do
        ns=$NS_PREFIX$i; veth=$VETH_PREFIX$i; ip=$NET.$((i + 1))
        if [ "$i" -gt 0 ]; then
            step "creating namespace $ns" -- ip netns add "$ns"
            record "netns $ns"
        fi
        step "creating veth $veth <-> $ns/$NS_IF" -- ip link add "$veth" type veth peer name "$NS_IF" netns "$ns"
        record "veth $veth"
        step "setting MTU $mtu on $veth" -- ip link set "$veth" mtu "$mtu"
        step "setting MTU $mtu on $ns/$NS_IF" -- ip -n "$ns" link set "$NS_IF" mtu "$mtu"
        step "attaching $veth to $BRIDGE" -- ip link set "$veth" master "$BRIDGE"
        step "bringing up $veth" -- ip link set "$veth" up
        step "bringing up lo in $ns" -- ip -n "$ns" link set lo up
        step "addressing $ns/$NS_IF" -- ip -n "$ns" addr add "$ip/24" dev "$NS_IF"
        step "bringing up $ns/$NS_IF" -- ip -n "$ns" link set "$NS_IF" up
        if [ "$RATE_BPS" -gt 0 ]; then
            step "shaping $ns/$NS_IF (node -> bridge; is tc tbf available?)" -- shape "$ns" "$NS_IF"
            step "shaping $veth (bridge -> $ns; is tc tbf available?)" -- shape "" "$veth"
        fi
    done

    : >"$HOSTFILE.tmp"
    for ((i = 0; i < nodes; i++)); do echo "$NS_PREFIX$i slots=$slots" >>"$HOSTFILE.tmp"; done
    mv "$HOSTFILE.tmp" "$HOSTFILE"
    # The config line goes last but one: a state without it (or without "complete") is
    # an interrupted `up`, which the next `up` re-creates.
    record "config $config"
    [ -z "$OWNER" ] || record "owner $OWNER"
    record "complete"
    info "up: $nodes node(s) ${NS_PREFIX}0..$NS_PREFIX$((nodes - 1)) on $SUBNET via $BRIDGE, MTU $mtu, uplinks $(human_rate "$RATE_BPS")$([ "$RATE_BPS" -gt 0 ] && echo " (tbf burst $BURST B)")"
}

# ---------------------------------------------------------------- down / status

cmd_down() {
    local force=0
    while [ $# -gt 0 ]; do
        case $1 in
            --force) force=1; shift ;;
            -h|--help) usage; exit 0 ;;
            *) usage_error "down: unknown option '$1'; accepted: --force" ;;
        esac
    done
    need_root "down"
    need_tools ip flock tac
    mkdir -p "$(dirname "$LOCK")"
    exec 9>"$LOCK"
    flock -w 30 9 || die 3 "down: another $ME is running (lock $LOCK held for 30 s)"
    local had=0
    [ -f "$STATE" ] && had=1
    [ "$force" -eq 1 ] || check_owner "down"
    teardown_from_state
    local left
    left=$(existing_ours)
    if [ -n "$left" ]; then
        if [ "$force" -eq 1 ]; then
            local kind name
            while read -r kind name; do
                case $kind in
                    netns)  del_netns "$name" ;;
                    veth)   del_link "$name" ;;
                    bridge) del_link "$name" ;;
                esac
            done <<<"$left"
            left=$(existing_ours)
            [ -z "$left" ] || die 3 "down: could not remove: $(echo "$left" | tr '\n' ' ')"
            info "down: removed unrecorded objects with this script's names"
        else
            info "down: objects with this script's names remain that no state file records:"
            echo "$left" | sed 's/^/  /' >&2
            die 3 "down: remove them with '$ME down --force'"
        fi
    fi
    rm -f "$LOCK"
    if [ "$had" -eq 1 ]; then info "down: removed the emulated cluster"; else info "down: nothing was up"; fi
}

cmd_status() {
    if [ ! -f "$STATE" ]; then
        echo "emulated cluster: down"
        local left; left=$(existing_ours)
        [ -z "$left" ] || { echo "but these exist with this script's names (see 'down --force'):"; echo "$left" | sed 's/^/  /'; }
        return 0
    fi
    local config nodes rate burst slots mtu
    config=$(state_config)
    if [ -z "$config" ]; then echo "emulated cluster: incomplete (an interrupted 'up'; run 'up' or 'down')"; return 0; fi
    nodes=$(sed -n 's/.*nodes=\([0-9]*\).*/\1/p' <<<"$config")
    rate=$(sed -n 's/.*rate=\([0-9]*\).*/\1/p' <<<"$config")
    burst=$(sed -n 's/.*burst=\([0-9]*\).*/\1/p' <<<"$config")
    slots=$(sed -n 's/.*slots=\([0-9]*\).*/\1/p' <<<"$config")
    mtu=$(sed -n 's/.*mtu=\([0-9]*\).*/\1/p' <<<"$config")
    if state_intact; then echo "emulated cluster: up"; else echo "emulated cluster: DAMAGED (some objects are missing; run 'up' again or 'down')"; fi
    echo "  nodes: $nodes (${NS_PREFIX}0..$NS_PREFIX$((nodes - 1))), $slots slot(s) each, subnet $SUBNET, bridge $BRIDGE $BRIDGE_IP, MTU $mtu"
    echo "  uplink rate: $(human_rate "$rate")$([ "$rate" -gt 0 ] && echo ", tbf burst $burst B, both directions")"
    echo "  hostfile: $HOSTFILE; rsh agent: $RSH_AGENT"
    local i
    if [ "$(id -u)" -eq 0 ]; then
        for ((i = 0; i < nodes; i++)); do
            local up down shaped
            up=$(tc -n "$NS_PREFIX$i" -s qdisc show dev "$NS_IF" 2>/dev/null | awk '/Sent/ {print $2; exit}')
            down=$(tc -s qdisc show dev "$VETH_PREFIX$i" 2>/dev/null | awk '/Sent/ {print $2; exit}')
            # The rate the kernel shapes to now (tc's own units), so a 'slow' node shows.
            shaped=$(tc -n "$NS_PREFIX$i" qdisc show dev "$NS_IF" 2>/dev/null |
                awk '/tbf/ { for (f = 1; f < NF; f++) if ($f == "rate") { print $(f + 1); exit } }')
            echo "  $NS_PREFIX$i $NET.$((i + 1)): uplink ${shaped:-unshaped}; sent ${up:-?} B, received ${down:-?} B through it"
        done
    fi
}

# ---------------------------------------------------------------- slow

# slow NODE RATE: one node's uplink, both directions, shaped to RATE instead of
# the cluster's rate (a bad cable, a link that trained down), until the next
# up or down. What a cluster acceptance run must find: the report's suspects.
cmd_slow() {
    [ $# -eq 2 ] || usage_error "slow: expected NODE RATE, e.g. 'slow 2 250mbit'"
    [ -f "$STATE" ] && [ -n "$(state_config)" ] || die 3 "slow: the emulated cluster is not up (run '$ME up' first)"
    check_owner "slow"
    local node=$1 nodes
    nodes=$(sed -n 's/.*nodes=\([0-9]*\).*/\1/p' <<<"$(state_config)")
    if ! [[ $node =~ ^[0-9]{1,3}$ ]] || [ $((10#$node)) -ge "$nodes" ]; then
        usage_error "slow: node '$node': expected a node number 0..$((nodes - 1))"
    fi
    node=$((10#$node))
    RATE_BPS=$(parse_rate "$2")
    [ "$RATE_BPS" -gt 0 ] || usage_error "slow: rate '$2': expected a rate above 0, e.g. 250mbit"
    BURST=$((RATE_BPS / 8 / 2000))   # 0.5 ms at the rate, as up
    [ "$BURST" -ge 65536 ] || BURST=65536
    need_root "slow"
    shape "$NS_PREFIX$node" "$NS_IF" || die 3 "slow: shaping $NS_PREFIX$node/$NS_IF failed"
    shape "" "$VETH_PREFIX$node" || die 3 "slow: shaping $VETH_PREFIX$node failed"
    info "slow: $NS_PREFIX$node's uplink now $(human_rate "$RATE_BPS"), both directions (until the next up or down)"
}

# ---------------------------------------------------------------- mpirun

cmd_mpirun() {
    need_root "mpirun"
    need_tools mpirun ip unshare
    [ -x "$RSH_AGENT" ] || die 3 "mpirun: rsh agent $RSH_AGENT is missing or not executable"
    if [ ! -f "$STATE" ] || [ ! -f "$HOSTFILE" ]; then
        die 3 "mpirun: the emulated cluster is not up; run '$ME up --nodes N --rate RATE' first"
    fi
    state_intact || die 3 "mpirun: the emulated cluster is damaged (see '$ME status'); run 'up' again"
    local a prev=""
    for a in "$@"; do
        case $a in
            --bind-to=*|-bind-to=*)
                [ "${a#*=}" = none ] || usage_error "mpirun: $a: only 'none' works here (every emulated node shares this machine's cores)" ;;
            --hostfile|-hostfile|--machinefile|-machinefile|--default-hostfile|-default-hostfile)
                usage_error "mpirun: do not pass $a; the emulated nodes' hostfile ($HOSTFILE) is used" ;;
        esac
        if [ "$prev" = "--bind-to" ] || [ "$prev" = "-bind-to" ]; then
            [ "$a" = none ] || usage_error "mpirun: --bind-to $a: only 'none' works here (every emulated node shares this machine's cores)"
        fi
        prev=$a
    done
    # Defaults that a user's own --mca or OMPI_MCA_* may override.
    export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}
    export OMPI_MCA_btl_base_warn_component_unused=${OMPI_MCA_btl_base_warn_component_unused:-0}
    local -a cmd=(mpirun --hostfile "$HOSTFILE"
        --mca plm_rsh_agent "$RSH_AGENT"
        --mca plm_rsh_no_tree_spawn 1
        --mca oob_tcp_if_include "$SUBNET"
        --mca btl_tcp_if_include "$SUBNET"
        --oversubscribe)
    # --bind-to none unless the user already said it (mpirun rejects it twice).
    case " $* " in *" --bind-to none "*|*" -bind-to none "*|*" --bind-to=none "*|*" -bind-to=none "*) ;;
        *) cmd+=(--bind-to none) ;; esac
    [ "$(id -u)" -ne 0 ] || cmd+=(--allow-run-as-root)
    [ -z "${PB_EMU_VERBOSE:-}" ] || info "running: ${cmd[*]} $*"
    exec "${cmd[@]}" "$@"
}

# ---------------------------------------------------------------- env

# The settings `mpirun` adds, as environment variables, for a launcher that builds its own
# mpirun line (run_all.sh --hostfile): what an ssh-less cluster needs. --bind-to none and
# --oversubscribe stay the caller's to pass (run_all.sh --bind none).
cmd_env() {
    [ $# -eq 0 ] || usage_error "env: takes no arguments"
    if [ ! -f "$STATE" ] || [ ! -f "$HOSTFILE" ]; then
        die 3 "env: the emulated cluster is not up; run '$ME up --nodes N --rate RATE' first"
    fi
    printf 'export PB_EMU_HOSTFILE=%q\n' "$HOSTFILE"
    printf 'export OMPI_MCA_plm_rsh_agent=%q\n' "$RSH_AGENT"
    printf 'export OMPI_MCA_plm_rsh_no_tree_spawn=1\n'
    printf 'export OMPI_MCA_oob_tcp_if_include=%q\n' "$SUBNET"
    printf 'export OMPI_MCA_btl_tcp_if_include=%q\n' "$SUBNET"
    printf 'export OMPI_MCA_btl=%q\n' "${OMPI_MCA_btl:-self,vader,tcp}"
    printf 'export OMPI_MCA_btl_base_warn_component_unused=0\n'
}

# ---------------------------------------------------------------- main

[ $# -ge 1 ] || { usage >&2; exit 2; }
sub=$1; shift
case $sub in
    up)     cmd_up "$@" ;;
    down)   cmd_down "$@" ;;
    status) cmd_status "$@" ;;
    mpirun) cmd_mpirun "$@" ;;
    env)    cmd_env "$@" ;;
    slow)   cmd_slow "$@" ;;
    -h|--help|help) usage ;;
    *) usage_error "unknown command '$sub'; accepted: up, down, status, slow, mpirun, env" ;;
esac
