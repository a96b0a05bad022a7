#!/bin/sh
# CLI tests of `pairshard read` and `pairshard bench-read` on sets built from
# Spider: the epoch plan is a function of the seed, epoch and batching only
# (not of threads or prefetch); ranks split every record exactly once; a
# saved state resumes exactly; --max-tokens and --pad bucket keep their
# promises; the delivered tokens are the tokenizer's; damage is reported
# with its shard, bucket and block (or skipped); newer formats are refused;
# a weighted mixture (a joined set, or two sets) reads and resumes exactly.
. "$PS_ROOT/tests/tap.sh"
VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
DEV="$TMP/dev"
TRAIN="$TMP/train"
R() { "$PAIRSHARD" read "$@"; }
B() { "$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id --max-length 128 "$@"; }

R --help >"$TMP/help" 2>&1
check "read --help exits 0" $?

# q.py: the JSON-line checks, one subcommand each (exit 0 = as expected).
cat >"$TMP/q.py" <<'PY'
import collections, json, sys

def lines(path):
    return [json.loads(l) for l in open(path, encoding="utf-8")]

def ids(path):
    return [i for b in lines(path) for i in b["ids"]]

def fail(why):
    sys.exit("# " + why)

cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "count":              # FILE: records in it
    print(len(ids(args[0])))
elif cmd == "ids":              # FILE: one id a line, in delivered order
    for i in ids(args[0]):
        sys.stdout.write(json.dumps(i, ensure_ascii=False) + "\n")
elif cmd == "unique":           # FILE N: N records, each once
    got = ids(args[0])
    if len(got) != int(args[1]) or len(set(got)) != len(got):
        fail("%d ids, %d distinct, expected %s" % (len(got), len(set(got)), args[1]))
elif cmd == "steps":            # FILE [EPOCH]: steps 0.., one epoch, shapes agree
    bs = lines(args[0])
    for k, b in enumerate(bs):
        if b["step"] != k or len(b["ids"]) != b["B"] or len(b["lengths"]) != b["B"] \
                or max(b["lengths"]) > b["T"] or (len(args) > 1 and b["epoch"] != int(args[1])):
            fail("line %d: %r" % (k, {x: b[x] for x in ("step", "epoch", "B", "T")}))
elif cmd == "bucket-order":     # FILE: buckets never go back (no-shuffle)
    bk = [b["bucket"] for b in lines(args[0])]
    if bk != sorted(bk) or len(set(bk)) < 2:
        fail("bucket sequence %r" % bk[:40])
elif cmd == "interleaved":      # FILE: buckets do go back and forth (shuffle)
    bk = [b["bucket"] for b in lines(args[0])]
    if bk == sorted(bk):
        fail("shuffled batches come bucket by bucket")
elif cmd == "same-multiset":    # A B: same ids, other order
    a, b = ids(args[0]), ids(args[1])
    if sorted(a) != sorted(b):
        fail("different records")
    if a == b:
        fail("same order")
elif cmd == "max-tokens":       # FILE BUDGET: B*T within it unless B == 1
    budget = int(args[1])
    bad = [b for b in lines(args[0]) if b["B"] > 1 and b["B"] * b["T"] > budget]
    if bad or not lines(args[0]):
        fail("%d batches over the budget" % len(bad))
    if len({b["B"] for b in lines(args[0])}) < 2:
        fail("every bucket got the same batch size")
elif cmd == "pad-bucket":       # FILE MANIFEST: T is the bucket's bound
    bounds = json.load(open(args[1]))["buckets"]
    for b in lines(args[0]):
        if b["T"] != bounds[b["bucket"]]:
            fail("bucket %d: T %d, bound %d" % (b["bucket"], b["T"], bounds[b["bucket"]]))
        lo = bounds[b["bucket"] - 1] if b["bucket"] else 0
        if not all(lo < l <= bounds[b["bucket"]] for l in b["lengths"]):
            fail("a length outside bucket %d" % b["bucket"])
elif cmd == "full":             # FILE BS: every batch has BS records
    bad = [b["B"] for b in lines(args[0]) if b["B"] != int(args[1])]
    if bad:
        fail("batch sizes %r" % bad[:10])
elif cmd == "tokens":           # READ TOKENIZE CLEAN: rows equal the tokenizer's
    tok = {o["id"]: o for o in lines(args[1])}
    label = {o["id"]: o["label"] for o in lines(args[2])}
    n = 0
    for b in lines(args[0]):
        for i, rid in enumerate(b["ids"]):
            t = tok.get(rid)
            row, types = b["input_ids"][i], b["token_type_ids"][i]
            if t is None or row != t["input_ids"] or types != t["token_type_ids"]:
                fail("%s: read %r, tokenize %r" % (rid, row[:12], t and t["input_ids"][:12]))
            if len(row) != b["lengths"][i] or row[0] != 101 or 102 not in row:
                fail("%s: length %d, row %r" % (rid, b["lengths"][i], row[:8]))
            if b["label_names"][i] != label[rid]:
                fail("%s: label %r, clean says %r" % (rid, b["label_names"][i], label[rid]))
            if (b["labels"][i] == -1) != (label[rid] is None):
                fail("%s: label id %r for %r" % (rid, b["labels"][i], label[rid]))
            n += 1
    if n != len(tok):
        fail("%d records read, %d tokenized" % (n, len(tok)))
elif cmd == "json":             # FILE EXPR: the bench-read object o satisfies EXPR
    o = json.load(open(args[0]))
    if not eval(args[1], {"o": o}):
        fail("%s is false for %s" % (args[1], json.dumps(o)))
else:
    fail("unknown check " + cmd)
PY
Q() { python3 "$TMP/q.py" "$@"; }

# ---- usage ------------------------------------------------------------------
all=0
for flag in --batch-size --max-tokens --pad --pad-multiple --sort-pool --seed --epoch --rank --world-size \
    --no-shuffle --drop-last --threads --prefetch --int32 --limit --save-state --resume \
    --skip-corrupt --device --labels --tokens --check --help; do
    grep -q -- "$flag" "$TMP/help" || { echo "# --help lacks $flag"; all=1; }
done
check "read --help documents every flag" $all
"$PAIRSHARD" bench-read --help >"$TMP/bhelp" 2>&1 && grep -q -- "--epochs" "$TMP/bhelp" &&
    grep -q -- "--json" "$TMP/bhelp" && grep -q -- "--max-tokens" "$TMP/bhelp"
check "bench-read --help documents --epochs, --json and the batching flags" $?

B --shards 2 -o "$DEV" "$DATA/spider/dev.json"
check "build Spider dev into 2 shards" $?
B --shards 3 -o "$TRAIN" "$DATA/spider/train.json"
check "build Spider train into 3 shards" $?
"$PAIRSHARD" inspect --json "$DEV" >"$TMP/dev.inspect" &&
    "$PAIRSHARD" inspect --json "$TRAIN" >"$TMP/train.inspect"
check "inspect both sets" $?
N=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["records"])' "$TMP/dev.inspect")
NT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["records"])' "$TMP/train.inspect")

usage_fails() { # description args...: exit 2 and a message
    d=$1; shift
    R "$@" >/dev/null 2>"$TMP/err"
    [ $? -eq 2 ] && [ -s "$TMP/err" ]
    check "$d: exit 2 with a message" $?
}
usage_fails "no DIR"
usage_fails "two DIRs" "$DEV" "$DEV"
usage_fails "an unknown option" --bogus "$DEV"
usage_fails "--batch-size 0" --batch-size 0 "$DEV"
usage_fails "--batch-size with --max-tokens" --batch-size 8 --max-tokens 512 "$DEV"
usage_fails "--pad sideways" --pad sideways "$DEV"
usage_fails "--prefetch 1" --prefetch 1 "$DEV"
usage_fails "--rank 3 --world-size 3" --rank 3 --world-size 3 "$DEV"
usage_fails "no set there" "$TMP/nonexistent"

# ---- one epoch, every record once ----------------------------------------------
R --no-shuffle --world-size 1 --rank 0 "$DEV" >"$TMP/ns" 2>"$TMP/err"
check "read --no-shuffle exits 0" $?
Q ids "$TMP/ns" | sort >"$TMP/all.ids"
[ "$N" -eq 1034 ] && Q unique "$TMP/ns" "$N"
check "--no-shuffle delivers each of inspect's $N records once" $?
Q steps "$TMP/ns" 0
check "steps count 0, 1, ... in epoch 0; B, ids and lengths agree" $?
Q bucket-order "$TMP/ns"
check "--no-shuffle goes bucket by bucket" $?
R --no-shuffle --seed 99 --world-size 1 "$DEV" | cmp -s - "$TMP/ns"
check "--no-shuffle does not depend on the seed" $?

R --seed 7 --world-size 1 --check "$DEV" >"$TMP/s7" 2>"$TMP/err"
check "read --seed 7 --check exits 0 (masks, padding, types, T, lengths agree)" $?
R --seed 7 --world-size 1 "$DEV" | cmp -s - "$TMP/s7"
check "same seed: byte-identical output" $?
R --seed 8 --world-size 1 "$DEV" >"$TMP/s8"
Q same-multiset "$TMP/s7" "$TMP/s8"
check "another seed: the same records in another order" $?
Q interleaved "$TMP/s7"
check "shuffled: the buckets' batches are interleaved" $?
Q same-multiset "$TMP/s7" "$TMP/ns"
check "shuffled and unshuffled: the same records" $?
R --seed 7 --epoch 1 --world-size 1 "$DEV" >"$TMP/s7e1"
Q same-multiset "$TMP/s7" "$TMP/s7e1" && Q steps "$TMP/s7e1" 1
check "epoch 1: the same records in another order, epoch 1 in every line" $?

# Threads, prefetch, element type: never the batches.
R --seed 7 --world-size 1 --labels --tokens "$DEV" >"$TMP/t2" 2>"$TMP/err"
all=$?
for v in "--threads 1" "--threads 4" "--prefetch 2" "--prefetch 8" "--threads 4 --prefetch 2" \
    "--threads 1 --prefetch 8" "--int32" "--device 0"; do
    # shellcheck disable=SC2086
    R --seed 7 --world-size 1 --labels --tokens $v "$DEV" 2>"$TMP/err" | cmp -s - "$TMP/t2" ||
        { echo "# $v differs"; all=1; }
done
check "--threads 1/4, --prefetch 2/8, --int32, --device 0: identical output (tokens, labels)" $all
R --seed 7 --world-size 1 --threads 4 --prefetch 2 --check "$TRAIN" >"$TMP/tr4" 2>"$TMP/err" &&
    R --seed 7 --world-size 1 --threads 1 --prefetch 8 "$TRAIN" | cmp -s - "$TMP/tr4"
check "train: --threads 4 --prefetch 2 and --threads 1 --prefetch 8 identical" $?
Q unique "$TMP/tr4" "$NT"
check "train: each of its $NT records once" $?

# ---- ranks ---------------------------------------------------------------------
rank_case() { # SET IDS W extra-args...: every rank the same count, union = the set's ids
    set_=$1 idfile=$2 w=$3; shift 3
    : >"$TMP/union"
    counts=""
    r=0
    while [ $r -lt "$w" ]; do
        R --seed 3 --rank $r --world-size "$w" "$@" "$set_" >"$TMP/rank.$r" 2>"$TMP/err" || return 1
        Q steps "$TMP/rank.$r" || return 1
        counts="$counts $(wc -l <"$TMP/rank.$r")"
        cat "$TMP/rank.$r" >>"$TMP/union"
        r=$((r + 1))
    done
    [ "$(echo "$counts" | tr ' ' '\n' | sed '/^$/d' | sort -u | wc -l)" -eq 1 ] ||
        { echo "# batches per rank:$counts"; return 1; }
    Q unique "$TMP/union" "$(wc -l <"$idfile")" && Q ids "$TMP/union" | sort | cmp -s - "$idfile"
}
for w in 1 2 3 8; do
    rank_case "$DEV" "$TMP/all.ids" $w
    check "dev, world size $w: equal batch counts, every record once over the ranks" $?
done
R --no-shuffle --world-size 1 "$TRAIN" >"$TMP/train.ns" && Q ids "$TMP/train.ns" | sort >"$TMP/train.ids" &&
    [ "$(wc -l <"$TMP/train.ids")" -eq "$NT" ]
check "train --no-shuffle: as many records as inspect says" $?
rank_case "$TRAIN" "$TMP/train.ids" 5 --batch-size 24
check "train, world size 5, batch size 24: equal counts, every record once" $?
RANK=1 WORLD_SIZE=3 R --seed 3 "$DEV" >"$TMP/env" 2>"$TMP/err" &&
    R --seed 3 --rank 1 --world-size 3 "$DEV" | cmp -s - "$TMP/env"
check "RANK=1 WORLD_SIZE=3 in the environment = --rank 1 --world-size 3" $?

for w in 1 2 3 8; do
    ok=0
    total=0
    r=0
    while [ $r -lt $w ]; do
        R --seed 3 --rank $r --world-size $w --drop-last --batch-size 32 "$DEV" >"$TMP/dl.$r" 2>"$TMP/err" || ok=1
        Q full "$TMP/dl.$r" 32 || ok=1
        total=$((total + $(Q count "$TMP/dl.$r")))
        r=$((r + 1))
    done
    [ "$(cat "$TMP"/dl.* | wc -l)" -eq $(($(wc -l <"$TMP/dl.0") * w)) ] || ok=1
    cat "$TMP"/dl.* >"$TMP/dlu"
    Q unique "$TMP/dlu" $total || ok=1
    "$PAIRSHARD" bench-read --seed 3 --rank 0 --world-size $w --drop-last --batch-size 32 --json \
        "$DEV" >"$TMP/drop.json" 2>"$TMP/err" || ok=1
    # Dropped: each bucket's partial batch (< 32 each) and then fewer than W
    # batches to make the count divisible.
    nb=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["buckets"]))' "$TMP/dev.inspect")
    Q json "$TMP/drop.json" "o['records_dropped'] == $N - $total and o['records_dropped'] < 32 * ($nb + $w) and o['records_per_epoch'] == $total // $w and o['records'] == o['records_per_epoch']" || ok=1
    rm -f "$TMP"/dl.[0-9]*
    check "--drop-last, world size $w: full batches, equal counts, no repeats, dropped = $N - delivered" $ok
done

# ---- save and resume -------------------------------------------------------------
resume_case() { # SET W K extra-args...
    set_=$1 w=$2 k=$3; shift 3
    R --seed 11 --rank $((w - 1)) --world-size "$w" "$@" "$set_" >"$TMP/full" 2>"$TMP/err" || return 1
    nl=$(wc -l <"$TMP/full")
    [ "$k" = last ] && k=$nl
    R --seed 11 --rank $((w - 1)) --world-size "$w" "$@" --limit "$k" --save-state "$TMP/st" \
        "$set_" >"$TMP/head" 2>"$TMP/err" || return 1
    [ "$(wc -c <"$TMP/st")" -eq 128 ] || return 1
    head -n "$k" "$TMP/full" | cmp -s - "$TMP/head" || { echo "# --limit $k: not the first $k lines"; return 1; }
    R --seed 11 --rank $((w - 1)) --world-size "$w" "$@" --resume "$TMP/st" "$set_" >"$TMP/tail" 2>"$TMP/err" ||
        { sed 's/^/# /' "$TMP/err"; return 1; }
    tail -n +$((k + 1)) "$TMP/full" | cmp -s - "$TMP/tail" || { echo "# resume after $k: not the remaining lines"; return 1; }
}
for w in 1 3; do
    for k in 0 1 9 last; do
        resume_case "$TRAIN" "$w" "$k" --batch-size 16
        check "train, world size $w: --save-state after $k batches, --resume gives exactly the rest" $?
    done
done
resume_case "$DEV" 8 2 --max-tokens 1024 --pad bucket
check "dev, world size 8, --max-tokens 1024 --pad bucket: resume after 2 batches" $?
resume_case "$DEV" 2 5 --epoch 1 --drop-last --threads 1
check "dev, world size 2, epoch 1, --drop-last: resume after 5 batches" $?
# Twice in a row: save again after resuming.
R --seed 11 --world-size 1 --batch-size 16 "$TRAIN" >"$TMP/full" &&
    R --seed 11 --world-size 1 --batch-size 16 --limit 4 --save-state "$TMP/st1" "$TRAIN" >"$TMP/p1" &&
    R --seed 11 --world-size 1 --batch-size 16 --resume "$TMP/st1" --limit 6 --save-state "$TMP/st2" "$TRAIN" >"$TMP/p2" &&
    R --seed 11 --world-size 1 --batch-size 16 --resume "$TMP/st2" "$TRAIN" >"$TMP/p3" &&
    cat "$TMP/p1" "$TMP/p2" "$TMP/p3" | cmp -s - "$TMP/full"
check "resume, save, resume again: the pieces make the uninterrupted run" $?

R --seed 11 --world-size 1 --batch-size 16 --limit 3 --save-state "$TMP/st" "$TRAIN" >/dev/null 2>&1
R --seed 11 --world-size 1 --batch-size 16 --resume "$TMP/st" --limit 0 --save-state "$TMP/st0" "$TRAIN" &&
    cmp -s "$TMP/st" "$TMP/st0" &&
    R --seed 11 --world-size 1 --batch-size 16 --threads 1 --prefetch 9 --limit 3 --save-state "$TMP/stt" "$TRAIN" >/dev/null &&
    cmp -s "$TMP/st" "$TMP/stt"
check "the state is a function of the position: resume + save at once, or other threads, give the same 128 bytes" $?
for v in "--batch-size 32 --world-size 1" "--batch-size 16 --world-size 2" \
    "--batch-size 16 --world-size 1 --drop-last" "--max-tokens 2048 --world-size 1" \
    "--batch-size 16 --world-size 1 --sort-pool 2" "--batch-size 16 --world-size 1 --shuffle-window 4" \
    "--batch-size 16 --world-size 1 --no-shuffle"; do
    # shellcheck disable=SC2086
    R --seed 11 $v --resume "$TMP/st" "$TRAIN" >/dev/null 2>"$TMP/err"
    rc=$?
    { [ $rc -eq 1 ] || [ $rc -eq 2 ]; } && [ -s "$TMP/err" ]
    check "resume with other options ($v): exit $rc with a message" $?
done
R --seed 11 --world-size 1 --max-tokens 2048 --limit 3 --save-state "$TMP/stm" "$TRAIN" >/dev/null 2>&1
R --seed 11 --world-size 1 --max-tokens 2048 --pad-multiple 64 --resume "$TMP/stm" "$TRAIN" >/dev/null 2>"$TMP/err"
rc=$?
{ [ $rc -eq 1 ] || [ $rc -eq 2 ]; } && [ -s "$TMP/err" ]
check "resume under --max-tokens with another --pad-multiple (other batch sizes): exit $rc with a message" $?
R --seed 11 --world-size 1 --batch-size 16 --resume "$TMP/st" "$DEV" >/dev/null 2>"$TMP/err"
rc=$?
{ [ $rc -eq 1 ] || [ $rc -eq 2 ]; } && [ -s "$TMP/err" ]
check "resume on another set: exit $rc with a message" $?
cp "$TMP/st" "$TMP/st.bad"
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[20]^=0x40; open(p,"wb").write(b)' "$TMP/st.bad"
R --seed 11 --world-size 1 --batch-size 16 --resume "$TMP/st.bad" "$TRAIN" >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && [ -s "$TMP/err" ]
check "a damaged state file: exit 2 with a message" $?
head -c 40 "$TMP/st" >"$TMP/st.short"
R --seed 11 --world-size 1 --batch-size 16 --resume "$TMP/st.short" "$TRAIN" >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "128 bytes" "$TMP/err"
check "a short state file: exit 2 naming the size" $?

# ---- batching promises -------------------------------------------------------------
R --max-tokens 2048 --world-size 1 --check "$TRAIN" >"$TMP/mt" 2>"$TMP/err" &&
    Q max-tokens "$TMP/mt" 2048 && Q unique "$TMP/mt" "$NT"
check "--max-tokens 2048: every B*T <= 2048, batch sizes vary by bucket, every record once" $?
R --max-tokens 100 --world-size 1 --check "$DEV" >"$TMP/mt" 2>"$TMP/err" &&
    Q max-tokens "$TMP/mt" 100 && Q unique "$TMP/mt" "$N"
check "--max-tokens 100 (below the longest bounds): batches of 1 where needed, every record once" $?
R --pad bucket --world-size 1 --check "$DEV" >"$TMP/pb" 2>"$TMP/err" &&
    Q pad-bucket "$TMP/pb" "$DEV/manifest.json"
check "--pad bucket: T is the bucket's bound; every length within its bucket" $?
R --pad-multiple 8 --world-size 1 --check "$DEV" >"$TMP/pm" 2>"$TMP/err" &&
    python3 -c 'import json,sys; sys.exit(not all(json.loads(l)["T"] % 8 == 0 for l in open(sys.argv[1])))' "$TMP/pm"
check "--pad-multiple 8: T is a multiple of 8 (and --check agrees with the rest)" $?

R --sort-pool 1 --seed 7 --world-size 1 --check "$DEV" >"$TMP/sp1" 2>"$TMP/err" &&
    Q same-multiset "$TMP/s7" "$TMP/sp1"
check "--sort-pool 1: the same records, other batches" $?
"$PAIRSHARD" bench-read --sort-pool 1 --seed 7 --world-size 1 --json "$DEV" >"$TMP/sp1.json" &&
    "$PAIRSHARD" bench-read --seed 7 --world-size 1 --json "$DEV" >"$TMP/sp8.json" &&
    python3 -c 'import json,sys; a,b=(json.load(open(p))["padding_waste"] for p in sys.argv[1:]); print("# padding waste, sort pool 1: %.4f, default: %.4f" % (a, b)); sys.exit(not b < a)' "$TMP/sp1.json" "$TMP/sp8.json"
check "the default length-sorting pool pads less than --sort-pool 1" $?

all=0
for v in "--pad bucket --pad-multiple 8" "--max-tokens 1000 --pad-multiple 8" "--int32 --pad-id 7" \
    "--drop-last --max-tokens 2000 --world-size 3 --rank 2" "--no-shuffle --batch-size 7" \
    "--shuffle-window 1 --sort-pool 3 --batch-size 5" "--threads 3 --prefetch 3 --world-size 2 --rank 1"; do
    # shellcheck disable=SC2086
    R --world-size 1 --check $v "$DEV" >"$TMP/chk" 2>"$TMP/err" && [ -s "$TMP/chk" ] ||
        { echo "# --check $v:"; sed 's/^/#   /' "$TMP/err"; all=1; }
done
check "--check passes (arrays agree with lengths, T, budgets) under 7 option mixes" $all

# Padding waste: bucketed against random batching of the same records.
"$PAIRSHARD" bench-read --world-size 1 --batch-size 32 --json "$DEV" >"$TMP/bench.json" 2>"$TMP/err"
check "bench-read --json on dev exits 0" $?
Q json "$TMP/bench.json" "o['records'] == $N and o['batches'] > 0 and o['tokens'] >= o['real_tokens'] > 0 and o['memcpy_bytes_per_s'] > 0 and o['open_ms'] >= 0 and o['first_batch_ms'] >= o['open_ms']"
check "bench-read: one epoch of $N records, padded >= real tokens, a memcpy bound, start-up" $?
Q json "$TMP/bench.json" "o['padding_waste'] < 0.05 and o['padding_waste'] < o['random_padding_waste'] / 5"
check "Spider dev, default buckets: padding waste < 5% and under a fifth of random batching's" $?
B --shards 2 --auto-buckets 24 --bucket-multiple 4 -o "$TMP/fine" "$DATA/spider/dev.json" &&
    "$PAIRSHARD" bench-read --world-size 1 --batch-size 32 --json "$TMP/fine" >"$TMP/fine.json" 2>"$TMP/err"
check "build and bench-read dev with 24 buckets" $?
Q json "$TMP/fine.json" "o['padding_waste'] < 0.05 and o['random_padding_waste'] > 0.3"
check "24 buckets on Spider dev: padding waste < 5% (random batching > 30%)" $?
sed -n 's/.*"\(padding_waste\|random_padding_waste\)": \([0-9.e-]*\).*/# \1 \2/p' "$TMP/fine.json"
"$PAIRSHARD" bench-read --world-size 1 --epochs 3 --json "$DEV" >"$TMP/b3.json" 2>"$TMP/err" &&
    Q json "$TMP/b3.json" "o['records'] == 3 * $N and o['epochs'] == 3"
check "bench-read --epochs 3 reads 3 x $N records" $?
"$PAIRSHARD" bench-read --world-size 1 "$DEV" >"$TMP/b.txt" 2>"$TMP/err" &&
    grep -q "tokens/s" "$TMP/b.txt" && grep -q "memcpy bound" "$TMP/b.txt" &&
    grep -q "random batching" "$TMP/b.txt"
check "bench-read text output" $?

# ---- the delivered tokens are the tokenizer's --------------------------------------
"$PAIRSHARD" clean -q --label-field db_id "$DATA/spider/dev.json" -o "$TMP/dev.jsonl" 2>"$TMP/err" &&
    "$PAIRSHARD" tokenize --vocab "$VOCAB" --max-length 128 "$TMP/dev.jsonl" -o "$TMP/dev.tok" 2>"$TMP/err"
check "clean and tokenize Spider dev" $?
Q tokens "$TMP/t2" "$TMP/dev.tok" "$TMP/dev.jsonl"
check "--tokens: every record's ids and types equal 'pairshard tokenize', labels equal db_id" $?

"$PAIRSHARD" build -q --vocab "$VOCAB" --max-length 128 -o "$TMP/nolabel" "$DATA/spider/dev.json" &&
    R --world-size 1 --labels --check "$TMP/nolabel" >"$TMP/nl" 2>"$TMP/err" &&
    python3 -c 'import json,sys; L=[json.loads(l) for l in open(sys.argv[1])]; sys.exit(not (L and all(set(b["labels"]) == {-1} and set(b["label_names"]) == {None} for b in L)))' "$TMP/nl"
check "a set without labels: --labels gives -1 and null for every record" $?

# ---- damage and versions -------------------------------------------------------------
fresh() { rm -rf "$TMP/bad"; cp -r "$DEV" "$TMP/bad"; }
fresh
python3 - "$TMP/bad/shard-00000.mdb" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
at = b.find(b"\x28\xb5\x2f\xfd")   # the first zstd frame: a block value
assert at >= 0
b[at + 40] ^= 0x5a
open(p, "wb").write(b)
PY
R --world-size 1 "$TMP/bad" >"$TMP/bad.out" 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] && grep -q "shard-00000.mdb: bucket [0-9]* block [0-9]*" "$TMP/err"
check "a flipped byte inside a block: exit 1 naming the shard, bucket and block" $?
[ $rc -eq 1 ] || sed 's/^/# /' "$TMP/err"
R --world-size 1 --skip-corrupt "$TMP/bad" >"$TMP/skip.out" 2>"$TMP/err"
rc=$?
got=$(Q count "$TMP/skip.out")
[ $rc -eq 0 ] && [ "$got" -lt "$N" ] && [ "$got" -gt 0 ] && grep -q "skipped" "$TMP/err"
check "--skip-corrupt: completes with fewer records ($got of $N) and says what it skipped" $?
Q ids "$TMP/skip.out" | sort >"$TMP/skip.ids"
[ -z "$(comm -23 "$TMP/skip.ids" "$TMP/all.ids")" ] && [ -z "$(uniq -d "$TMP/skip.ids")" ]
check "--skip-corrupt: only records of the set, none twice" $?
"$PAIRSHARD" bench-read --world-size 1 --skip-corrupt --json "$TMP/bad" >"$TMP/skip.json" 2>"$TMP/err" &&
    Q json "$TMP/skip.json" "o['skipped_records'] > 0 and o['records'] + o['skipped_records'] == $N"
check "bench-read --skip-corrupt: delivered + skipped records = $N" $?

fresh
python3 - "$TMP/bad/manifest.json" <<'PY'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
m["format_version"] = 3
json.dump(m, open(p, "w"), indent=2)
PY
R "$TMP/bad" >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "newer" "$TMP/err"
check "a newer manifest format_version: exit 2, saying it is newer" $?
"$PAIRSHARD" bench-read "$TMP/bad" >/dev/null 2>"$TMP/err"
[ $? -eq 2 ]
check "bench-read on a newer manifest: exit 2" $?
fresh
rm "$TMP/bad/shard-00001.mdb"
R --world-size 1 "$TMP/bad" >/dev/null 2>"$TMP/err"
rc=$?
{ [ $rc -eq 1 ] || [ $rc -eq 2 ]; } && grep -q "shard-00001.mdb" "$TMP/err"
check "a missing shard: exit $rc naming it" $?

# An empty set (every record rejected): read and bench-read refuse it, naming
# the set, instead of an epoch of no batches (a trainer would run no steps).
printf '{"question": "how many singers?", "sql": 1, "db_id": "singer"}\n{"question": "no sql", "db_id": "singer"}\n' >"$TMP/rejected.jsonl"
B -o "$TMP/empty" "$TMP/rejected.jsonl" 2>"$TMP/err"
[ $? -eq 1 ] && [ ! -e "$TMP/empty" ] && grep -q "FAIL empty_set .*0 records kept of 2 read" "$TMP/err"
check "a build whose every record is rejected: the gate stops it, nothing published" $? "$TMP/err"
B --no-gate -o "$TMP/empty" "$TMP/rejected.jsonl" 2>"$TMP/err"
[ $? -eq 0 ] && [ -f "$TMP/empty/manifest.json" ] && grep -q "warning: .*empty holds no records" "$TMP/err"
check "... --no-gate publishes the (empty) set, with a warning" $? "$TMP/err"
R "$TMP/empty" >"$TMP/empty.out" 2>"$TMP/err"
[ $? -eq 2 ] && [ ! -s "$TMP/empty.out" ] && grep -q "$TMP/empty: the shard set holds no records" "$TMP/err"
check "read of a set with 0 records: exit 2, naming the set" $?
"$PAIRSHARD" bench-read "$TMP/empty" >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "no records" "$TMP/err"
check "bench-read of a set with 0 records: exit 2" $?
# A --part of a tiny corpus can be empty: it is refused alone, and merges.
printf '{"question": "how many singers do we have?", "sql": "SELECT count(*) FROM singer", "db_id": "singer"}\n' >"$TMP/one.jsonl"
B --part 0/2 -o "$TMP/tiny0" "$TMP/one.jsonl" 2>/dev/null && B --part 1/2 -o "$TMP/tiny1" "$TMP/one.jsonl" 2>/dev/null
check "two parts of a one-record corpus build" $?
n0=$(R "$TMP/tiny0" 2>/dev/null | wc -l) n1=$(R "$TMP/tiny1" 2>/dev/null | wc -l)
[ $((n0 + n1)) -eq 1 ]
check "... one part is empty (read refuses it), the other holds the record" $?
"$PAIRSHARD" merge -q -o "$TMP/tiny" "$TMP/tiny0" "$TMP/tiny1" 2>"$TMP/err" &&
    [ "$(Q count "$(R "$TMP/tiny" >"$TMP/tiny.out" && echo "$TMP/tiny.out")")" -eq 1 ]
check "merge of the empty part and the other: a set of 1 record that reads" $?

# Mixtures: dev and train joined by merge (two sources, named after the sets)
# and read with weights; the same two sets read as a list; a resume of a
# weighted list; bad weights refused.
"$PAIRSHARD" merge -q --no-gate -o "$TMP/mix" "$DEV" "$TRAIN" 2>"$TMP/err" &&
    "$PAIRSHARD" inspect --verify "$TMP/mix" >/dev/null 2>"$TMP/err"
check "merge joins dev and train (not parts) into a set that verifies" $? "$TMP/err"
cat >"$TMP/mixq.py" <<'PY'
import collections, json, sys
n = collections.Counter()
times = collections.Counter()
for line in open(sys.argv[1]):
    b = json.loads(line)
    n.update(b["sources"])
    times.update(zip(b["sources"], b["ids"]))
want = {"dev": 2 * int(sys.argv[2]), "train": int(0.5 * int(sys.argv[3]) + 0.5)}
ok = dict(n) == want and all(v == (2 if s == "dev" else 1) for (s, _), v in times.items())
print(dict(n), want)
sys.exit(0 if ok else 1)
PY
ndev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["records"])' "$DEV/manifest.json")
ntrain=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["records"])' "$TRAIN/manifest.json")
R "$TMP/mix" --weights dev=2,train=0.5 --seed 3 >"$TMP/mix.out" 2>"$TMP/err" &&
    python3 "$TMP/mixq.py" "$TMP/mix.out" "$ndev" "$ntrain" >"$TMP/err" 2>&1
check "read --weights dev=2,train=0.5: every dev record twice, half of train once" $? "$TMP/err"
R "$DEV" "$TRAIN" --weights dev=2,train=0.5 --seed 3 >"$TMP/mix2.out" 2>"$TMP/err" &&
    python3 "$TMP/mixq.py" "$TMP/mix2.out" "$ndev" "$ntrain" >"$TMP/err" 2>&1
check "read DEV TRAIN (two sets as one mixture): the same counts" $? "$TMP/err"
R "$DEV" "$TRAIN" --weights dev=2,train=0.5 --seed 3 --limit 40 --save-state "$TMP/mix.st" \
    >"$TMP/mix3a.out" 2>"$TMP/err" &&
    R "$DEV" "$TRAIN" --weights dev=2,train=0.5 --resume "$TMP/mix.st" >"$TMP/mix3b.out" 2>>"$TMP/err" &&
    cat "$TMP/mix3a.out" "$TMP/mix3b.out" | cmp -s - "$TMP/mix2.out"
check "... stopped after 40 batches and resumed: the same batches" $? "$TMP/err"
R "$TMP/mix" --weights cosql=1 >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && grep -q 'no source named "cosql" (its sources: dev, train)' "$TMP/err"
check "an unknown source in --weights: exit 2, listing the sources" $? "$TMP/err"
R "$TMP/mix" --weights dev >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "'dev' is not NAME=WEIGHT" "$TMP/err"
check "--weights dev (no weight): exit 2" $? "$TMP/err"
"$PAIRSHARD" merge -q --no-gate -o "$TMP/mix4" "$DEV" "$DEV" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q 'both hold a source named "dev"; give --rename dev=NEW_NAME' "$TMP/err"
check "merge of a set with itself: two sources named dev, refused without --rename" $? "$TMP/err"

done_testing
