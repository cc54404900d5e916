#!/usr/bin/env bash
# Install the Debian packages parabench needs, only those missing.
# Idempotent; quiet when nothing is missing; at most one `apt-get update`.
set -euo pipefail

PKGS=(
  build-essential pkg-config
  openmpi-bin libopenmpi-dev
  hwloc libhwloc-dev
  libopenblas-dev
  libcmocka-dev libcjson-dev
  gnuplot-nox
  iproute2 procps python3
  cppcheck clang clang-tidy
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps.sh: missing packages (${missing[*]}) and not root, no sudo" >&2
    exit 3
  fi
fi
echo "install-deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/parabench-apt.log 2>&1; then
  $SUDO apt-get update -q >>/tmp/parabench-apt.log 2>&1
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/parabench-apt.log 2>&1 || {
    echo "install-deps.sh: apt-get install failed; see /tmp/parabench-apt.log" >&2
    tail -20 /tmp/parabench-apt.log >&2
    exit 3
  }
fi
