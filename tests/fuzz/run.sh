#!/bin/sh
# libFuzzer campaign on every parser of untrusted bytes (`make fuzz`).
#
#   sh tests/fuzz/run.sh [FUZZ_BUILD_DIR]      (default build/fuzz)
#
# Builds the library with clang-14, ASan, UBSan and libFuzzer's coverage
# hooks (tests/fuzz/fuzz.mk), makes seed corpora from the bundled real data
# and a shard set built from it, replays every saved regression input
# (tests/fuzz/regressions/<target>/), then fuzzes each target for
# FUZZ_SECONDS (default 20), FUZZ_JOBS targets at a time (default 2). The
# corpus of each target grows across runs in FUZZ_BUILD_DIR/corpus/.
# A crash, leak, timeout or out-of-memory input is copied into
# tests/fuzz/regressions/<target>/ (FUZZ_SAVE=0 to keep the tree as it is),
# so the next run replays it until the bug is fixed.
#
# Prints TAP lines and one summary line per target (executions, corpus,
# coverage, crashes); exits 1 when any regression input or fuzzing run
# crashed, 2 when the targets cannot be built.
set -u
FB=${1:-build/fuzz}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
case $FB in /*) ;; *) FB="$ROOT/$FB" ;; esac
SECONDS_EACH=${FUZZ_SECONDS:-20}
JOBS=${FUZZ_JOBS:-2}
SAVE=${FUZZ_SAVE:-1}
RSS_MB=${FUZZ_RSS_MB:-2048}
# Far below RSS_MB: a small hostile input must never make the library ask
# for hundreds of megabytes (a manifest or block "claiming" huge counts).
MALLOC_MB=${FUZZ_MALLOC_MB:-512}
CLANG=${CLANG:-clang-14}
REG="$ROOT/tests/fuzz/regressions"

# clang-14 and its runtime libraries (libFuzzer, the sanitizers): Debian
# packages, installed when missing.
have_toolchain() {
    command -v "$CLANG" >/dev/null 2>&1 &&
        ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1
}
if ! have_toolchain; then
    pkgs="clang-14 libclang-rt-14-dev"
    mkdir -p "$FB"
    # shellcheck disable=SC2086
    sh "$ROOT/scripts/apt-install.sh" "$FB/apt.log" $pkgs
    if ! have_toolchain; then
        echo "fuzz: $CLANG with libFuzzer (Debian clang-14 libclang-rt-14-dev) is not installed" \
             "and apt-get could not install it (see $FB/apt.log)" >&2
        exit 2
    fi
fi

MK="make --no-print-directory -j$(nproc 2>/dev/null || echo 1) -f tests/fuzz/fuzz.mk FB=$FB CLANG=$CLANG"
mkdir -p "$FB"
echo "# building the fuzz targets into $FB"
if ! $MK -j"$JOBS" targets >"$FB/build.log" 2>&1; then
    grep -E 'error|Error' "$FB/build.log" | head -20 >&2
    echo "fuzz: the targets do not build (log: $FB/build.log)" >&2
    exit 2
fi
TARGETS=$($MK print-targets)

# ---- seed corpora ------------------------------------------------------------
SEEDS="$FB/seeds"
rm -rf "$SEEDS"
mkdir -p "$SEEDS"
/usr/bin/python3 tests/fuzz/make_seeds.py "$ROOT" "$SEEDS" || exit 2

# A real shard set: built with this tree's pairshard (the sanitized one of
# this build when it links, else the regular build's).
PS_BIN=""
if $MK -j"$JOBS" seedbins >>"$FB/build.log" 2>&1; then
    PS_BIN="$FB/bin/pairshard"
elif [ -x "$(dirname "$FB")/bin/pairshard" ]; then
    PS_BIN="$(dirname "$FB")/bin/pairshard"
    $MK HAVE_READER=0 "$FB/bin/seeds" >>"$FB/build.log" 2>&1
fi
VOCAB="$ROOT/tests/data/vocab/bert-base-uncased.vocab.txt"
SETS="$FB/sets"
rm -rf "$SETS"
mkdir -p "$SETS"
if [ -n "$PS_BIN" ] && [ -x "$FB/bin/seeds" ]; then
    /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
json.dump(d[:40], open(sys.argv[2], "w"))' tests/data/spider/dev.json "$SETS/small.json"
    # dev into 2 shards (the manifest, blocks of every bucket); 40 records
    # into 1 shard (a whole LMDB file small enough to fuzz).
    ASAN_OPTIONS=detect_leaks=0 "$PS_BIN" build -q --vocab "$VOCAB" --label-field db_id --shards 2 \
        --max-length 128 -o "$SETS/dev" tests/data/spider/dev.json &&
    ASAN_OPTIONS=detect_leaks=0 "$PS_BIN" build -q --vocab "$VOCAB" --label-field db_id --shards 1 \
        --max-length 64 -o "$SETS/small" "$SETS/small.json" || echo "# building the seed sets failed"
    mkdir -p "$SEEDS/fuzz_block" "$SEEDS/fuzz_block_content" "$SEEDS/fuzz_manifest" "$SEEDS/fuzz_lmdb"
    for s in "$SETS/small/shard-00000.mdb" "$SETS/dev/shard-00000.mdb" "$SETS/dev/shard-00001.mdb"; do
        [ -f "$s" ] || continue
        k=$(basename "$(dirname "$s")")-$(basename "$s" .mdb)
        mkdir -p "$SETS/b" "$SETS/c"
        "$FB/bin/seeds" blocks "$s" "$SETS/b" "$SETS/c" 6 >/dev/null &&
            for f in "$SETS"/b/*; do mv "$f" "$SEEDS/fuzz_block/$k-$(basename "$f")"; done &&
            for f in "$SETS"/c/*; do mv "$f" "$SEEDS/fuzz_block_content/$k-$(basename "$f")"; done
    done
    for d in dev small; do
        [ -f "$SETS/$d/manifest.json" ] && cp "$SETS/$d/manifest.json" "$SEEDS/fuzz_manifest/$d.json"
    done
    [ -f "$SETS/small/shard-00000.mdb" ] && cp "$SETS/small/shard-00000.mdb" "$SEEDS/fuzz_lmdb/small.mdb"
    # The same 40 records as a causal set: a format 2 shard, with its
    # "lengths" database beside the blocks.
    ASAN_OPTIONS=detect_leaks=0 "$PS_BIN" build -q --layout causal --vocab "$VOCAB" \
        --label-field db_id --shards 1 --max-length 128 -o "$SETS/small2" "$SETS/small.json" &&
        cp "$SETS/small2/shard-00000.mdb" "$SEEDS/fuzz_lmdb/small-causal.mdb" ||
        echo "# building the causal seed set failed"
    if echo " $TARGETS " | grep -q " fuzz_reader_open "; then
        mkdir -p "$SEEDS/fuzz_reader_open"
        cp "$SETS/small/manifest.json" "$SEEDS/fuzz_reader_open/small.json" 2>/dev/null
    fi
    if echo " $TARGETS " | grep -q " fuzz_reader_state "; then
        mkdir -p "$SEEDS/fuzz_reader_state"
        "$FB/bin/seeds" state "$SETS/dev" "$SEEDS/fuzz_reader_state" >/dev/null 2>&1 ||
            echo "# no reader states for seeds (the reader does not open the set)"
    fi
else
    echo "# no pairshard binary to build a seed set with: block, manifest and LMDB targets start from nothing"
fi
for t in $TARGETS; do
    mkdir -p "$SEEDS/$t"
    # Never an empty corpus: libFuzzer then starts from one empty input.
    [ -n "$(ls "$SEEDS/$t")" ] || printf '' >"$SEEDS/$t/empty"
done

# Per-target input size limits: a little over the largest real seed.
max_len() {
    case $1 in
        fuzz_lmdb) echo 65536 ;;
        fuzz_tokenizer_json | fuzz_manifest | fuzz_reader_open) echo 65536 ;;
        fuzz_clean_* | fuzz_schema_tables) echo 16384 ;;
        fuzz_block | fuzz_block_content) echo 16384 ;;
        fuzz_charsmap) echo 16384 ;;
        fuzz_reader_state) echo 256 ;;
        *) echo 4096 ;;
    esac
}

export PS_FUZZ_VOCAB="$VOCAB"
[ -f "$SETS/small/shard-00000.mdb" ] && export PS_FUZZ_SHARD="$SETS/small/shard-00000.mdb"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
LOGS="$FB/logs"
ART="$FB/artifacts"
rm -rf "$LOGS" "$ART"
mkdir -p "$LOGS" "$ART" "$FB/corpus"

n=0 fails=0
tap() { # status description
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}

# ---- regression inputs: every saved crash, every run -------------------------
for t in $TARGETS; do
    [ -d "$REG/$t" ] || continue
    files=$(find "$REG/$t" -type f ! -name '*.md' ! -name '.*' | sort)
    [ -n "$files" ] || continue
    count=$(echo "$files" | wc -l)
    # shellcheck disable=SC2086
    "$FB/bin/$t" -rss_limit_mb="$RSS_MB" -malloc_limit_mb="$MALLOC_MB" -timeout=10 $files \
        >"$LOGS/$t.regressions.log" 2>&1
    rc=$?
    tap $rc "$t: $count regression input(s) replay cleanly"
    [ $rc -eq 0 ] || grep -E 'ERROR|SUMMARY|Running' "$LOGS/$t.regressions.log" | tail -8 | sed 's/^/#   /'
done

# ---- fuzzing ---------------------------------------------------------------
fuzz_one() { # target
    t=$1
    mkdir -p "$FB/corpus/$t" "$ART/$t"
    "$FB/bin/$t" -max_total_time="$SECONDS_EACH" -rss_limit_mb="$RSS_MB" \
        -malloc_limit_mb="$MALLOC_MB" -timeout=10 -max_len="$(max_len "$t")" \
        -print_final_stats=1 -artifact_prefix="$ART/$t/" \
        "$FB/corpus/$t" "$SEEDS/$t" >"$LOGS/$t.log" 2>&1
    echo $? >"$LOGS/$t.rc"
}

echo "# fuzzing $(echo $TARGETS | wc -w) targets for ${SECONDS_EACH}s each, $JOBS at a time"
set -- $TARGETS
while [ $# -gt 0 ]; do
    k=0
    while [ $# -gt 0 ] && [ $k -lt "$JOBS" ]; do
        fuzz_one "$1" &
        shift
        k=$((k + 1))
    done
    wait
done

total_execs=0 total_crashes=0 total_inputs=0
printf '# %-22s %12s %10s %8s %8s %8s\n' target executions exec/s corpus cov crashes
for t in $TARGETS; do
    log="$LOGS/$t.log"
    rc=$(cat "$LOGS/$t.rc" 2>/dev/null || echo 99)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    # The last status line: "#N  DONE  cov: C ft: F corp: U/SIZE ..."
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p')
    crashes=$(find "$ART/$t" -type f 2>/dev/null | wc -l)
    [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes=1
    printf '# %-22s %12s %10s %8s %8s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "${corp:-?}" "${cov:-?}" "$crashes"
    total_execs=$((total_execs + ${execs:-0}))
    total_inputs=$((total_inputs + ${corp:-0}))
    total_crashes=$((total_crashes + crashes))
    if [ "$crashes" -gt 0 ]; then
        tap 1 "$t: ${execs:-?} executions in ${SECONDS_EACH}s, no crash (exit $rc)"
        grep -E '^==[0-9]+==ERROR|^SUMMARY|runtime error|Test unit written' "$log" | head -6 | sed 's/^/#   /'
        if [ "$SAVE" = 1 ]; then
            mkdir -p "$REG/$t"
            for a in "$ART/$t"/*; do
                [ -f "$a" ] || continue
                cp "$a" "$REG/$t/" && echo "#   saved as tests/fuzz/regressions/$t/$(basename "$a")"
            done
        fi
    else
        tap 0 "$t: ${execs:-?} executions in ${SECONDS_EACH}s, corpus ${corp:-?}, no crash"
    fi
done
echo "# total: $(echo $TARGETS | wc -w) targets, $total_execs executions, $total_inputs corpus inputs, $total_crashes crashes (logs in $LOGS)"
echo "1..$n"
[ "$fails" -eq 0 ]
