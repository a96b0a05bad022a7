#!/bin/sh
# The reader's CUDA path on a machine with a GPU (tests/gpu/README.md).
#   sh tests/gpu/run.sh [BUILD_DIR [gpu_check options]]   (default build/gpu)
# Builds pairshard (which loads the CUDA runtime with dlopen: neither
# library may need libcudart), a shard set of Spider dev+train, dl_check
# (linked with libpairshard-reader and libpairshard in turn, never with
# libcudart: the reader's own dlopen must find the runtime and use the GPU)
# and gpu_check (linked with libpairshard-reader, compared byte for byte
# with the host); prints their JSON. Exit status: 0 all device batches
# matched the host's, 1 a failure, 77 no CUDA device (or no toolkit), so
# that a CI job can tell "skipped" from "passed".
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
for lib in libpairshard-reader.so libpairshard.so; do
    if readelf -d "$BUILD/lib/$lib" | grep -q 'NEEDED.*cudart'; then
        echo "gpu: $lib needs libcudart; it must load it at run time" >&2
        exit 1
    fi
done
# The libraries by their sonames, as installed programs find them.
abi=$(sed -n 's/^#define PS_ABI_VERSION \([0-9]*\)$/\1/p' "$ROOT/include/pairshard/common.h")
mkdir -p "$TMP/lib"
for name in libpairshard-reader libpairshard; do
    ln -s "$BUILD/lib/$name.so" "$TMP/lib/$name.so.$abi"
    ln -s "$name.so.$abi" "$TMP/lib/$name.so"
done
"$BUILD/bin/pairshard" build -q --vocab "$ROOT/tests/data/vocab/bert-base-uncased.vocab.txt" \
    --label-field db_id --max-length 128 --shards 4 -o "$TMP/set" \
    "$ROOT/tests/data/spider/dev.json" "$ROOT/tests/data/spider/train.json" || exit 1
# dl_check: the GPU path with nothing but the reader's dlopen to find
# libcudart, through each library.
rc=0
for name in pairshard-reader pairshard; do
    ${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -I"$ROOT/include" \
        -o "$TMP/dl_check-$name" "$ROOT/tests/gpu/dl_check.c" -L"$TMP/lib" \
        -Wl,-rpath,"$TMP/lib" -l"$name" || {
        echo "gpu: dl_check does not build against lib$name" >&2
        exit 1
    }
    if readelf -d "$TMP/dl_check-$name" | grep -q 'NEEDED.*cudart'; then
        echo "gpu: dl_check-$name needs libcudart" >&2
        exit 1
    fi
    printf 'dl_check lib%s: ' "$name"
    env -u LD_PRELOAD "$TMP/dl_check-$name" "$TMP/set"
    st=$?
    [ $st -eq 77 ] && exit 77
    [ $st -eq 0 ] || rc=1
done
# The same with $PAIRSHARD_CUDART naming the toolkit's runtime: the
# override loads it.
rt=$(ls "$CUDA_HOME"/lib64/libcudart.so.1[0-9]* 2>/dev/null | head -n 1)
if [ -n "$rt" ]; then
    printf 'dl_check PAIRSHARD_CUDART=%s: ' "$rt"
    PAIRSHARD_CUDART="$rt" "$TMP/dl_check-pairshard-reader" "$TMP/set" || rc=1
fi
build_gpu_check() {
    ${CC:-cc} -std=c11 -O2 -g -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L \
        -I"$ROOT/include" -isystem "$CUDA_HOME/include" -o "$TMP/gpu_check" \
        "$ROOT/tests/gpu/gpu_check.c" -L"$TMP/lib" -Wl,-rpath,"$TMP/lib" -lpairshard-reader \
        -L"$CUDA_HOME/lib64" -Wl,-rpath,"$CUDA_HOME/lib64" -lcudart
}
build_gpu_check || {
    echo "gpu: gpu_check does not build" >&2
    exit 1
}
# The pair set, then a causal set read packed and a seq2seq set (Spider dev
# with ddl schema prompts): every array of each layout, device against host.
"$TMP/gpu_check" "$TMP/set" "$@"
st=$?
[ $st -eq 77 ] && exit 77
[ $st -eq 0 ] || rc=1
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
