#!/usr/bin/env bash
# make install / make uninstall (docs/install.md): copy the built suite into a prefix,
# or remove exactly what an earlier install put there.
#
#   scripts/install.sh install   BUILD PREFIX [DESTDIR] [MODULEFILESDIR]
#   scripts/install.sh uninstall PREFIX [DESTDIR] [MODULEFILESDIR]
#
# PREFIX/bin                         the binaries, parabench-run-all (a link to run_all.sh) and
#                                    parabench-compare (a link to scripts/compare-runs.py)
# PREFIX/libexec/parabench           what parabench-run-all runs: run_all.sh, suite/, the
#                                    scripts it starts, plots/, install.json
# PREFIX/share/parabench             acceptance/ (threshold examples), install-manifest.txt
# PREFIX/share/doc/parabench         README.md, CHANGELOG.md, docs/
# MODULEFILESDIR/parabench/VERSION   a Tcl modulefile (Environment Modules and Lmod);
#                                    MODULEFILESDIR defaults to PREFIX/share/modulefiles
#
# Files land under DESTDIR/PREFIX; the modulefile names PREFIX alone, so a
# package built with DESTDIR works once installed at PREFIX. Every file, link
# and directory created is listed in PREFIX/share/parabench/install-manifest.txt
# (without DESTDIR), which uninstall reads backwards: files go, and directories
# install created go when empty. A directory that was there before stays.
# uninstall removes nothing when the manifest names a path outside PREFIX and
# MODULEFILESDIR (a directory above them that install made goes only when empty); install refuses to replace a file it did not put there (and
# undoes what it did) unless FORCE=1.
# Exit: 0 done; 2 usage; 3 nothing built, or a path that cannot be written.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "install.sh: $1" >&2; exit "${2:-3}"; }
usage() { die "usage: scripts/install.sh install BUILD PREFIX [DESTDIR] [MODULEFILESDIR] | uninstall PREFIX [DESTDIR] [MODULEFILESDIR]" 2; }
absolute() { case $1 in /*) ;; *) die "$2 '$1' is not an absolute path; expected one such as /usr/local" 2 ;; esac; }
# A newline would split the manifest's lines; the others are Tcl's in the modulefile.
plain_path() { case $1 in *$'\n'* | *[\"\{\}\[\]\$\\]*) die "$2 '$1' holds a newline or one of \" { } [ ] \$ \\; expected a plain path" 2 ;; esac; }

MANIFEST_REL=share/parabench/install-manifest.txt

# ---- install ----
# Each helper records the PREFIX-side path it created in $LIST.
record() { printf '%s\n' "$1" >>"$LIST"; }
dir() { # dir PATH: create PATH (and its missing parents) under DESTDIR
    local d=$1 missing=()
    while [ "$d" != / ] && [ ! -d "$DESTDIR$d" ]; do missing=("$d" "${missing[@]}"); d=$(dirname "$d"); done
    for d in "${missing[@]}"; do mkdir "$DESTDIR$d" && record "$d"; done
}
# not_ours DEST: a file already at DEST was not put there by this install: it is kept (and
# what this install did so far undone) unless FORCE=1 (make install FORCE=1) says to replace it.
not_ours() {
    [ -e "$DESTDIR$1" ] || [ -L "$DESTDIR$1" ] || return 0
    [ "${FORCE:-0}" = 1 ] && { rm -f "$DESTDIR$1"; return 0; }
    remove_listed "$LIST" >/dev/null
    die "$DESTDIR$1 exists and was not installed by parabench; nothing installed (make install FORCE=1 replaces it)"
}
file() { # file MODE SOURCE DEST
    dir "$(dirname "$3")"
    not_ours "$3"
    install -m "$1" "$2" "$DESTDIR$3"
    record "$3"
}

install_all() {
    local build=$1 bindir=$PREFIX/bin libexec=$PREFIX/libexec/parabench data=$PREFIX/share/parabench
    local doc=$PREFIX/share/doc/parabench f name
    [ -f "$build/version.txt" ] || die "$build/version.txt is missing: build first (make)"
    local version rev
    read -r version rev <"$build/version.txt"
    [ -e "$DESTDIR$data/install-manifest.txt" ] &&
        die "$DESTDIR$data/install-manifest.txt exists: parabench is installed there already; make uninstall first"
    LIST=$(mktemp /tmp/parabench-install.XXXXXX)
    trap 'rm -f "$LIST" "$LIST.json" "$LIST.module"' EXIT
    [ -z "$DESTDIR" ] || mkdir -p "$DESTDIR" # the packager's staging folder: not part of the install
    # The binaries: one per benchmarks/*.c and tools/*.c, under their own names.
    for f in benchmarks/*.c tools/*.c; do
        name=$(basename "$f" .c)
        [ -x "$build/bin/$name" ] || die "$build/bin/$name is not built (make)"
        file 755 "$build/bin/$name" "$bindir/$name"
    done
    # What parabench-run-all runs, in the checkout's layout so that every part finds the others
    # relative to itself (suite/paths.py, scripts/report.py, plots/*.gp).
    file 755 run_all.sh "$libexec/run_all.sh"
    for f in suite/*.py; do file 644 "$f" "$libexec/$f"; done
    file 644 common/plan/presets.def "$libexec/common/plan/presets.def" # the model table (suite/models.py)
    for f in scripts/report.py scripts/suspects.py scripts/figure_data.py scripts/reproduce.py scripts/training_step.py; do file 644 "$f" "$libexec/$f"; done
    file 755 scripts/bind-near-gpu.sh "$libexec/scripts/bind-near-gpu.sh"
    file 755 scripts/compare-runs.py "$libexec/scripts/compare-runs.py"
    for f in plots/*.gp; do file 644 "$f" "$libexec/$f"; done
    # install.json marks the tree as installed: the binaries' folder relative to it, and the
    # version they were built as (suite/version.py; what --version prints).
    printf '{"version": "%s", "git": "%s", "bin": "../../bin"}\n' "$version" "$rev" >"$LIST.json"
    file 644 "$LIST.json" "$libexec/install.json"
    dir "$bindir"
    not_ours "$bindir/parabench-run-all"
    ln -s ../libexec/parabench/run_all.sh "$DESTDIR$bindir/parabench-run-all"
    record "$bindir/parabench-run-all"
    not_ours "$bindir/parabench-compare"
    ln -s ../libexec/parabench/scripts/compare-runs.py "$DESTDIR$bindir/parabench-compare"
    record "$bindir/parabench-compare"
    for f in acceptance/*.thresholds; do file 644 "$f" "$data/$f"; done
    file 644 README.md "$doc/README.md"
    file 644 CHANGELOG.md "$doc/CHANGELOG.md"
    while IFS= read -r -d '' f; do file 644 "$f" "$doc/$f"; done < <(find docs -type f -print0 | sort -z)
    modulefile "$version" "$rev" >"$LIST.module"
    file 644 "$LIST.module" "$MODULEFILES/parabench/$version"
    dir "$data"
    record "$data/install-manifest.txt"
    install -m 644 "$LIST" "$DESTDIR$data/install-manifest.txt"
    echo "installed parabench $version into $DESTDIR$PREFIX ($(wc -l <"$LIST") entries in $data/install-manifest.txt)"
}

# A Tcl modulefile: Environment Modules and Lmod both read it. No MANPATH: no man pages.
modulefile() {
    cat <<EOF
#%Module1.0
## parabench $1 (git $2), installed in $PREFIX by make install (docs/install.md).
proc ModulesHelp { } {
    puts stderr "parabench $1: communication microbenchmarks for distributed deep-learning training."
    puts stderr "  parabench-run-all --quick    the whole suite; results under the current directory"
    puts stderr "  $PREFIX/share/parabench/acceptance: threshold examples (--acceptance FILE)"
    puts stderr "  $PREFIX/share/doc/parabench: the documentation"
}
module-whatis "parabench $1: MPI and NCCL communication microbenchmarks for distributed training"
conflict parabench
set root {$PREFIX}
setenv PARABENCH_HOME \$root
prepend-path PATH \$root/bin
EOF
}

# ---- uninstall ----
# remove_listed LIST: every path of LIST, last first: files go, directories when empty.
remove_listed() {
    local path n=0
    while IFS= read -r path; do
        if [ -d "$DESTDIR$path" ] && [ ! -L "$DESTDIR$path" ]; then
            rmdir "$DESTDIR$path" 2>/dev/null || true # a directory holding someone else's files stays
        else
            rm -f "$DESTDIR$path"
        fi
        n=$((n + 1))
    done < <(tac "$1")
    echo "$n"
}
# inside PATH: PATH is PREFIX or MODULEFILESDIR or below one, with no '..' to climb out.
inside() {
    case /$1/ in */../* | */./*) return 1 ;; esac
    case $1 in "$PREFIX" | "$PREFIX"/* | "$MODULEFILES" | "$MODULEFILES"/*) return 0 ;; esac
    return 1
}
# above PATH: PATH is a folder above PREFIX or MODULEFILESDIR (install makes those that are missing
# and lists them); uninstall takes it only as a directory, which goes when empty.
above() {
    case /$1/ in */../* | */./*) return 1 ;; esac
    case $PREFIX/ in "$1"/*) ;; *) case $MODULEFILES/ in "$1"/*) ;; *) return 1 ;; esac ;; esac
    [ -d "$DESTDIR$1" ] && [ ! -L "$DESTDIR$1" ]
}
uninstall_all() {
    local manifest=$DESTDIR$PREFIX/$MANIFEST_REL path
    [ -f "$manifest" ] || { echo "uninstall: no parabench install in $DESTDIR$PREFIX ($manifest is missing); nothing removed"; return 0; }
    # The whole list is checked before anything goes: a manifest naming /etc/passwd removes nothing.
    while IFS= read -r path; do
        case $path in /*) ;; *) die "$manifest: '$path' is not an absolute path; nothing removed" ;; esac
        inside "$path" || above "$path" || die "$manifest: '$path' is outside PREFIX $PREFIX (and MODULEFILESDIR $MODULEFILES); nothing removed"
    done <"$manifest"
    echo "uninstalled parabench from $DESTDIR$PREFIX ($(remove_listed "$manifest") entries)"
}

[ $# -ge 1 ] || usage
case $1 in
install)
    [ $# -ge 3 ] && [ $# -le 5 ] || usage
    PREFIX=$3 DESTDIR=${4:-} MODULEFILES=${5:-$3/share/modulefiles}
    absolute "$PREFIX" PREFIX; absolute "$MODULEFILES" MODULEFILESDIR
    plain_path "$PREFIX" PREFIX; plain_path "$DESTDIR" DESTDIR; plain_path "$MODULEFILES" MODULEFILESDIR
    PREFIX=${PREFIX%/} MODULEFILES=${MODULEFILES%/}
    install_all "$2" ;;
uninstall)
    [ $# -ge 2 ] && [ $# -le 4 ] || usage
    PREFIX=$2 DESTDIR=${3:-} MODULEFILES=${4:-$2/share/modulefiles}
    absolute "$PREFIX" PREFIX; absolute "$MODULEFILES" MODULEFILESDIR
    PREFIX=${PREFIX%/} MODULEFILES=${MODULEFILES%/}
    uninstall_all ;;
*) usage ;;
esac
