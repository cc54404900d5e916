#!/usr/bin/env bash
# Make sure what parabench needs is there, installing Debian packages only
# where something is missing and apt-get exists.
#
#   scripts/install-deps.sh [--for run|all|slurm|report] [--no-install]
#
#   --for run     only what ./run_all.sh needs (build and run the suite, draw figures)
#   --for all     also what the tests and `make lint` need (default)
#   --for slurm   opt-in: Slurm's controller, node daemon and commands, its PMIx
#                 plugin (srun --mpi=pmix) and munge (slurmctld, slurmd, slurm-client,
#                 slurm-wlm-basic-plugins, munge), and what the emulated nodes need
#                 (nsenter, unshare, ip, tc), for scripts/local-slurm.sh and
#                 tests/integration/test_slurm*.sh; only these, not the rest
#   --for report  opt-in: a headless Chromium, for tools/dev/check-report-browser.py and
#                 tests/integration/test_run_all_spaces.sh (the report as a reader sees it)
#   --no-install  never install: report what is missing and exit 3
#
# Each need is probed directly (a command on PATH, a pkg-config module, a
# library the linker finds), so a system whose Open MPI, BLAS or CUDA comes
# from environment modules or another distribution passes without apt.
# MPI_HOME/bin is searched for mpicc. On a system without apt-get, the message
# names the missing pieces with their dnf packages and the usual `module load`.
# Idempotent; quiet when nothing is missing; at most one `apt-get update`.
# Exit: 0 everything found; 3 something missing and not installed.
set -euo pipefail

FOR=all INSTALL=1
while [ $# -gt 0 ]; do
    case "$1" in
        --for) [ $# -ge 2 ] && [[ "$2" =~ ^(run|all|slurm|report)$ ]] || { echo "install-deps.sh: --for needs run, all, slurm or report" >&2; exit 2; }
               FOR=$2; shift ;;
        --no-install) INSTALL=0 ;;
        *) echo "install-deps.sh: unknown option $1; expected --for run|all|slurm|report, --no-install" >&2; exit 2 ;;
    esac
    shift
done
[ -n "${MPI_HOME:-}" ] && [ -d "$MPI_HOME/bin" ] && PATH=$MPI_HOME/bin:$PATH

have() { command -v "$1" >/dev/null 2>&1; }
pc() { have pkg-config && pkg-config --exists "$1"; }
lib() { pc "$1" || ldconfig -p 2>/dev/null | grep -q "lib$2\.so"; }

# need: Debian package | dnf package | for (run or all) | probe
NEEDS=(
    "build-essential|gcc make|run|have cc && have make"
    "pkg-config|pkgconf-pkg-config|run|have pkg-config"
    "openmpi-bin|openmpi|run|have mpirun"
    "libopenmpi-dev|openmpi-devel|run|have mpicc"
    "hwloc|hwloc|run|have hwloc-bind && have hwloc-calc"
    "libhwloc-dev|hwloc-devel|run|pc hwloc"
    "libopenblas-dev|openblas-devel|run|lib openblas openblas"
    "libcjson-dev|cjson-devel (EPEL)|run|pc libcjson"
    "gnuplot-nox|gnuplot|run|have gnuplot"
    "python3|python3|run|have python3"
    "libcmocka-dev|libcmocka-devel|all|pc cmocka"
    "iproute2|iproute|all|have ip"
    "procps|procps-ng|all|have ps"
    "environment-modules|environment-modules|all|have modulecmd"
    "cppcheck|cppcheck|all|have cppcheck"
    "clang|clang|all|have clang"
    "clang-tidy|clang-tools-extra|all|have clang-tidy"
    "slurmctld|slurm-slurmctld (EPEL)|slurm|have slurmctld"
    "slurmd|slurm-slurmd (EPEL)|slurm|have slurmd"
    "slurm-client|slurm (EPEL)|slurm|have sbatch && have srun && have sinfo"
    "munge|munge|slurm|have munged && have mungekey"
    "slurm-wlm-basic-plugins|slurm-pmix (EPEL)|slurm|compgen -G '/usr/lib*/slurm*/mpi_pmix*.so' >/dev/null || compgen -G '/usr/lib*/*/slurm*/mpi_pmix*.so' >/dev/null"
    "util-linux|util-linux|slurm|have nsenter && have unshare"
    "iproute2|iproute|slurm|have ip && have tc"
    "chromium|chromium (EPEL)|report|have chromium || have chromium-headless-shell || have chromium-browser || have google-chrome"
)

missing=() missing_dnf=()
for n in "${NEEDS[@]}"; do
    IFS='|' read -r deb dnf scope probe <<<"$n"
    # slurm and report are groups of their own: never part of run or all, and ask for nothing else
    if [ "$FOR" = slurm ] || [ "$FOR" = report ]; then [ "$scope" = "$FOR" ] || continue
    else [[ "$scope" =~ ^(slurm|report)$ ]] && continue; fi
    [ "$FOR" = run ] && [ "$scope" = all ] && continue
    eval "$probe" || { missing+=("$deb"); missing_dnf+=("$dnf"); }
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$INSTALL" = 0 ] || ! have apt-get; then
    {
        echo "install-deps.sh: missing: ${missing[*]} (Debian package names)"
        if ! have apt-get; then
            echo "  This system has no apt-get, so nothing was installed. On RHEL, Rocky or Fedora:"
            echo "    dnf install $(printf '%s\n' "${missing_dnf[@]}" | sed 's/ (EPEL)//' | sort -u | tr '\n' ' ')"
            case "${missing_dnf[*]}" in *EPEL*) echo "  ($(printf '%s\n' "${missing_dnf[@]}" | sed -n 's/ (EPEL)//p' | sort -u | tr '\n' ' ')from EPEL: dnf install epel-release first.)" ;; esac
        fi
        echo "  On a cluster with environment modules, load them instead, e.g.:"
        echo "    module load mpi/openmpi-x86_64 openblas hwloc   # names vary by site: see 'module avail'"
        echo "  Then run again. MPI_HOME, CUDA_HOME and NCCL_HOME point the build at non-standard installs."
    } >&2
    exit 3
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if have sudo; then SUDO="sudo"; else
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
