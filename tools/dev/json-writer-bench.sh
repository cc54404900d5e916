#!/usr/bin/env bash
# The report writer's cost per row as the row count grows (tests/perf/json_writer.c):
# a flat time per row from 12,500 to 100,000 rows means writing is linear in the rows.
#   Usage: tools/dev/json-writer-bench.sh   (recorded as docs/measured/json-writer.txt by tools/dev/record.sh)
set -eu
cd "$(dirname "$0")/../.."
make -s CUDA=0 BUILD=build-cpu build-cpu/lib/libparabench.a >/dev/null
mkdir -p build-cpu/perf
cc -O2 -std=c11 -D_GNU_SOURCE -Icommon $(pkg-config --cflags libcjson) tests/perf/json_writer.c \
    build-cpu/lib/libparabench.a -lcjson -lm -o build-cpu/perf/json_writer
tmp=$(mktemp -d /tmp/pb-json.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for n in 12500 25000 50000 100000; do build-cpu/perf/json_writer "$n" "$tmp"; done
