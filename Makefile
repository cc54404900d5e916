# parabench build. Sources are discovered by convention, so adding a module or a
# benchmark needs no edit here:
#   common/LAYER/*.c      -> build/lib/libparabench.a (GPU-only files excluded, below)
#   common/LAYER/*_nccl.c, *_cublas.c, *_cuda.c, *.cu -> compiled only when CUDA=1
#   benchmarks/X.c        -> build/bin/X  (MPI benchmarks)
#   tools/X.c             -> build/bin/X  (plan and acceptance link without MPI)
#   tests/unit/test_X.c   -> build/tests/test_X (cmocka)
#   tests/integration/test_*.sh -> run by `make test` against build/bin (exit 77: skipped)
# The layers of common/ and the order they may include each other in are in
# docs/ARCHITECTURE.md; `make lint` checks it (tools/dev/check-layers.py), and
# that a header x.h exports only pb_x and pb_x_* (tools/dev/check-names.py), that
# no two files of common/ use each other (tools/dev/check-cycles.py), and
# that only the backend and engine tables compare their names (tools/dev/check-registries.py).

BUILD   ?= build
NPROC   := $(shell nproc 2>/dev/null || echo 1)
MPICC   ?= mpicc
CC      ?= cc
WERROR  ?= 0
SAN     ?= 0
COV     ?= 0

CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?= $(CUDA_HOME)
# NCCL from the toolkit (lib64/libnccl.so) or from a Python wheel
# (site-packages/nvidia/nccl: lib/libnccl.so.2 only, no libnccl.so link; its
# header may lie in another wheel's include/: set NCCL_INC).
NCCL_INC ?= $(NCCL_HOME)/include
NCCL_LIBDIR ?= $(or $(patsubst %/,%,$(dir $(firstword $(wildcard $(addprefix $(NCCL_HOME)/,\
                 lib64/libnccl.so lib64/libnccl.so.2 lib/libnccl.so lib/libnccl.so.2))))),$(NCCL_HOME)/lib64)
NCCL_LINK = $(if $(wildcard $(NCCL_LIBDIR)/libnccl.so),-lnccl,-l:libnccl.so.2)
# CUDA support is compiled in when nvcc, nccl.h and cuBLAS are all present;
# `make CUDA=0` forces a CPU-only build, `make CUDA=1` insists on it.
ifeq ($(origin CUDA),undefined)
  CUDA := $(shell test -x $(CUDA_HOME)/bin/nvcc && test -f $(NCCL_INC)/nccl.h \
            && test -f $(CUDA_HOME)/include/cublas_v2.h && echo 1 || echo 0)
endif

CFLAGS_BASE = -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Wshadow -Wno-unused-parameter -MMD -MP
ifeq ($(WERROR),1)
  CFLAGS_BASE += -Werror
endif
ifeq ($(SAN),1)
  CFLAGS_BASE += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDFLAGS_SAN = -fsanitize=address,undefined
endif

# COV=1: a gcov build (tests/mutate_sample.py records which lines each test
# runs); -O0 so that every executed line is attributed to itself.
ifeq ($(COV),1)
  CFLAGS_BASE += -O0 --coverage
  LDFLAGS_SAN += --coverage
endif

BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
CFLAGS   = $(CFLAGS_BASE) -Icommon $(BLAS_CFLAGS) $(shell pkg-config --cflags libcjson hwloc 2>/dev/null)
LIBS     = $(BLAS_LIBS) -lhwloc -lcjson -lpthread -lm
GIT_REV := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
CFLAGS  += -DPB_GIT_REV='"$(GIT_REV)"'

GPU_PATTERNS = %_nccl.c %_cublas.c %_cuda.c
ALL_COMMON   = $(wildcard common/*/*.c)
GPU_C        = $(filter $(GPU_PATTERNS),$(ALL_COMMON))
GPU_CU       = $(wildcard common/*/*.cu)
COMMON_C     = $(filter-out $(GPU_C),$(ALL_COMMON))

ifeq ($(CUDA),1)
  NVCC       = $(CUDA_HOME)/bin/nvcc
  CFLAGS    += -DPB_HAVE_CUDA=1 -I$(CUDA_HOME)/include -I$(NCCL_INC)
  LIBS      += $(if $(filter $(CUDA_HOME)/lib64,$(NCCL_LIBDIR)),,-L$(NCCL_LIBDIR) -Wl,-rpath,$(NCCL_LIBDIR)) \
               -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 $(NCCL_LINK) -lcudart -lstdc++ -ldl -lpthread
  COMMON_C  += $(GPU_C)
  NVCCFLAGS  = -O2 -std=c++17 -Icommon -gencode arch=compute_80,code=sm_80 \
               -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
  ifeq ($(WERROR),1)
    NVCCFLAGS += -Werror all-warnings
  endif
  CU_OBJS    = $(patsubst common/%.cu,$(BUILD)/obj/common/%.cu.o,$(GPU_CU))
endif

COMMON_OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(COMMON_C)) $(CU_OBJS)
LIB         = $(BUILD)/lib/libparabench.a
NOMPI_BINS  = plan acceptance
# No MPI either, but the compute engines: BLAS (and CUDA where built).
ENGINE_BINS = compute_probe
BENCH_SRCS  = $(wildcard benchmarks/*.c)
TOOL_SRCS   = $(wildcard tools/*.c)
BINS        = $(patsubst benchmarks/%.c,$(BUILD)/bin/%,$(BENCH_SRCS)) \
              $(patsubst tools/%.c,$(BUILD)/bin/%,$(TOOL_SRCS))
UNIT_SRCS   = $(wildcard tests/unit/test_*.c)
UNIT_BINS   = $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))

.PHONY: all test test-cluster test-sanitized unit integration sanitize lint fuzz plots compare history clean deps valgrind mutate mutate-sample docs-check install uninstall
all: $(BINS)

# The compile flags of this build folder (less the git revision): objects are
# rebuilt when they change, so `make CUDA=0` and `make CUDA=1` into one folder
# never mix objects built with and without CUDA.
# Only a make that may compile writes these stamps: `make plots` or
# `make uninstall` (perhaps run with a PATH that lacks git) must leave the
# build's recorded version as it is.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_TEXT  := $(filter-out -DPB_GIT_REV%,$(CFLAGS)) | $(NVCCFLAGS)
NO_BUILD_GOALS := plots compare history clean uninstall docs-check deps lint mutate mutate-sample
WRITES_STAMPS  := $(if $(MAKECMDGOALS),$(filter-out $(NO_BUILD_GOALS),$(MAKECMDGOALS)),all)
ifneq ($(WRITES_STAMPS),)
$(shell mkdir -p $(BUILD) && (echo '$(FLAGS_TEXT)' | cmp -s - $(FLAGS_STAMP) || echo '$(FLAGS_TEXT)' >$(FLAGS_STAMP)))
endif

# The version (VERSION, and the git revision when built from git) is compiled
# into version.o alone, rebuilt whenever either changes: every binary then
# prints what run_all.sh prints (suite/version.py reads the same file), and
# a commit relinks the binaries without recompiling the rest.
PB_VERSION    := $(or $(strip $(file <VERSION)),unknown)
VERSION_STAMP := $(BUILD)/version.txt
ifneq ($(WRITES_STAMPS),)
$(shell echo '$(PB_VERSION) $(GIT_REV)' | cmp -s - $(VERSION_STAMP) || echo '$(PB_VERSION) $(GIT_REV)' >$(VERSION_STAMP))
endif
$(BUILD)/obj/common/core/version.o: $(VERSION_STAMP)
$(BUILD)/obj/common/core/version.o: CFLAGS += -DPB_VERSION='"$(PB_VERSION)"'

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/common/%.cu.o: common/%.cu $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -I$(NCCL_INC) -c $< -o $@

# Libraries and programs are written under a temporary name and renamed into
# place: a test that starts a program while another make relinks it (a
# commit changes version.o) runs the old file or the new, never half of one.
$(LIB): $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	ar rcs $@.tmp$$$$ $^ && mv -f $@.tmp$$$$ $@

# `plan` needs no MPI: linking it with the plain compiler proves it.
$(patsubst %,$(BUILD)/bin/%,$(NOMPI_BINS)): $(BUILD)/bin/%: $(BUILD)/obj/tools/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_SAN) $< $(LIB) -lcjson -lm -o $@.tmp$$$$ && mv -f $@.tmp$$$$ $@

$(patsubst %,$(BUILD)/bin/%,$(ENGINE_BINS)): $(BUILD)/bin/%: $(BUILD)/obj/tools/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_SAN) $< $(LIB) $(LIBS) -o $@.tmp$$$$ && mv -f $@.tmp$$$$ $@

$(filter-out $(patsubst %,$(BUILD)/bin/%,$(NOMPI_BINS) $(ENGINE_BINS)),$(BINS)): $(BUILD)/bin/%: $(BUILD)/obj/benchmarks/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(MPICC) $(LDFLAGS_SAN) $< $(LIB) $(LIBS) -o $@.tmp$$$$ && mv -f $@.tmp$$$$ $@

# Kept: as intermediates of the pattern rule below, make would delete the unit
# tests' objects after linking and compile them again on every `make test`.
.SECONDARY: $(patsubst tests/unit/%.c,$(BUILD)/obj/tests/unit/%.o,$(UNIT_SRCS))
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(MPICC) $(LDFLAGS_SAN) $< $(LIB) -lcmocka $(LIBS) -o $@.tmp$$$$ && mv -f $@.tmp$$$$ $@

# The out-of-memory fault injector (tests/fault/failmalloc.c): built on demand
# by the tests that preload it, never installed.
$(BUILD)/lib/libpb_failmalloc.so: tests/fault/failmalloc.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -g -Wall -Wextra -fPIC -shared $< -o $@ -ldl

# Runners count passed, failed and skipped tests (tests/tally.sh); a skip is
# never a pass, and under CI=true it fails unless PARABENCH_ALLOWED_SKIPS names it.
unit: $(UNIT_BINS)
	@tests/unit/run.sh $(UNIT_BINS)

integration: $(BINS)
	@BUILD=$(BUILD) tests/integration/run.sh

# The build after the dependencies are in place, on every core unless make was
# given -j (a fresh clone's `make test` would otherwise compile on one).
test: deps
	@$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC)) all $(UNIT_BINS)
	@BUILD=$(BUILD) tests/run.sh $(UNIT_BINS)

# The cluster tier, apart from `make test`: the integration tests that bring up the
# emulated cluster (root, network namespaces) or Slurm nodes on it, one after
# another; while one runs, its ranks and shaped links keep both cores of a small
# machine busy. CI runs it after `make test`; `make sanitize` runs both tiers.
test-cluster: deps
	@$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC)) all
	@BUILD=$(BUILD) PB_TEST_TIER=cluster tests/integration/run.sh

# The sanitized tier: the unit tests, the tools' tests and a validated run of every
# benchmark, built and run once more under ASan, UBSan and LeakSanitizer
# (tests/integration/test_unit_sanitized.sh). CI runs it after `make test`;
# `make sanitize` runs the whole suite so built.
test-sanitized: deps
	@BUILD=$(BUILD) PB_TEST_TIER=sanitized tests/integration/run.sh

deps:
	@scripts/install-deps.sh

# Not part of `make test`: each mutation of tests/mutations.txt, applied by
# pattern to a scratch copy, must make one of its named tests fail
# (dev/mutations.md). MUTATIONS=name,... runs a subset.
mutate:
	@python3 tests/mutate.py $(if $(MUTATIONS),--only $(MUTATIONS))

# Not part of `make test` either: N mutants drawn at random (SEED) over
# common/, benchmarks/, tools/, scripts/*.py and suite/*.py, each judged by the tests
# that execute its line (dev/mutations.md, "Sampled mutants"). RECORD=1
# keeps the output as dev/records/mutate-sample.txt.
N    ?= 100
SEED ?= 1
mutate-sample:
	@$(if $(filter 1,$(RECORD)),PB_RECORD_DIR=dev/records tools/dev/record.sh mutate-sample) python3 tests/mutate_sample.py --n $(N) --seed $(SEED)

# Every performance figure in README.md and docs/ must appear in a recorded
# output under docs/measured/ (docs/measured/README.md), and every file the
# code and docs refer to must be in the repository.
docs-check:
	@python3 tools/dev/docs-check.py
	@python3 tools/dev/check-refs.py

# The whole suite under ASan, UBSan and LeakSanitizer; how they report:
# tests/sanitizer-env.sh. (make test runs the unit tests so built:
# tests/integration/test_unit_sanitized.sh.)
sanitize:
	bash -c '. tests/sanitizer-env.sh && PB_TEST_TIER=all PB_TEST_SLOWDOWN=3 PB_TEST_JOBS=2 exec $(MAKE) BUILD=build-san SAN=1 CUDA=0 test'

# Memcheck on the CPU build: the CUDA libraries' own initialisation is not ours to check.
valgrind:
	$(MAKE) BUILD=build-vg CUDA=0 all
	tools/dev/valgrind-check.sh build-vg

lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	  --std=c11 --inline-suppr --suppress=missingIncludeSystem -Icommon common benchmarks tools
	python3 tools/dev/check-layers.py
	python3 tools/dev/check-names.py
	python3 tools/dev/check-cycles.py
	python3 tools/dev/check-registries.py
	printf '%s\n' $(COMMON_C) $(BENCH_SRCS) $(TOOL_SRCS) | \
	  xargs -P2 -n4 sh -c 'clang-tidy --quiet "$$@" -- $(filter-out -MMD -MP -DPB_GIT_REV%,$(CFLAGS)) \
	    $(shell mpicc --showme:compile) 2>/dev/null' clang-tidy

# Redraw a run's figures (plots/*.gp, gnuplot) and its report.md / index.html.
plots:
	@test -n "$(RESULTS)" && test -d "$(RESULTS)" || { echo "make plots: give RESULTS=<a run_all.sh results directory>" >&2; exit 2; }
	@for t in python3 gnuplot; do command -v $$t >/dev/null || { echo "make plots: $$t is not installed (scripts/install-deps.sh); nothing was drawn" >&2; exit 3; }; done
	@python3 scripts/report.py "$(RESULTS)"

# One run against another (docs/acceptance.md): A the reference, B the run judged; OUT where
# the comparison goes (default compare-A-vs-B). Exit 1 when a figure of B is worse beyond the noise.
compare:
	@test -n "$(A)" && test -n "$(B)" || { echo "make compare: give A=<reference run> B=<run to judge> [OUT=DIR]" >&2; exit 2; }
	@python3 scripts/compare-runs.py $(if $(OUT),--out "$(OUT)") "$(A)" "$(B)"

# Each node's evidence over several runs (docs/acceptance.md): RUNS the runs, in any order (they
# are put in order of date); OUT where the history goes (default history). Exit 1 when a node drifts.
history:
	@test -n "$(RUNS)" || { echo "make history: give RUNS=\"<run> <run>...\" [OUT=DIR]" >&2; exit 2; }
	@python3 scripts/history.py $(if $(OUT),-o "$(OUT)") $(RUNS)

clean:
	rm -rf build build-san build-fuzz build-vg build-cov

# Install the built suite into PREFIX (docs/install.md): binaries and parabench-run-all in
# bin/, what it runs in libexec/parabench/, examples and docs in share/, a modulefile in
# MODULEFILESDIR/parabench/VERSION. DESTDIR stages a package; uninstall removes exactly
# what the install's manifest (PREFIX/share/parabench/install-manifest.txt) lists.
PREFIX         ?= /usr/local
MODULEFILESDIR ?= $(PREFIX)/share/modulefiles
install: all
	@FORCE=$(FORCE) scripts/install.sh install "$(BUILD)" "$(PREFIX)" "$(DESTDIR)" "$(MODULEFILESDIR)"

uninstall:
	@scripts/install.sh uninstall "$(PREFIX)" "$(DESTDIR)" "$(MODULEFILESDIR)"

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# libFuzzer on the option and size parsers, the threshold file parser, the
# escaping module, the CSV reader acceptance uses, the cluster-file and the
# rank-map readers: each target runs for
# FUZZ_SECONDS on its corpus in tests/fuzz/corpus.
FUZZ_SECONDS ?= 60
FUZZ_SRCS = common/core/parse.c common/core/options.c common/core/version.c common/core/outpath.c common/core/dtype.c common/core/error.c common/core/escape.c \
            common/core/csv.c common/core/grow.c common/core/link.c common/core/lines.c common/core/atomic.c \
            common/plan/thresholds.c common/plan/cluster.c common/workload/placement.c
FUZZ_TARGETS = $(patsubst tests/fuzz/%.c,build-fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
build-fuzz/%: tests/fuzz/%.c $(FUZZ_SRCS)
	@mkdir -p build-fuzz
	clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Icommon \
	  $(shell pkg-config --cflags libcjson) $< $(FUZZ_SRCS) $(shell pkg-config --libs libcjson) -lm -o $@
fuzz: $(FUZZ_TARGETS)
	@set -e; for t in $(FUZZ_TARGETS); do n=$$(basename $$t); mkdir -p tests/fuzz/corpus/$${n#fuzz_}; \
	  echo "== $$n ($(FUZZ_SECONDS) s)"; \
	  $$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=0 tests/fuzz/corpus/$${n#fuzz_} 2>&1 | tail -3; done
