#!/bin/sh
# The reader's CUDA path on a machine with a GPU (tests/gpu/README.md).
#   sh tests/gpu/run.sh [BUILD_DIR [gpu_check options]]   (default build/gpu)
# Builds pairshard with the CUDA toolkit, a shard set of Spider dev+train,
# and gpu_check; runs it and prints its JSON summary. Exit status: 0 all
# device batches matched the host's, 1 a failure, 77 no CUDA device (or no
# toolkit), so that a CI job can tell "skipped" from "passed".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build/gpu}
[ $# -gt 0 ] && shift
case $BUILD in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

if [ ! -f "$CUDA_HOME/include/cuda_runtime.h" ]; then
    echo "no CUDA device (no CUDA toolkit at $CUDA_HOME)"
    exit 77
fi
JOBS=$(nproc 2>/dev/null || echo 2)
# The Makefile is given a build directory relative to the tree.
rel=${BUILD#"$ROOT"/}
(cd "$ROOT" && make -s BUILD="$rel" CUDA_HOME="$CUDA_HOME" -j"$JOBS" all >/dev/null) || {
    echo "gpu: building pairshard with CUDA failed" >&2
    exit 1
}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pairshard-gpu.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
"$BUILD/bin/pairshard" build -q --vocab "$ROOT/tests/data/vocab/bert-base-uncased.vocab.txt" \
    --label-field db_id --max-length 128 --shards 4 -o "$TMP/set" \
    "$ROOT/tests/data/spider/dev.json" "$ROOT/tests/data/spider/train.json" || exit 1
build_gpu_check() {
    # shellcheck disable=SC2046
    ${CC:-cc} -std=c11 -O2 -g -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L \
        -I"$ROOT/include" -isystem "$CUDA_HOME/include" -o "$TMP/gpu_check" \
        "$ROOT/tests/gpu/gpu_check.c" "$BUILD/lib/libpairshard.a" \
        $(pkg-config --libs lmdb libzstd libutf8proc jansson libpcre2-8 libxxhash zlib nettle sqlite3) \
        -lm -pthread -L"$CUDA_HOME/lib64" -Wl,-rpath,"$CUDA_HOME/lib64" -lcudart
}
build_gpu_check || {
    echo "gpu: gpu_check does not build" >&2
    exit 1
}
# The pair set, then a causal set read packed and a seq2seq set (Spider dev
# with ddl schema prompts): every array of each layout, device against host.
"$TMP/gpu_check" "$TMP/set" "$@"
rc=$?
[ $rc -eq 77 ] && exit 77
"$BUILD/bin/pairshard" build -q --layout causal \
    --tokenizer-json "$ROOT/tests/data/tokenizers/gpt2.tokenizer.json" \
    --schema "$ROOT/tests/data/spider/tables.json" --template ddl --max-length 1024 \
    -o "$TMP/causal" "$ROOT/tests/data/spider/dev.json" || exit 1
"$TMP/gpu_check" "$TMP/causal" --pack 1024 --batch-size 8 || rc=1
"$BUILD/bin/pairshard" build -q --layout seq2seq \
    --tokenizer-json "$ROOT/tests/data/tokenizers/t5-small.tokenizer.json" \
    --max-length 512 -o "$TMP/seq2seq" "$ROOT/tests/data/spider/dev.json" || exit 1
"$TMP/gpu_check" "$TMP/seq2seq" --decoder-start-id 0 --batch-size 32 || rc=1
exit $rc
