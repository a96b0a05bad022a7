#!/bin/sh
# Benchmark: serving a set's preprocessing (pairshard/preprocess.h): µs per
# Spider dev question for one ps_preprocess call (clean + render + tokenize,
# no SQL, as at serving) and per record in batches of 64, on one core, for
# a pair-layout set and a picard+schema set (and, for scale, a causal set
# whose prompts hold a whole DDL schema, the same with its schemas selected
# to a budget, with the ranking's own cost per record, and a seq2seq T5 set); against HuggingFace tokenizers'
# node binding encoding the same questions alone (no cleaning, no template)
# in the same run. Python's pairshard.Preprocessor.encode too, when numpy is
# there; and the throughput of one preprocessor shared by 4 threads against
# 1 thread. Goal (issue 18): a single question under 50 µs, and faster than HF's
# tokenization alone.
set -eu
: "${PAIRSHARD:?}" "${PS_ROOT:?}" "${PS_BUILD:?}"
CONF="$PS_ROOT/tests/conformance"
VOCAB="$PS_ROOT/tests/data/vocab/bert-base-uncased.vocab.txt"
DEV="$PS_ROOT/tests/data/spider/dev.json"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ps-bench-pre.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

sh "$CONF/ensure.sh"
# Linked with the static library (the shared one's soname link is made by
# make install only).
link() {
    # shellcheck disable=SC2046
    ${CC:-cc} -O2 -std=c11 -I"$PS_ROOT/include" -I"$PS_ROOT" -o "$TMP/bench" "$PS_ROOT/bench/bench_preprocess.c" \
        "$PS_BUILD/lib/libpairshard.a" \
        $(pkg-config --libs lmdb libzstd libutf8proc jansson libpcre2-8 libxxhash zlib nettle sqlite3) \
        -pthread -lm "$@"
}
link 2>"$TMP/cc.err" || { cat "$TMP/cc.err" >&2; exit 1; }
"$PAIRSHARD" build -q --no-gate --vocab "$VOCAB" -o "$TMP/pair" "$DEV"
"$PAIRSHARD" build -q --no-gate --vocab "$VOCAB" --schema "$PS_ROOT/tests/data/spider/tables.json" \
    --template picard -o "$TMP/picard" "$DEV"
TOKS="$PS_ROOT/tests/data/tokenizers"
"$PAIRSHARD" build -q --no-gate --layout causal --tokenizer-json "$TOKS/llama3-style.tokenizer.json" \
    --schema "$PS_ROOT/tests/data/spider/tables.json" --template ddl --max-length 1024 -o "$TMP/causal" "$DEV"
# the same at --max-length 384: over half the prompts have their schema selected
"$PAIRSHARD" build -q --no-gate --layout causal --tokenizer-json "$TOKS/llama3-style.tokenizer.json" \
    --schema "$PS_ROOT/tests/data/spider/tables.json" --template ddl --max-length 384 -o "$TMP/selected" "$DEV"
"$PAIRSHARD" build -q --no-gate --layout seq2seq --tokenizer-json "$TOKS/t5-small.tokenizer.json" \
    --max-length 64 --max-target-length 200 -o "$TMP/seq2seq" "$DEV"

one_core() { if command -v taskset >/dev/null 2>&1; then taskset -c 0 "$@"; else "$@"; fi; }
echo "pairshard pair set    (question alone): $(one_core "$TMP/bench" "$TMP/pair" "$DEV")"
echo "pairshard picard set  (prompt + schema): $(one_core "$TMP/bench" "$TMP/picard" "$DEV" db)"
echo "pairshard causal set  (Llama-3-style BPE, ddl schema prompt): $(one_core "$TMP/bench" "$TMP/causal" "$DEV" db)"
echo "pairshard causal set  (the same, --max-length 384: schemas selected): $(one_core "$TMP/bench" "$TMP/selected" "$DEV" db "$PS_ROOT/tests/data/spider/tables.json" | tr '\n' ' ')"
echo "pairshard seq2seq set (T5 Unigram, question alone): $(one_core "$TMP/bench" "$TMP/seq2seq" "$DEV")"
# One preprocessor shared by 4 threads (pairshard/preprocess.h is
# thread-safe), against 1 thread on the same object: all CPUs, not one
# core; q/cpu-s (questions a second of CPU time) stays level unless the
# threads get in each other's way, whatever else the machine runs.
echo "pairshard picard set, one preprocessor, 1 vs 4 threads: $("$TMP/bench" "$TMP/picard" "$DEV" db --threads 4)"
echo "pairshard causal set, one preprocessor, 1 vs 4 threads: $("$TMP/bench" "$TMP/causal" "$DEV" db --threads 4)"
echo "HF tokenizers encode  (question alone):  $(TOKENIZERS_PARALLELISM=false one_core node "$PS_ROOT/bench/hf_encode_bench.js" "$VOCAB" "$DEV")"
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
    PAIRSHARD_LIB="$PS_BUILD/lib/libpairshard.so" PYTHONPATH="$PS_ROOT/python" one_core /usr/bin/python3 - "$TMP/pair" "$DEV" <<'PY'
import json, sys, time
import pairshard
pre = pairshard.Preprocessor(sys.argv[1])
qs = [r["question"] for r in json.load(open(sys.argv[2]))]
def timed(f, n):
    f(); t0 = time.perf_counter(); done = 0
    while time.perf_counter() - t0 < 1:
        f(); done += n
    return (time.perf_counter() - t0) / done * 1e6
single = timed(lambda: [pre.encode(q) for q in qs], len(qs))
batch = timed(lambda: [pre.encode(qs[i:i + 64]) for i in range(0, len(qs), 64)], len(qs))
print("Python Preprocessor.encode (pair set): single %.2f us/question batch64 %.2f us/record" % (single, batch))
PY
    # The same object shared by a pool of 4 threads (the binding releases
    # the GIL in libpairshard), on all CPUs.
    PAIRSHARD_LIB="$PS_BUILD/lib/libpairshard.so" PYTHONPATH="$PS_ROOT/python" /usr/bin/python3 - "$TMP/picard" "$DEV" <<'PY'
import concurrent.futures, json, sys, time
import pairshard
pre = pairshard.Preprocessor(sys.argv[1])
recs = json.load(open(sys.argv[2]))
def rate(threads):
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        def part(k):
            done, t_end, i = 0, time.perf_counter() + 1, k * len(recs) // threads
            while time.perf_counter() < t_end:
                r = recs[i % len(recs)]
                pre.encode(r["question"], db_id=r["db_id"])
                done, i = done + 1, i + 1
            return done
        t0 = time.perf_counter()
        done = sum(ex.map(part, range(threads)))
        return done / (time.perf_counter() - t0)
rate(4)
one, four = rate(1), rate(4)
print("Python Preprocessor.encode (picard set), one object, 1 vs 4 threads: %.0f q/s %.0f q/s (%.2fx)" % (one, four, four / one))
PY
fi
echo "questions: Spider dev ($(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$DEV")); vocab bert-base-uncased; one core (taskset -c 0); machine: $(nproc) CPUs"
