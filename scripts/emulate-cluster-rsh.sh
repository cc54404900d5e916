#!/usr/bin/env bash
# Open MPI rsh agent for scripts/emulate-cluster.sh: "log in" to an emulated node.
#
# mpirun calls it as `emulate-cluster-rsh.sh [ssh-style flags] NODE COMMAND...`, the way
# it would call ssh. Instead of a remote login it runs COMMAND (through /bin/sh, as
# sshd would) inside network namespace NODE, in a private UTS namespace whose hostname
# is NODE. The hostname matters: Open MPI names its session directories and vader's
# shared-memory segments after it, and ranks of different "nodes" collide without it.
#
# Only nodes made by emulate-cluster.sh are accepted (pbnodeN with /run/netns/pbnodeN).
set -u
me=emulate-cluster-rsh.sh

# ssh-style flags (Open MPI adds none for an agent not named ssh, but be tolerant).
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
if [ $# -lt 2 ]; then
    echo "$me: usage: $me NODE COMMAND... (an Open MPI plm_rsh_agent)" >&2
    exit 255
fi
node=$1
shift
if ! [[ $node =~ ^pbnode[0-9]{1,2}$ ]]; then
    echo "$me: '$node' is not an emulated node (expected pbnodeN, made by emulate-cluster.sh up)" >&2
    exit 255
fi
if [ ! -e "/run/netns/$node" ]; then
    echo "$me: network namespace $node does not exist; run scripts/emulate-cluster.sh up" >&2
    exit 255
fi
# "$*": like ssh, the remote command is the arguments joined by spaces, run by a shell.
# shellcheck disable=SC2016   # $0 and $1 are the inner shell's, on purpose
exec ip netns exec "$node" unshare --uts -- /bin/sh -c \
    'hostname "$0" || exit 255; exec /bin/sh -c "$1"' "$node" "$*"
