#!/bin/sh
# Benchmark: gold queries run per second with --execute's fingerprint, on
# databases generated from Spider's tables.json for Spider dev
# (tests/support/spider_dbs.py, ROWS rows a table), without a connection
# cache (a connection opened and closed per query) and with the
# per-worker cache a build uses (bench/bench_exec.c). One thread.
set -eu
. "$(dirname "$0")/lib.sh"
bench_setup exec 5
ROWS=${PS_BENCH_ROWS:-30}
DEV="$PS_ROOT/tests/data/spider/dev.json"
"$PY" "$PS_ROOT/tests/support/spider_dbs.py" "$PS_ROOT/tests/data/spider/tables.json" "$DEV" \
    "$W/dbs" "$ROWS"
# shellcheck disable=SC2046
${CC:-cc} -O2 -std=c11 -I"$PS_ROOT/include" -I"$PS_ROOT" -o "$W/bench_exec" \
    "$PS_ROOT/bench/bench_exec.c" "$PS_BUILD/lib/libpairshard.a" \
    $(pkg-config --libs lmdb libzstd libutf8proc jansson libpcre2-8 libxxhash zlib nettle sqlite3) \
    -pthread -lm
"$W/bench_exec" "$W/dbs" "$DEV" "$RUNS"
