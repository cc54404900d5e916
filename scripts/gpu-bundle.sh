#!/usr/bin/env bash
# Build the CUDA binaries and pack them, with the Open MPI runtime they need,
# into .gpu-bundle/ (git-ignored), for a GPU node that has the CUDA runtime,
# cuBLAS and NCCL but no MPI, such as a container image (docs/gpu/README.md).
# Run it on a machine with Open MPI 4.1 (Debian/Ubuntu packages, external PMIx),
# the CUDA toolkit and NCCL; it needs no GPU. Carry the folder to the node and
# run the check from it:  bash .gpu-bundle/gpu-check.sh
#
#   scripts/gpu-bundle.sh              build + bundle
#   scripts/gpu-bundle.sh --selftest   build + bundle + prove it runs with the
#                                      system Open MPI hidden (mount namespace)
#   scripts/gpu-bundle.sh --selftest-only   the namespace test on the bundle as it is
#   NCCL_TESTS_SRC=nccl-tests.tar.gz scripts/gpu-bundle.sh
#                                      also build nccl-tests' all_reduce_perf and
#                                      sendrecv_perf (MPI=1, parabench's GPU
#                                      architectures) into nccl-tests/, for
#                                      gpu-check.sh --node; NCCL_TESTS_DIR=TREE
#                                      copies them from a built tree instead
#
# The bundle holds:
#   bin/, libexec/parabench/, share/
#                   parabench installed into the bundle (make install
#                   PREFIX=.gpu-bundle, docs/install.md): every benchmark in
#                   bin/ (debug sections stripped), and the installed run_all.sh
#                   (libexec/parabench/run_all.sh, bin/parabench-run-all), which
#                   builds and installs nothing and runs bin/'s binaries; bin/
#                   also holds hwloc-bind, which scripts/bind-near-gpu.sh uses
#   tests/          test_gpu_nogpu, test_coll_check
#   nccl-tests/     all_reduce_perf, sendrecv_perf and nccl-tests' LICENSE.txt,
#                   when NCCL_TESTS_SRC or NCCL_TESTS_DIR was given
#   gpu-check.sh    a copy of scripts/gpu-check.sh: run from here, it uses this bundle
#   gpu-check-judge.py, nccl_tests_table.py
#                   copies of the scripts: the check's judging helpers and one-page summary
#   lib/            the closure of their shared libraries, and of Open MPI's and
#                   PMIx's, under their sonames, minus glibc and minus CUDA,
#                   cuBLAS and NCCL (found on the GPU node by gpu-check.sh)
#   lib-fallback/   libstdc++, libgcc_s, libz, libudev: used only where the
#                   target has none (env.sh asks ldconfig), since a newer system
#                   copy must win over Debian 12's
#   ompi/           orterun (mpirun), orted, ompi_info, the MCA components
#                   (lib/openmpi3), the help files (share/openmpi) and an
#                   etc/openmpi-mca-params.conf; relocated by OPAL_* variables
#   pmix/           PMIx's components (lib/pmix), help files, an empty conf;
#                   relocated by PMIX_* variables
#   env.sh          source it: sets PATH, LD_LIBRARY_PATH, OPAL_*, PMIX_*, OMPI_MCA_*;
#                   unpacks the packed files once
#   MANIFEST        what came from where, the git revision, sizes
# Files over 4 MiB in lib/ and nccl-tests/ (libopenblas, nccl-tests' binaries)
# travel packed with xz as FILE.xz, a quarter of their size or less; env.sh
# unpacks each beside itself the first time it is sourced (xz, or python3's
# lzma module).
#
# Components whose libraries are not worth carrying (UCX, libfabric, verbs,
# PSM, OpenSHMEM) are left out, and env.sh selects btl self,vader,tcp and pml
# ob1, so Open MPI never looks for them.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUNDLE=$ROOT/.gpu-bundle
BUILD=build-gpu
MAX_MIB=${PB_BUNDLE_MAX_MIB:-0}   # fail above this many MiB (0: no limit)
TARGET_MIB=48                     # warn above this: small enough to carry beside a checkout
PACK_MIB=4                        # files above this many MiB in lib/ and nccl-tests/ travel xz-packed

mode=bundle
case "${1:-}" in
  "") ;;
  --selftest) mode=selftest ;;
  --selftest-only) mode=selftest-only ;;
  --in-namespace) mode=in-namespace ;;   # internal: run by --selftest under unshare -m
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
  *) echo "gpu-bundle.sh: unknown option '$1' (--selftest, --selftest-only, --help)" >&2; exit 2 ;;
esac

say() { printf '[gpu-bundle] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------- classify
# glibc's own libraries: the target node's glibc serves them.
is_glibc() {
  case "$1" in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|\
    libutil.so.*|libresolv.so.*|libanl.so.*|libnsl.so.*|libBrokenLocale.so.*|libmvec.so.*) return 0 ;;
  esac
  return 1
}
# Found on the GPU node (CUDA toolkit or the nvidia-* Python wheels), never carried.
is_cuda() {
  case "$1" in
    libcuda.so.*|libcudart.so.*|libnccl.so.*|libcublas.so.*|libcublasLt.so.*|libnvidia-*|libnvrtc*|libnvJitLink*) return 0 ;;
  esac
  return 1
}
# Base libraries every Ubuntu has, in a newer version than Debian 12's.
is_fallback() {
  case "$1" in
    libstdc++.so.*|libgcc_s.so.*|libz.so.*|libudev.so.*) return 0 ;;
  esac
  return 1
}
# Component libraries that pull in transports we do not carry.
SKIP_DEPS_RE='^lib(ucp|ucs|uct|ucm|fabric|rdmacm|efa|ibverbs|psm|psm2|psm_infinipath|infinipath|oshmem|mca_common_ucx|mca_common_ofi|mca_common_verbs|nl-route-3)\.so'

# ldd FILE -> lines "soname path" (path "not found" when unresolved)
ldd_pairs() {
  LD_LIBRARY_PATH="$SYS_EXTRA_LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$1" 2>/dev/null | awk '
    /=>/ { name=$1; if ($3 == "not") print name, "not-found"; else print name, $3; next }
    { print $1, "-" }'
}

# ---------------------------------------------------------------- build
build() {
  local jobs; jobs=$(nproc 2>/dev/null || echo 2)
  local tests="$BUILD/tests/test_gpu_nogpu $BUILD/tests/test_coll_check"
  say "building: make -j$jobs CUDA=1 BUILD=$BUILD all $tests"
  make -j"$jobs" CUDA=1 BUILD=$BUILD all $tests >&2 || die "build failed"
}

# ---------------------------------------------------------------- bundle
declare -A LIBS_WANTED=()   # soname -> source path

want_deps_of() {   # add every non-glibc, non-CUDA dependency of $1
  local name path
  while read -r name path; do
    [ -n "$name" ] || continue
    is_glibc "$name" && continue
    is_cuda "$name" && continue
    case "$name" in /*) continue ;; esac   # the interpreter line
    [ "$path" = "not-found" ] && die "$1 needs $name, which ldd cannot find here"
    [ "$path" = "-" ] && continue
    LIBS_WANTED[$name]=$path
  done < <(ldd_pairs "$1")
}

make_bundle() {
  command -v orterun >/dev/null || die "no orterun here: install Open MPI (scripts/install-deps.sh)"
  command -v ompi_info >/dev/null || die "no ompi_info here"

  local pkglibdir pkgdatadir ompi_libdir orterun orted ompi_info_bin
  pkglibdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
  pkgdatadir=$(ompi_info --path pkgdatadir --parsable | sed -n 's/^path:pkgdatadir://p')
  ompi_libdir=$(ompi_info --path libdir --parsable | sed -n 's/^path:libdir://p')
  [ -d "$pkglibdir" ] || die "Open MPI component directory '$pkglibdir' not found"
  [ -d "$pkgdatadir" ] || die "Open MPI data directory '$pkgdatadir' not found"
  orterun=$(readlink -f "$(command -v orterun)")
  orted=$(readlink -f "$(command -v orted)")
  ompi_info_bin=$(readlink -f "$(command -v ompi_info)")

  # PMIx: the library the ext3x component links, its components beside it.
  local ext3x="$pkglibdir/mca_pmix_ext3x.so" libpmix pmix_libdir pmix_root
  [ -f "$ext3x" ] || die "no $ext3x: this script knows Debian's Open MPI 4.1 with external PMIx"
  SYS_EXTRA_LD="$ompi_libdir"
  libpmix=$(ldd_pairs "$ext3x" | awk '$1 ~ /^libpmix\.so/ {print $2}')
  [ -n "$libpmix" ] && [ -f "$libpmix" ] || die "cannot find the libpmix that $ext3x uses"
  libpmix=$(readlink -f "$libpmix")
  pmix_libdir=$(dirname "$libpmix")
  pmix_root=$(dirname "$pmix_libdir")
  [ -d "$pmix_libdir/pmix" ] || die "no PMIx component directory $pmix_libdir/pmix"
  SYS_EXTRA_LD="$ompi_libdir:$pmix_libdir"

  say "Open MPI components: $pkglibdir; help: $pkgdatadir; PMIx: $pmix_root"

  rm -rf "$BUNDLE"
  mkdir -p "$BUNDLE"/{tests,lib,lib-fallback,ompi/bin,ompi/lib/openmpi3,ompi/share,ompi/etc,pmix/lib/pmix,pmix/share,pmix/etc}

  # parabench installed into the bundle: the binaries in bin/, and the run_all.sh a user runs
  # (libexec/parabench), which finds them through install.json and builds nothing
  local f
  say "installing parabench into the bundle: make CUDA=1 BUILD=$BUILD install PREFIX=$BUNDLE"
  make -s CUDA=1 BUILD="$BUILD" install PREFIX="$BUNDLE" >&2 || die "make install into the bundle failed"
  for f in "$BUNDLE"/bin/*; do
    [ -L "$f" ] || want_deps_of "$f"   # parabench-run-all is a link to the installed run_all.sh
  done
  # bind-near-gpu.sh binds each rank near its GPU with hwloc-bind, which a GPU node may lack
  if command -v hwloc-bind >/dev/null; then
    cp -p "$(readlink -f "$(command -v hwloc-bind)")" "$BUNDLE/bin/hwloc-bind"
    want_deps_of "$BUNDLE/bin/hwloc-bind"
  else
    say "no hwloc-bind here: on the GPU node bind-near-gpu.sh runs every rank unbound"
  fi
  for f in test_gpu_nogpu test_coll_check; do   # the unit tests with GPU cases
    cp -p "$BUILD/tests/$f" "$BUNDLE/tests/"
    want_deps_of "$BUILD/tests/$f"
  done
  add_nccl_tests
  # Debug sections off (about half their size); symbols stay for backtraces.
  for f in "$BUNDLE"/bin/* "$BUNDLE"/tests/* "$BUNDLE"/nccl-tests/*; do
    [ -f "$f" ] && [ ! -L "$f" ] && [ "$(head -c 4 "$f" | tr -d '\177')" = ELF ] || continue
    strip --strip-debug "$f" 2>/dev/null || say "strip failed: $f keeps its debug sections"
  done
  cp -p "$ROOT/scripts/gpu-check.sh" "$BUNDLE/gpu-check.sh"
  cp -p "$ROOT/scripts/gpu-check-judge.py" "$BUNDLE/gpu-check-judge.py"   # its judging helpers and one-page summary
  cp -p "$ROOT/scripts/nccl_tests_table.py" "$BUNDLE/nccl_tests_table.py" # which the judge imports (--node)

  # Open MPI runtime
  cp -p "$orterun" "$BUNDLE/ompi/bin/orterun"
  cp -p "$orterun" "$BUNDLE/ompi/bin/mpirun"
  cp -p "$orted" "$BUNDLE/ompi/bin/orted"
  cp -p "$ompi_info_bin" "$BUNDLE/ompi/bin/ompi_info"
  for f in "$orterun" "$orted" "$ompi_info_bin"; do want_deps_of "$f"; done

  local kept=0 skipped=() comp bad
  for comp in "$pkglibdir"/*.so; do
    bad=$(ldd_pairs "$comp" | awk -v re="$SKIP_DEPS_RE" '$1 ~ re || $2 == "not-found" {print $1}' | tr '\n' ' ')
    if [ -n "$bad" ]; then
      skipped+=("$(basename "$comp" .so) ($bad)")
      continue
    fi
    cp -p "$comp" "$BUNDLE/ompi/lib/openmpi3/"
    want_deps_of "$comp"
    kept=$((kept + 1))
  done
  cp -rp "$pkgdatadir" "$BUNDLE/ompi/share/openmpi"

  # PMIx runtime
  LIBS_WANTED[$(basename "$(ldd_pairs "$ext3x" | awk '$1 ~ /^libpmix\.so/ {print $1}')")]=$libpmix
  want_deps_of "$libpmix"
  for comp in "$pmix_libdir"/pmix/*.so; do
    cp -p "$comp" "$BUNDLE/pmix/lib/pmix/"
    want_deps_of "$comp"
  done
  [ -d "$pmix_root/share/pmix" ] && cp -rp "$pmix_root/share/pmix" "$BUNDLE/pmix/share/pmix"

  # libraries, real files under their sonames
  local name src dest
  for name in "${!LIBS_WANTED[@]}"; do
    src=$(readlink -f "${LIBS_WANTED[$name]}")
    if is_fallback "$name"; then dest=$BUNDLE/lib-fallback/$name; else dest=$BUNDLE/lib/$name; fi
    cp -L "$src" "$dest"
    chmod 0755 "$dest"
  done

  # configuration: ours replaces /etc/openmpi's and PMIx's (env.sh points there)
  cat > "$BUNDLE/ompi/etc/openmpi-mca-params.conf" <<'EOF'
# parabench GPU bundle: Open MPI 4.1 on one node, no high-speed transports carried.
btl = self,vader,tcp
pml = ob1
mtl = ^ofi,psm,psm2
osc = ^ucx,pt2pt
btl_base_warn_component_unused = 0
plm = isolated
hwloc_base_binding_policy = none
rmaps_base_oversubscribe = 1
EOF
  : > "$BUNDLE/ompi/etc/openmpi-default-hostfile"
  cat > "$BUNDLE/pmix/etc/pmix-mca-params.conf" <<'EOF'
# parabench GPU bundle: the component path is set by env.sh (PMIX_MCA_mca_base_component_path).
EOF

  write_env_sh
  pack_big

  # manifest
  {
    echo "# parabench GPU bundle"
    echo "created      $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) ($(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}"))"
    echo "git_revision $(git describe --always --dirty 2>/dev/null || echo unknown)"
    echo "open_mpi     $(ompi_info --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p') from $pkglibdir, $pkgdatadir"
    echo "pmix         $libpmix"
    echo "cuda_build   $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -1)"
    echo "parabench    installed: bin/, libexec/parabench/ (run_all.sh), share/ (make install PREFIX=the bundle)"
    echo "nccl_tests   ${NT_ORIGIN:-not bundled (NCCL_TESTS_SRC or NCCL_TESTS_DIR not given)}"
    echo "glibc_needed $(for b in "$BUNDLE"/bin/* "$BUNDLE"/lib/*; do objdump -T "$b" 2>/dev/null; done | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
    echo "components   $kept kept; skipped: ${#skipped[@]}"
    for f in "${skipped[@]}"; do echo "  skipped $f"; done
    echo "libraries (soname <- source):"
    for name in $(printf '%s\n' "${!LIBS_WANTED[@]}" | sort); do
      if is_fallback "$name"; then dest=lib-fallback; else dest=lib; fi
      printf '  %-32s %-13s <- %s\n' "$name" "$dest" "$(readlink -f "${LIBS_WANTED[$name]}")"
    done
    echo "not carried (found on the GPU node): CUDA runtime, cuBLAS, cuBLASLt, NCCL, libcuda; glibc"
    echo "packed (xz; env.sh unpacks each beside itself once):"
    for f in "${PACKED[@]}"; do echo "  $f"; done
    echo "files:"
    (cd "$BUNDLE" && find . -type f -printf '%s %p\n' | sort -k2 | awk '{printf "  %10d %s\n", $1, $2}')
  } > "$BUNDLE/MANIFEST"

  local bytes mib
  bytes=$(du -sb "$BUNDLE" | cut -f1)
  mib=$(( (bytes + 1048575) / 1048576 ))
  echo "size         $bytes bytes ($mib MiB)" >> "$BUNDLE/MANIFEST"
  say "bundle: $BUNDLE: $bytes bytes ($mib MiB), $(find "$BUNDLE" -type f | wc -l) files, $kept MCA components (${#skipped[@]} skipped), ${#LIBS_WANTED[@]} libraries, ${#PACKED[@]} packed"
  [ "$MAX_MIB" = 0 ] || [ "$mib" -le "$MAX_MIB" ] || die "bundle is $mib MiB, over PB_BUNDLE_MAX_MIB=$MAX_MIB"
  [ "$mib" -le "$TARGET_MIB" ] || say "WARNING: bundle is $mib MiB, over the $TARGET_MIB MiB target"
}

# nccl-tests' all_reduce_perf and sendrecv_perf for gpu-check.sh --node: built from the
# source tarball NCCL_TESTS_SRC (MPI=1 against this Open MPI, the CUDA toolkit and NCCL the
# parabench build uses, parabench's GPU architectures), or copied from the built tree
# NCCL_TESTS_DIR. Its licence travels with its binaries.
NT_ORIGIN=""
add_nccl_tests() {
  local src=${NCCL_TESTS_SRC:-} dir=${NCCL_TESTS_DIR:-} tmp="" top="" t f
  if [ -z "$src$dir" ]; then
    say "nccl-tests: not bundled (NCCL_TESTS_SRC=TARBALL builds it, NCCL_TESTS_DIR=TREE copies a built one); gpu-check.sh --node skips its comparison"
    return 0
  fi
  if [ -n "$src" ]; then
    [ -f "$src" ] || die "NCCL_TESTS_SRC=$src: no such file"
    tmp=$(mktemp -d /tmp/pb-nccl-tests.XXXXXX)
    tar -xf "$src" -C "$tmp" || die "NCCL_TESTS_SRC=$src: not a tar archive"
    top=$(find "$tmp" -maxdepth 3 -path '*/src/common.mk' | head -1)
    [ -n "$top" ] || die "NCCL_TESTS_SRC=$src holds no nccl-tests tree (no src/common.mk)"
    top=$(dirname "$(dirname "$top")")
    local cuda=${CUDA_HOME:-/usr/local/cuda} inc mpi_home
    inc=$(mpicc --showme:incdirs 2>/dev/null | awk '{ print $1 }')
    mpi_home=${MPI_HOME:-${inc%/include}}
    local gencode=${NVCC_GENCODE:-"-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90"}
    say "building nccl-tests from $src: MPI=1 MPI_HOME=$mpi_home CUDA_HOME=$cuda NCCL_HOME=${NCCL_HOME:-$cuda}"
    make -C "$top/src" -j"$(nproc 2>/dev/null || echo 2)" MPI=1 MPI_HOME="$mpi_home" CUDA_HOME="$cuda" \
         NCCL_HOME="${NCCL_HOME:-$cuda}" NVCC_GENCODE="$gencode" BUILDDIR="$tmp/build" \
         "$tmp/build/all_reduce_perf" "$tmp/build/sendrecv_perf" >&2 || { rm -rf "$tmp"; die "nccl-tests did not build"; }
    dir=$tmp/build
    NT_ORIGIN="built from $(basename "$src") (sha256 $(sha256sum "$src" | cut -c1-16)), MPI=1, $gencode"
  else
    NT_ORIGIN="copied from $dir"
    top=$dir
  fi
  mkdir -p "$BUNDLE/nccl-tests"
  for t in all_reduce_perf sendrecv_perf; do
    f=$dir/$t; [ -x "$f" ] || f=$dir/build/$t
    [ -x "$f" ] || die "no $t in ${src:-$dir} (nor in its build/)"
    cp -p "$f" "$BUNDLE/nccl-tests/$t"
    want_deps_of "$f"
  done
  for f in "$top/LICENSE.txt" "$top/../LICENSE.txt"; do [ -f "$f" ] && { cp "$f" "$BUNDLE/nccl-tests/LICENSE.txt"; break; }; done
  [ -f "$BUNDLE/nccl-tests/LICENSE.txt" ] || say "nccl-tests: no LICENSE.txt in $top or above it: add nccl-tests' licence beside its binaries before passing the bundle on"
  [ -n "$tmp" ] && rm -rf "$tmp"
  say "nccl-tests: $NT_ORIGIN"
}

# Large files travel packed: each file over PACK_MIB MiB in lib/ and nccl-tests/ becomes
# FILE.xz (xz keeps its mode); env.sh unpacks it beside itself once.
PACKED=()
pack_big() {
  command -v xz >/dev/null || { say "no xz here: the large files travel unpacked"; return 0; }
  local f
  while IFS= read -r -d '' f; do
    xz -6 -T0 "$f" || die "xz $f failed"
    PACKED+=("${f#"$BUNDLE"/}.xz ($(du -k "$f.xz" | cut -f1) KiB)")
  done < <(find "$BUNDLE/lib" "$BUNDLE/nccl-tests" -maxdepth 1 -type f -size +"${PACK_MIB}M" -print0 2>/dev/null | sort -z)
}

write_env_sh() {
  cat > "$BUNDLE/env.sh" <<'EOF'
# Source this file (bash): the environment that runs the bundle's binaries and
# its Open MPI without any system Open MPI. Written by scripts/gpu-bundle.sh.
PB_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PB_BUNDLE

# Large files travel xz-packed (FILE.xz): unpacked here beside themselves, once, with xz or
# python3's lzma module; a bundle that cannot be written to says so and leaves them packed.
for _pb_x in "$PB_BUNDLE"/lib/*.xz "$PB_BUNDLE"/nccl-tests/*.xz; do
  [ -e "$_pb_x" ] || continue
  _pb_f=${_pb_x%.xz}
  [ -s "$_pb_f" ] && continue
  if { if command -v xz >/dev/null 2>&1; then xz -dc "$_pb_x"
       else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$_pb_x"; fi
     } > "$_pb_f.part" 2>/dev/null && chmod 755 "$_pb_f.part" && mv -f "$_pb_f.part" "$_pb_f"; then :
  else
    rm -f "$_pb_f.part" 2>/dev/null
    echo "env.sh: cannot unpack $_pb_x (no xz and no python3 lzma, or the bundle is read-only)" >&2
  fi
done
unset _pb_x _pb_f

# Open MPI 4.1: opal's installdirs "env" component reads these (OPAL_PREFIX
# alone would not move sysconfdir, configured as the absolute /etc/openmpi).
export OPAL_PREFIX=$PB_BUNDLE/ompi
export OPAL_EXEC_PREFIX=$OPAL_PREFIX
export OPAL_BINDIR=$OPAL_PREFIX/bin
export OPAL_SBINDIR=$OPAL_PREFIX/bin
export OPAL_LIBEXECDIR=$OPAL_PREFIX/bin
export OPAL_LIBDIR=$PB_BUNDLE/lib
export OPAL_PKGLIBDIR=$OPAL_PREFIX/lib/openmpi3
export OPAL_DATAROOTDIR=$OPAL_PREFIX/share
export OPAL_DATADIR=$OPAL_PREFIX/share
export OPAL_PKGDATADIR=$OPAL_PREFIX/share/openmpi
export OPAL_SYSCONFDIR=$OPAL_PREFIX/etc
export OMPI_MCA_mca_base_component_path=$OPAL_PKGLIBDIR
export OMPI_MCA_mca_base_param_files=$OPAL_SYSCONFDIR/openmpi-mca-params.conf
export OMPI_MCA_orte_default_hostfile=$OPAL_SYSCONFDIR/openmpi-default-hostfile

# PMIx 4.2 (libpmix.so.2): its pinstalldirs "env" component reads PMIX_PREFIX,
# PMIX_LIBDIR, ... (no PMIX_INSTALL_PREFIX in this version); the component path
# is an MCA variable of its own.
export PMIX_PREFIX=$PB_BUNDLE/pmix
export PMIX_EXEC_PREFIX=$PMIX_PREFIX
export PMIX_BINDIR=$PB_BUNDLE/ompi/bin
export PMIX_LIBDIR=$PB_BUNDLE/lib
export PMIX_PKGLIBDIR=$PMIX_PREFIX/lib/pmix
export PMIX_DATAROOTDIR=$PMIX_PREFIX/share
export PMIX_DATADIR=$PMIX_PREFIX/share
export PMIX_PKGDATADIR=$PMIX_PREFIX/share/pmix
export PMIX_SYSCONFDIR=$PMIX_PREFIX/etc
export PMIX_MCA_mca_base_component_path=$PMIX_PKGLIBDIR

# One node, shared memory (and TCP), no UCX/OFI/verbs/PSM (not carried).
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
export OMPI_MCA_mtl=${OMPI_MCA_mtl:-^ofi,psm,psm2}
export OMPI_MCA_osc=${OMPI_MCA_osc:-^ucx,pt2pt}
export OMPI_MCA_btl_base_warn_component_unused=0
export OMPI_MCA_plm=${OMPI_MCA_plm:-isolated}            # no ssh needed: this node only
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1}
# Some container sandboxes (they report kernel 4.4.0) refuse process_vm_readv (CMA): copy through shared memory.
case "$(uname -r)" in 4.4.0*) export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none} ;; esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

export PATH=$PB_BUNDLE/ompi/bin:$PB_BUNDLE/bin:$PB_BUNDLE/tests:$PATH
# Bundle libraries first; the fallback ones only where the system lacks them.
_pb_ld=$PB_BUNDLE/lib
for _pb_l in "$PB_BUNDLE"/lib-fallback/*; do
  [ -e "$_pb_l" ] || continue
  _pb_n=$(basename "$_pb_l")
  if ! { [ -e "/lib/x86_64-linux-gnu/$_pb_n" ] || [ -e "/usr/lib/x86_64-linux-gnu/$_pb_n" ] || \
         [ -e "/usr/lib64/$_pb_n" ] || [ -e "/lib64/$_pb_n" ] || \
         /sbin/ldconfig -p 2>/dev/null | grep -qF "$_pb_n (libc6,x86-64)"; }; then
    _pb_ld=$_pb_ld:$PB_BUNDLE/lib-fallback
    break
  fi
done
export LD_LIBRARY_PATH=$_pb_ld${PB_EXTRA_LD_LIBRARY_PATH:+:$PB_EXTRA_LD_LIBRARY_PATH}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset _pb_ld _pb_l _pb_n
EOF
}

# ---------------------------------------------------------------- self-test
# Hide every file of the system's Open MPI, PMIx, and every library the bundle
# carries, in a private mount namespace, then run from the bundle.
selftest() {
  [ -f "$BUNDLE/env.sh" ] || die "no bundle: run scripts/gpu-bundle.sh first"
  [ "$(id -u)" = 0 ] || die "the self-test needs root (unshare -m, bind mounts)"
  command -v unshare >/dev/null || die "no unshare"
  local log=$ROOT/.gpu-bundle-selftest.log
  say "self-test: private mount namespace, system Open MPI hidden; log: $log"
  local tmp; tmp=$(mktemp -d /tmp/pb-selftest.XXXXXX)
  set +e
  PB_SELFTEST_TMP=$tmp unshare -m --propagation private bash "$ROOT/scripts/gpu-bundle.sh" --in-namespace 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  set -e
  rm -rf "$tmp"
  [ "$rc" = 0 ] && say "self-test PASSED" || say "self-test FAILED (exit $rc)"
  return "$rc"
}

in_namespace() {
  set +e
  local empty_dir empty_file p real n
  local tmp=${PB_SELFTEST_TMP:?run by --selftest}
  empty_dir=$tmp/empty-dir; mkdir -p "$empty_dir"
  empty_file=$tmp/empty-file; : > "$empty_file"
  local hidden=0
  hide_dir() { [ -d "$1" ] || return 0; mount --bind "$empty_dir" "$1" && hidden=$((hidden + 1)); }
  hide_file() {
    real=$(readlink -f "$1") || return 0
    [ -f "$real" ] || return 0
    mount --bind "$empty_file" "$real" && hidden=$((hidden + 1))
  }
  # shadow the files first (their paths go through the directories below)
  local files=()
  for p in /usr/bin/mpirun /usr/bin/mpiexec /usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info \
           /usr/bin/ssh /usr/bin/rsh /usr/bin/gnuplot /usr/bin/hwloc-bind; do files+=("$p"); done
  for p in /lib/x86_64-linux-gnu/{libmpi,libopen-,libpmix,libhwloc,libopenblas,libcjson,libevent,libmunge,libgfortran,libquadmath,libcmocka,liboshmem,libblas,liblapack}*.so*; do
    files+=("$p")
  done
  for p in "$BUNDLE"/lib/*; do files+=("/lib/x86_64-linux-gnu/$(basename "$p")"); done
  declare -A seen=()
  for p in "${files[@]}"; do
    real=$(readlink -f "$p" 2>/dev/null) || continue
    [ -n "${seen[$real]:-}" ] && continue
    seen[$real]=1
    hide_file "$real"
  done
  for p in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi \
           /etc/openmpi /usr/share/pmix /usr/lib/x86_64-linux-gnu/openblas-pthread \
           /usr/lib/x86_64-linux-gnu/hwloc /usr/lib/x86_64-linux-gnu/blas /usr/lib/x86_64-linux-gnu/lapack; do
    hide_dir "$p"
  done
  echo "== hidden: $hidden system paths (Open MPI, PMIx, ssh, and every library the bundle carries)"
  local fails=0
  step() {   # step NAME CMD...
    local name=$1; shift
    echo
    echo "== $name: $*"
    local t0=$SECONDS
    timeout -k 5 120 "$@"
    local rc=$?
    echo "-- $name: exit $rc ($((SECONDS - t0)) s)"
    [ "$rc" = 0 ] || fails=$((fails + 1))
    return 0
  }
  check() {  # check NAME CMD... : the command must fail (the system copy is gone)
    local name=$1; shift
    echo
    echo "== $name (must fail): $*"
    if "$@" >/dev/null 2>&1; then echo "-- $name: UNEXPECTEDLY WORKED"; fails=$((fails + 1)); else echo "-- $name: fails, as it should"; fi
  }
  check "system mpirun hidden" /usr/bin/mpirun --version
  check "system libmpi hidden" env -u LD_LIBRARY_PATH "$BUNDLE/bin/coll_sweep" --help

  check "bundle's mpirun without the OPAL_/PMIX_ variables" env LD_LIBRARY_PATH="$BUNDLE/lib" OMPI_ALLOW_RUN_AS_ROOT=1 \
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 30 "$BUNDLE/ompi/bin/mpirun" -np 1 "$BUNDLE/bin/plan" --reproduce

  # shellcheck disable=SC1091
  . "$BUNDLE/env.sh"
  echo
  echo "== environment from env.sh"
  env | grep -E '^(LD_LIBRARY_PATH|OPAL_PREFIX|OPAL_PKGLIBDIR|OPAL_PKGDATADIR|OPAL_SYSCONFDIR|PMIX_PREFIX|PMIX_MCA_mca_base_component_path|OMPI_MCA_(btl|pml|plm))=' | sort
  echo
  echo "== ldd: where every library comes from"
  local b bad=0
  for b in "$BUNDLE"/bin/* "$BUNDLE"/tests/* "$BUNDLE"/nccl-tests/*_perf "$BUNDLE"/ompi/bin/* "$BUNDLE"/ompi/lib/openmpi3/*.so "$BUNDLE"/pmix/lib/pmix/*.so; do
    [ -L "$b" ] && continue   # parabench-run-all: a link to a shell script
    while read -r n _ p _; do
      case "$p" in
        "$BUNDLE"/*|/usr/local/cuda*) ;;
        /lib/x86_64-linux-gnu/*|/usr/lib/x86_64-linux-gnu/*|/lib64/*)
          is_glibc "$n" || is_fallback "$n" || { echo "   $(basename "$b"): $n from the system: $p"; bad=$((bad + 1)); } ;;
        not) echo "   $(basename "$b"): $n NOT FOUND"; bad=$((bad + 1)) ;;
      esac
    done < <(ldd "$b" 2>/dev/null | grep '=>')
  done
  echo "-- ldd: $bad libraries outside the bundle (glibc, CUDA and the base fallback ones aside)"
  [ "$bad" = 0 ] || fails=$((fails + 1))

  mkdir -p "$tmp/run" && cd "$tmp/run" || exit 1
  step "ompi_info" bash -c 'ompi_info | grep -E "Open MPI:|Prefix:|MCA (btl|pml|plm|pmix):"'
  step "mpirun -np 2 coll_sweep (MPI, host)" mpirun -np 2 coll_sweep --backend mpi --sizes 1K -n 2
  step "mpirun -np 4 pp_pipeline (BLAS engine, MPI)" mpirun -np 4 pp_pipeline --stages 2 --engine blas --backend mpi \
       --model tiny --micro-batches 2 -n 2
  # Help files come from the bundle: an error prints its text, not "Sorry! You were supposed to get help"
  echo
  echo "== help text from the bundle: mpirun -np 1 /nonexistent"
  local ht; ht=$(timeout 30 mpirun -np 1 /nonexistent 2>&1)
  if printf '%s' "$ht" | grep -q 'unable to launch the specified application' && ! printf '%s' "$ht" | grep -q 'Sorry!'; then
    echo "-- help text: ok ($(printf '%s' "$ht" | grep -m1 'unable to launch'))"
  else
    printf '%s\n' "$ht" | head -8; echo "-- help text: FAIL"; fails=$((fails + 1))
  fi
  step "plan --reproduce" bash -c 'plan --reproduce | tail -2'
  step "compute_probe (BLAS)" compute_probe --sizes 256 -n 2 --copy-bytes 16M
  # The run_all a user runs, installed in the bundle: it builds nothing, runs the bundle's binaries
  # with the bundle's mpirun, and without gnuplot (hidden here, as on a GPU node) says so and finishes.
  step "installed run_all from the bundle (MPI, 2 ranks, no gnuplot)" bash -o pipefail -c \
       "$BUNDLE/libexec/parabench/run_all.sh --quick --np 2 --backend mpi --steps coll_sweep --out $tmp/run/run-all \
        | grep -q 'figures: not drawn: gnuplot is not installed' && grep -q '^coll_sweep[[:space:]]ok' $tmp/run/run-all/steps.tsv \
        && [ ! -e $tmp/run/run-all/logs/build.log ] && tail -3 $tmp/run/run-all/steps.tsv"
  step "test_gpu_nogpu (no GPU: GPU tests skip)" bash -o pipefail -c 'test_gpu_nogpu 2>&1 | tail -4'
  step "test_coll_check (no GPU: device path refuses)" bash -o pipefail -c 'test_coll_check 2>&1 | tail -4'

  # Components really came from the bundle: the dynamic loader names every file it opens.
  echo
  echo "== components loaded (LD_DEBUG=files, mpirun -np 2 coll_sweep)"
  LD_DEBUG=files LD_DEBUG_OUTPUT=$tmp/lddebug timeout 60 mpirun -np 2 coll_sweep --backend mpi --sizes 1K -n 1 >/dev/null 2>&1
  local ompi_n pmix_n sys_n
  ompi_n=$(cat $tmp/lddebug.* 2>/dev/null | grep -o "file=$BUNDLE/ompi/lib/openmpi3/[^ ]*" | sort -u | wc -l)
  pmix_n=$(cat $tmp/lddebug.* 2>/dev/null | grep -o "file=$BUNDLE/pmix/lib/pmix/[^ ]*" | sort -u | wc -l)
  sys_n=$(cat $tmp/lddebug.* 2>/dev/null | grep -o 'file=/[^ ]*' | grep -vE "file=$BUNDLE/|file=/lib/x86_64-linux-gnu/lib(c|m|dl|pthread|rt|stdc\+\+|gcc_s|z|udev)\.so|file=/usr/local/cuda" | sort -u)
  rm -f $tmp/lddebug.*
  echo "   Open MPI components opened from the bundle: $ompi_n; PMIx components: $pmix_n"
  [ -n "$sys_n" ] && echo "   opened outside the bundle: $sys_n"
  if [ "$ompi_n" -lt 5 ] || [ "$pmix_n" -lt 1 ]; then echo "-- components: FAIL"; fails=$((fails + 1)); else echo "-- components: ok"; fi

  # The GPU check itself, from inside the bundle, here without a GPU: it must
  # stop at once with exit 77 (skipped) and say so in its summary.
  echo
  echo "== gpu-check.sh from the bundle, with the system Open MPI hidden (no GPU here)"
  local out=$tmp/gpu-check-out
  local t0=$SECONDS
  ( cd "$tmp/run" && timeout -k 5 120 bash "$BUNDLE/gpu-check.sh" --out "$out" >/dev/null 2>&1 ); local crc=$?
  echo "-- gpu-check.sh: exit $crc in $((SECONDS - t0)) s"
  sed 's/^/   /' "$out/summary.txt" 2>/dev/null
  if [ "$crc" = 77 ] && grep -q 'no GPU' "$out/summary.txt" 2>/dev/null; then echo "-- gpu-check.sh: skipped (77), as it should without a GPU"
  elif [ "$crc" = 77 ]; then echo "-- gpu-check.sh: exit 77 but no summary"; fails=$((fails + 1))
  else echo "-- gpu-check.sh: exit $crc (77 expected: no GPU here)"; [ -e /dev/nvidia0 ] || fails=$((fails + 1)); fi

  echo
  echo "== self-test: $fails failed"
  [ "$fails" = 0 ]
}

case "$mode" in
  bundle) build; make_bundle ;;
  selftest) build; make_bundle; selftest ;;
  selftest-only) selftest ;;
  in-namespace) in_namespace ;;
esac
