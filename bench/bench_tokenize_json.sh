#!/bin/sh
# Benchmark: `pairshard bench-tokenize --tokenizer-json` against HuggingFace
# tokenizers (encodeBatch) and, for GPT-2, tiktoken's gpt2 encoding (node
# packages pinned in tests/conformance), same machine, same run, one core
# each (pairshard --threads 1; TOKENIZERS_PARALLELISM=false and
# RAYON_NUM_THREADS=1 for HF; question and sql go to HF and tiktoken as two
# inputs, see hf_tokenize_json_bench.js). Corpus: Spider train+dev (question, sql)
# pairs repeated to PS_BENCH_MB (default 20) MB of text; special tokens on,
# no truncation. Prints MB/s (10^6 bytes of question+sql text per second)
# per tokenizer and the ratios pairshard/HF and pairshard/tiktoken, then the
# load time and peak RSS of loading the largest tokenizer.json.
# A tokenizer pairshard refuses prints its reason instead of a number.
set -eu
: "${PAIRSHARD:?}" "${PS_ROOT:?}"
CONF="$PS_ROOT/tests/conformance"
TOKS="$PS_ROOT/tests/data/tokenizers"
NODE_BENCH="$PS_ROOT/bench/hf_tokenize_json_bench.js"
MB=${PS_BENCH_MB:-20}
FILES=${PS_BENCH_TOKENIZERS:-"gpt2 qwen2-style t5-small bert-base-uncased"}

sh "$CONF/ensure.sh"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ps-bench-tokjson.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
CORPUS="$TMP/corpus.jsonl"
corpus=$(node "$NODE_BENCH" corpus "$CORPUS" "$MB")

field() { # the number before the word $1 in line $2
    echo "$2" | awk -v w="$1" '{for (i = 2; i <= NF; i++) if ($i == w) print $(i-1)}'
}
ratio() { # a b: a/b with one decimal, or "-" when either is missing
    if [ -n "$1" ] && [ -n "$2" ]; then echo "$1 $2" | awk '{printf "%.2fx", $1 / $2}'; else echo "-"; fi
}
hf_one() { # tokenizer.json: HF's line on one core
    TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 node "$NODE_BENCH" hf "$1" "$CORPUS"
}

printf '%-20s %14s %14s %14s %10s %12s\n' tokenizer "pairshard MB/s" "HF MB/s" "tiktoken MB/s" "ps/HF" "ps/tiktoken"
for name in $FILES; do
    f="$TOKS/$name.tokenizer.json"
    if ps=$("$PAIRSHARD" bench-tokenize --tokenizer-json "$f" --threads 1 --seconds 1 "$CORPUS" 2>"$TMP/err"); then
        psm=$(field MB/s "$ps")
    else
        psm=""
        why=$(head -n 1 "$TMP/err")
    fi
    hfm=$(field MB/s "$(hf_one "$f")")
    tkm=""
    [ "$name" = gpt2 ] && tkm=$(field MB/s "$(node "$NODE_BENCH" tiktoken gpt2 "$CORPUS")")
    printf '%-20s %14s %14s %14s %10s %12s\n' "$name" "${psm:-refused}" "$hfm" "${tkm:--}" \
        "$(ratio "$psm" "$hfm")" "$(ratio "$psm" "$tkm")"
    [ -n "$psm" ] || echo "    pairshard: $why"
done

# Load: the largest tokenizer.json, in a process that encodes one record.
big=$(ls -S "$TOKS"/*.tokenizer.json | head -n 1)
echo '{"id":"1","question":"How many singers do we have?","sql":"SELECT count(*) FROM singer"}' >"$TMP/one.jsonl"
if /usr/bin/time -f '%e %M' -o "$TMP/time" "$PAIRSHARD" tokenize --tokenizer-json "$big" "$TMP/one.jsonl" \
        -o /dev/null 2>"$TMP/err"; then
    read -r secs kb <"$TMP/time"
    echo "load $(basename "$big") ($(wc -c <"$big") bytes): pairshard ${secs}s wall, peak RSS $((kb / 1024)) MiB (whole process)"
else
    echo "load $(basename "$big"): pairshard refused: $(head -n 1 "$TMP/err")"
fi
echo "load $(basename "$big"): HF $(node "$NODE_BENCH" load "$big") (node process)"
echo "corpus: Spider train+dev pairs repeated, $corpus; one core each; machine: $(nproc) CPUs"
