#!/bin/sh
# Benchmark: `pairshard bench-tokenize` against HuggingFace tokenizers (node
# binding, pinned in tests/conformance), same machine, same run, same
# corpus (Spider train+dev pairs, bert-base-uncased, no truncation), one
# thread and all threads. Prints MB/s (10^6 bytes of question+sql text per
# second), tokens/s and the ratio pairshard/HF for each.
set -eu
: "${PAIRSHARD:?}" "${PS_ROOT:?}"
CONF="$PS_ROOT/tests/conformance"
VOCAB="$PS_ROOT/tests/data/vocab/bert-base-uncased.vocab.txt"
DATA="$PS_ROOT/tests/data/spider/train.json $PS_ROOT/tests/data/spider/dev.json"
THREADS=${PS_BENCH_THREADS:-$(nproc 2>/dev/null || echo 2)}

sh "$CONF/ensure.sh"

field() { # the number before the word $1 in line $2
    echo "$2" | awk -v w="$1" '{for (i = 2; i <= NF; i++) if ($i == w) print $(i-1)}'
}
row() { # label ps-line hf-line
    psm=$(field MB/s "$2"); pst=$(field tokens/s "$2")
    hfm=$(field MB/s "$3"); hft=$(field tokens/s "$3")
    printf '%-22s pairshard %8.2f MB/s %11.0f tokens/s | HF %6.2f MB/s %9.0f tokens/s | ratio %6.1fx\n' \
        "$1" "$psm" "$pst" "$hfm" "$hft" "$(echo "$psm $hfm" | awk '{print $1 / $2}')"
}

# shellcheck disable=SC2086
ps1=$("$PAIRSHARD" bench-tokenize --vocab "$VOCAB" --threads 1 $DATA)
# shellcheck disable=SC2086
hf1=$(TOKENIZERS_PARALLELISM=false node "$PS_ROOT/bench/hf_tokenize_bench.js" "$VOCAB" serial $DATA)
row "1 thread" "$ps1" "$hf1"
# shellcheck disable=SC2086
psn=$("$PAIRSHARD" bench-tokenize --vocab "$VOCAB" --threads "$THREADS" $DATA)
# shellcheck disable=SC2086
hfn=$(TOKENIZERS_PARALLELISM=true UV_THREADPOOL_SIZE="$THREADS" node "$PS_ROOT/bench/hf_tokenize_bench.js" "$VOCAB" parallel $DATA)
row "$THREADS threads" "$psn" "$hfn"
echo "corpus: Spider train+dev, $(echo "$ps1" | awk '{print $4}') pairs; vocab bert-base-uncased; machine: $(nproc) CPUs"
