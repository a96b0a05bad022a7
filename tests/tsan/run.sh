#!/bin/sh
# `make check-tsan`: the threaded build and the reader's tests under
# ThreadSanitizer. Runs the threaded build and clean on enough records to go
# round the chunk ring several times (and a two-source mixture build), and on a plain JSONL file they read as
# line ranges (with runs of tiny lines: the chain's re-takes and its chunks
# past the ranges), the TSan builds of test_reader_*,
# test_validate_threads (the checks' KS sums over threads),
# test_dedupe_parts (the dedupe's parts on threads), test_ring (the ordered
# ring clean and build share: 8 workers, parts, followers, stop),
# build and clean with --holdout (the leakage index shared by the workers) and
# test_preprocess_threads (one preprocessor shared by 8 threads on every
# layout: pair with a BERT vocabulary, causal with GPT-2's and a
# Llama-3-style tokenizer.json, seq2seq with T5; and threads that start and
# end, their scratch going back to the pool), then the read_all tool (built here against the TSan
# library) streaming many small batches through 4 decoding threads and a
# tiny ring, so that slot hand-off, window sharing and epoch switches are
# exercised as often as possible. Any ThreadSanitizer report fails the
# run (halt_on_error). Prints TAP.
#   sh tests/tsan/run.sh BUILD_DIR      (e.g. build/tsan)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build/tsan}
case $BUILD in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
export PS_ROOT="$ROOT" PS_BUILD="$BUILD" PAIRSHARD="$BUILD/bin/pairshard"
export CMOCKA_MESSAGE_OUTPUT=TAP
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
. "$ROOT/tests/tap.sh"
. "$ROOT/tests/tools/build_tool.sh"

# Some kernels randomise mmap more than TSan's shadow layout allows;
# running without address randomisation avoids its "unexpected memory
# mapping" failure (it is not a finding).
NORAND=""
if command -v setarch >/dev/null 2>&1 && setarch "$(uname -m)" -R true 2>/dev/null; then
    NORAND="setarch $(uname -m) -R"
fi

# tsan_clean LOG: no ThreadSanitizer report in LOG
tsan_clean() { ! grep -q 'WARNING: ThreadSanitizer\|ThreadSanitizer: \(data race\|lock-order\|heap-use\)' "$1"; }

# The build's workers, stage threads (statistics, writes) and committing
# thread hand chunks round a ring of 2T+2, the workers look up the dedupe's
# parts side by side, and phase 2 writes the 3 shards with min(T, 3) writer
# threads at once; 8 copies of Spider dev are 8+ chunks, the last three
# repeating the first three's questions (duplicates chunks apart, two
# thirds of them under another label: a third of each copy's records are
# labelled "other", not the same third in the repeats).
python3 - "$PS_ROOT/tests/data/spider/dev.json" "$TMP/many.jsonl" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    for k in range(8):
        for i, r in enumerate(recs):
            db = "other" if i % 3 == (k >= 5) else r["db_id"]
            f.write(json.dumps({"question": "%s (%d)" % (r["question"], k % 5),
                                "query": r["query"], "db_id": db}) + "\n")
PY
VOCAB="$PS_ROOT/tests/data/vocab/bert-base-uncased.vocab.txt"
# One thread has threads too: the inputs' hasher, the shard's compacted
# copy, and the frees beside phase 2 (the validation state, the spools).
$NORAND "$PAIRSHARD" build -q --threads 1 --vocab "$VOCAB" --label-field db_id \
    --max-length 128 --shards 3 -o "$TMP/plain" "$TMP/many.jsonl" 2>"$TMP/b.log"
plain=$?
dups=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["accounting"]["duplicates"])' \
    "$TMP/plain/manifest.json" 2>/dev/null)
[ "$plain" -eq 0 ] && tsan_clean "$TMP/b.log" && [ "${dups:-0}" -eq $((3 * $(wc -l <"$TMP/many.jsonl") / 8)) ]
check "the 1-thread build under TSan: no report, the repeated questions' duplicates found (${dups:-none})" $?
if ! tsan_clean "$TMP/b.log"; then head -80 "$TMP/b.log" | sed 's/^/# /'; fi
for t in 2 3 5; do
    start=$(date +%s)
    $NORAND "$PAIRSHARD" build -q --threads $t --vocab "$VOCAB" --label-field db_id \
        --max-length 128 --shards 3 -o "$TMP/thr$t" "$TMP/many.jsonl" 2>"$TMP/b.log"
    rc=$?
    [ "$rc" -eq 0 ] && tsan_clean "$TMP/b.log"
    check "build --threads $t of $(wc -l <"$TMP/many.jsonl") records under TSan: exit 0, no report ($(($(date +%s) - start)) s)" $?
    if ! tsan_clean "$TMP/b.log" || [ "$rc" -ne 0 ]; then head -80 "$TMP/b.log" | sed 's/^/# /'; fi
    [ "$plain" -eq 0 ] && same_set "$TMP/plain" "$TMP/thr$t"
    check "build --threads $t under TSan: every file of the set as the 1-thread build's" $?
done
# A mixture (docs/BUILD.md, "Mixtures"): two sources with their own field
# names, a cleaner and statistics each, their chunks cleaned by the same
# workers, every check run per source beside phase 2, each block's sources
# written beside it.
python3 - "$TMP/many.jsonl" "$TMP/many_b.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as f:
    for l in open(sys.argv[1]):
        r = json.loads(l)
        f.write(json.dumps({"text": r["question"] + " again", "query": r["query"], "db": r["db_id"]}) + "\n")
PY
cat >"$TMP/mix.json" <<EOF
{"vocab": "$VOCAB", "max_length": 128, "shards": 3, "no_gate": true,
 "sources": [{"name": "a", "inputs": ["$TMP/many.jsonl"], "label_field": "db_id"},
             {"name": "b", "inputs": ["$TMP/many_b.jsonl"], "question_field": "text",
              "label_field": "db"}]}
EOF
$NORAND "$PAIRSHARD" build -q --threads 1 --config "$TMP/mix.json" -o "$TMP/mix1" 2>/dev/null
mix1=$?
$NORAND "$PAIRSHARD" build -q --threads 3 --config "$TMP/mix.json" -o "$TMP/mix3" 2>"$TMP/b.log"
rc=$?
[ "$rc" -eq 0 ] && tsan_clean "$TMP/b.log" && [ "$mix1" -eq 0 ] && same_set "$TMP/mix1" "$TMP/mix3"
check "a two-source mixture build --threads 3 under TSan: no report, the 1-thread set" $?
if ! tsan_clean "$TMP/b.log" || [ "$rc" -ne 0 ]; then head -80 "$TMP/b.log" | sed 's/^/# /'; fi
# One shard in blocks of 4 records: about 2,000 blocks, so the writer's
# compression threads (3, up to 192 blocks ahead of the block stored) are
# held back and let go again many times.
$NORAND "$PAIRSHARD" build -q --threads 1 --vocab "$VOCAB" --label-field db_id \
    --max-length 128 --block-records 4 -o "$TMP/small1" "$TMP/many.jsonl" 2>/dev/null
small=$?
$NORAND "$PAIRSHARD" build -q --threads 3 --vocab "$VOCAB" --label-field db_id \
    --max-length 128 --block-records 4 -o "$TMP/small3" "$TMP/many.jsonl" 2>"$TMP/b.log"
rc=$?
[ "$rc" -eq 0 ] && tsan_clean "$TMP/b.log" && [ "$small" -eq 0 ] && same_set "$TMP/small1" "$TMP/small3"
check "build --threads 3 --block-records 4 (one shard, ~2,000 blocks) under TSan: no report, the 1-thread set" $?
if ! tsan_clean "$TMP/b.log" || [ "$rc" -ne 0 ]; then head -80 "$TMP/b.log" | sed 's/^/# /'; fi
# A causal set: the workers tokenize each record's whole text, decode it
# back for the round-trip check (the tokenizer's decoder shared, read
# only) and the statistics stage keeps the first mismatch in input order;
# a prompt ending in a space makes every record a junction merge and a
# round-trip mismatch, so both paths run on every record.
SPACE_T="$TMP/space.json"
printf '{"prompt": "-- {question}\\nSQL: ", "completion": "{sql}"}' >"$SPACE_T"
for tpl in ddl "$SPACE_T"; do
    name=$(basename "$tpl" .json)
    for t in 1 3; do
        $NORAND "$PAIRSHARD" build -q --threads $t --layout causal --no-gate --max-length 0 \
            --tokenizer-json "$PS_ROOT/tests/data/tokenizers/llama2-style.tokenizer.json" \
            --schema "$PS_ROOT/tests/data/spider/tables.json" --template "$tpl" \
            -o "$TMP/causal-$name-$t" "$PS_ROOT/tests/data/spider/dev.json" 2>"$TMP/b$t.log"
        eval "rc$t=\$?"
    done
    [ "$rc1" -eq 0 ] && [ "$rc3" -eq 0 ] && tsan_clean "$TMP/b1.log" && tsan_clean "$TMP/b3.log" &&
        same_set "$TMP/causal-$name-1" "$TMP/causal-$name-3"
    check "causal build ($name) at 3 threads under TSan: no report, the 1-thread set" $?
    if ! tsan_clean "$TMP/b3.log"; then head -80 "$TMP/b3.log" | sed 's/^/# /'; fi
done
$NORAND "$PAIRSHARD" clean --threads 4 -o "$TMP/clean.jsonl" "$TMP/many.jsonl" 2>"$TMP/c.log"
rc=$?
[ "$rc" -eq 0 ] && tsan_clean "$TMP/c.log"
check "clean --threads 4 under TSan: exit 0, no report" $?
if [ "$rc" -ne 0 ] || ! tsan_clean "$TMP/c.log"; then head -60 "$TMP/c.log" | sed 's/^/# /'; fi
# Held-out sets: the workers find every kept record in one shared index
# (read only; the MinHash permutations made once by whichever thread comes
# first), drop those sharing a question, and the commit counts them in order.
DEV="$PS_ROOT/tests/data/spider/dev.json"
for t in 1 3; do
    $NORAND "$PAIRSHARD" build -q --threads $t --vocab "$VOCAB" --label-field db_id --no-gate \
        --holdout "$DEV" --drop-leaked question -o "$TMP/leak$t" "$TMP/many.jsonl" 2>"$TMP/l$t.log"
    eval "lrc$t=\$?"
done
[ "$lrc1" -eq 0 ] && [ "$lrc3" -eq 0 ] && tsan_clean "$TMP/l3.log" && same_set "$TMP/leak1" "$TMP/leak3"
check "build --holdout --drop-leaked at 3 threads under TSan: no report, the 1-thread set" $?
if ! tsan_clean "$TMP/l3.log"; then head -80 "$TMP/l3.log" | sed 's/^/# /'; fi
$NORAND "$PAIRSHARD" clean -q --threads 4 --holdout "$DEV" --drop-leaked question,sql \
    -o "$TMP/lclean.jsonl" "$TMP/many.jsonl" 2>"$TMP/lc.log"
rc=$?
[ "$rc" -le 1 ] && tsan_clean "$TMP/lc.log"
check "clean --holdout --drop-leaked --threads 4 under TSan: no report" $?
if ! tsan_clean "$TMP/lc.log"; then head -60 "$TMP/lc.log" | sed 's/^/# /'; fi

# Line ranges (ingest/range_chain.c): a plain JSONL file the workers read
# themselves, with runs of tiny lines that stop chunks early so that the
# chain re-takes and hands out chunks past the ranges.
python3 - "$TMP/many.jsonl" "$TMP/ranges.jsonl" <<'PY'
import random, sys
random.seed(3)
with open(sys.argv[2], "w") as f:
    for i, line in enumerate(open(sys.argv[1])):
        f.write(line)
        if i % 1500 == 700:
            f.write("{}\n" * random.randint(3000, 9000))
PY
$NORAND "$PAIRSHARD" build -q --threads 1 --no-gate --vocab "$VOCAB" --label-field db_id \
    --max-length 128 -o "$TMP/ranges1" "$TMP/ranges.jsonl" 2>/dev/null
ranges1=$?
$NORAND "$PAIRSHARD" build -q --threads 4 --no-gate --vocab "$VOCAB" --label-field db_id \
    --max-length 128 -o "$TMP/ranges4" "$TMP/ranges.jsonl" 2>"$TMP/b.log"
rc=$?
[ "$rc" -eq 0 ] && tsan_clean "$TMP/b.log" && [ "$ranges1" -eq 0 ] && same_set "$TMP/ranges1" "$TMP/ranges4"
check "build --threads 4 reading line ranges under TSan: no report, the 1-thread set" $?
if ! tsan_clean "$TMP/b.log" || [ "$rc" -ne 0 ]; then head -80 "$TMP/b.log" | sed 's/^/# /'; fi
$NORAND "$PAIRSHARD" clean -q --threads 3 -o "$TMP/ranges.out" "$TMP/ranges.jsonl" 2>"$TMP/c.log"
rc=$?
$NORAND "$PAIRSHARD" clean -q --threads 1 -o "$TMP/ranges1.out" "$TMP/ranges.jsonl" 2>/dev/null
[ "$rc" -eq 0 ] && tsan_clean "$TMP/c.log" && cmp -s "$TMP/ranges.out" "$TMP/ranges1.out"
check "clean --threads 3 reading line ranges under TSan: no report, the 1-thread lines" $?
if [ "$rc" -ne 0 ] || ! tsan_clean "$TMP/c.log"; then head -60 "$TMP/c.log" | sed 's/^/# /'; fi

# A text-to-SQL build: the schemas and the template are read by the
# workers (rendering prompts) while the inputs' hasher writes them into
# DIR/preprocess/ beside phase 1.
for t in 1 2; do
    $NORAND "$PAIRSHARD" build -q --threads $t --schema "$PS_ROOT/tests/data/spider/tables.json" \
        --template ddl --max-length 256 --no-gate --vocab "$VOCAB" --label-field db_id \
        -o "$TMP/t2s$t" "$PS_ROOT/tests/data/spider/dev.json" 2>"$TMP/b.log"
    rc=$?
    [ "$rc" -eq 0 ] && tsan_clean "$TMP/b.log" && [ -s "$TMP/t2s$t/preprocess/schemas.json" ]
    check "build --threads $t --schema --template ddl under TSan: exit 0, no report, schemas embedded" $?
    if ! tsan_clean "$TMP/b.log" || [ "$rc" -ne 0 ]; then head -80 "$TMP/b.log" | sed 's/^/# /'; fi
done
same_set "$TMP/t2s1" "$TMP/t2s2"
check "the text-to-SQL build under TSan: 1 and 2 threads, the same set" $?

for T in "$BUILD"/tests/test_reader_* "$BUILD"/tests/test_validate_threads "$BUILD"/tests/test_dedupe_parts \
    "$BUILD"/tests/test_ring "$BUILD"/tests/test_preprocess_threads; do
    [ -x "$T" ] || continue
    name=$(basename "$T")
    start=$(date +%s)
    $NORAND "$T" >"$TMP/unit.log" 2>&1
    rc=$?
    # Re-emit each cmocka failure as ours.
    grep -E '^not ok ' "$TMP/unit.log" | sed 's/^/# tsan: /'
    passed=$(grep '^ok ' "$TMP/unit.log" | grep -Eicv '#[[:space:]]*skip')
    failed=$(grep '^not ok ' "$TMP/unit.log" | grep -Eicv '#[[:space:]]*skip')
    [ "$rc" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    check "$name under TSan: $passed passed, $failed failed, exit $rc ($(($(date +%s) - start)) s)" $?
    tsan_clean "$TMP/unit.log"
    check "$name under TSan: no ThreadSanitizer report" $?
    if ! tsan_clean "$TMP/unit.log" || [ "$rc" -ne 0 ]; then
        grep -v '^ok ' "$TMP/unit.log" | head -80 | sed 's/^/# /'
    fi
done
ls "$BUILD"/tests/test_reader_* >/dev/null 2>&1
check "the TSan builds of the reader's tests (test_reader_*) exist" $?

build_tool read_all "$BUILD" "$TMP/read_all"
check "read_all builds against the TSan library" $?
"$PAIRSHARD" build -q --vocab "$PS_ROOT/tests/data/vocab/bert-base-uncased.vocab.txt" \
    --label-field db_id --max-length 128 --shards 3 --block-records 8 -o "$TMP/set" \
    "$PS_ROOT/tests/data/spider/dev.json"
check "build a set with small blocks (TSan build)" $?
for cfg in "--threads 4 --prefetch 2 --batch-size 4 --epochs 40" \
    "--threads 3 --prefetch 5 --batch-size 8 --epochs 30 --seed 2" \
    "--threads 1 --prefetch 2 --batch-size 32 --epochs 30 --seed 5"; do
    start=$(date +%s)
    # shellcheck disable=SC2086
    $NORAND "$TMP/read_all" "$TMP/set" --check-epochs $cfg >"$TMP/ra.out" 2>"$TMP/ra.log"
    rc=$?
    [ "$rc" -eq 0 ] && tsan_clean "$TMP/ra.log"
    check "read_all $cfg under TSan: every epoch exact, no report ($(($(date +%s) - start)) s)" $?
    if [ "$rc" -ne 0 ]; then head -60 "$TMP/ra.log" | sed 's/^/# /'; fi
done
# Ranks in separate processes, each with its own threads, at once.
pids=""
for k in 0 1 2 3; do
    $NORAND "$TMP/read_all" "$TMP/set" --rank $k --world-size 4 --threads 3 --prefetch 2 \
        --batch-size 4 --epochs 10 --ids "$TMP/ids.$k" >/dev/null 2>"$TMP/rank.$k.log" &
    pids="$pids $!"
done
bad=0
for p in $pids; do wait "$p" || bad=$((bad + 1)); done
clean=0
for k in 0 1 2 3; do tsan_clean "$TMP/rank.$k.log" || clean=1; done
dups=$(cat "$TMP"/ids.* | sort | uniq -d | wc -l)
[ "$bad" -eq 0 ] && [ "$clean" -eq 0 ] && [ "$dups" -eq 0 ]
check "4 ranks as concurrent processes under TSan: exit 0, no report, no record twice" $?
done_testing
