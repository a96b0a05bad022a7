#!/bin/sh
# CLI tests of `pairshard build` and `pairshard merge`: accounting,
# byte-identical output across thread counts and runs, config files,
# errors that publish nothing, --part/merge equivalence, and SIGKILL at
# random moments never leaving a partial set.
. "$PS_ROOT/tests/tap.sh"

VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
B() { "$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id --max-length 128 "$@"; }
# complete DIR: the manifest parses, its shard files exist with the
# recorded SHA-256 and sizes, and the accounting balances.
complete() {
    python3 - "$1" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
a = m["accounting"]
assert a["records_in"] == a["kept"] + a["rejected"] + a["duplicates"]
assert m["totals"]["records"] == a["kept"] == sum(s["records"] for s in m["shards"])
for s in m["shards"]:
    p = os.path.join(d, s["file"])
    data = open(p, "rb").read()
    assert len(data) == s["bytes"] and hashlib.sha256(data).hexdigest() == s["sha256"], p
embedded = ["preprocess"] if "preprocess" in m else []  # what serving needs (FORMAT.md)
assert sorted(os.listdir(d)) == sorted(["manifest.json", "rejects.jsonl", "duplicates.jsonl", "report.json", "report.html", "stats.json"] + [s["file"] for s in m["shards"]] + embedded)
for k, f in m.get("preprocess", {}).get("files", {}).items():
    data = open(os.path.join(d, f["file"]), "rb").read()
    assert len(data) == f["bytes"] and hashlib.sha256(data).hexdigest() == f["sha256"], f["file"]
PY
}

"$PAIRSHARD" build --help >"$TMP/help" 2>&1
check "build --help exits 0" $?
grep -q -- "--part" "$TMP/help" && grep -q -- "--label-field" "$TMP/help"
check "build --help documents --part and the cleaning options" $?

IN="$DATA/spider/dev.json $DATA/spider/train.json"
B --threads 1 --shards 3 -o "$TMP/t1" $IN
check "build Spider dev+train (1 thread)" $?
B --threads 2 --shards 3 -o "$TMP/t2" $IN
B --threads 2 --shards 3 -o "$TMP/t2b" $IN
same_set "$TMP/t1" "$TMP/t2"
check "byte-identical shards and manifest at 1 and 2 threads" $?
same_set "$TMP/t2" "$TMP/t2b"
check "byte-identical across two runs" $?
# The workers look duplicates up in one part of the table a thread, side
# by side: Spider train twice (7,000+ duplicates, some under another
# label) at 7 threads gives the duplicates `clean`, with its one table in
# input order, gives, naming the same kept ids, line for line.
TWICE="$DATA/spider/train.json $DATA/spider/dev.json $DATA/spider/train.json"
B --threads 7 --no-gate -o "$TMP/dup7" $TWICE 2>/dev/null &&
    "$PAIRSHARD" clean -q --label-field db_id --duplicates "$TMP/dup.clean" -o "$TMP/dup.out" $TWICE &&
    [ "$(wc -l <"$TMP/dup.clean")" -ge 7000 ] && cmp "$TMP/dup7/duplicates.jsonl" "$TMP/dup.clean"
check "duplicates at 7 threads: as clean's one table finds them (7,000+, the same first ids)" $?
B --threads 1 --no-gate -o "$TMP/dup1" $TWICE 2>/dev/null && same_set "$TMP/dup1" "$TMP/dup7"
check "duplicates at 7 threads: the set byte-identical to 1 thread's" $?
# Phase 2 writes up to min(threads, shards) shards at once; under a tight
# descriptor limit it writes fewer at once rather than fail with EMFILE.
B --threads 1 --shards 11 -o "$TMP/s11a" "$DATA/spider/dev.json" &&
    (ulimit -n 20 && B --threads 11 --shards 11 -o "$TMP/s11b" "$DATA/spider/dev.json") &&
    same_set "$TMP/s11a" "$TMP/s11b"
check "--threads 11 --shards 11 under ulimit -n 20: built, byte-identical to 1 thread" $?
# Phase 1 holds a spool a worker, not a shard: many shards fit a tight
# limit; many threads are refused up front, naming the option and limit.
B --threads 2 --shards 40 -o "$TMP/s40a" "$DATA/spider/dev.json" &&
    (ulimit -n 20 && B --threads 2 --shards 40 -o "$TMP/s40b" "$DATA/spider/dev.json") &&
    same_set "$TMP/s40a" "$TMP/s40b"
check "--shards 40 under ulimit -n 20: built, byte-identical to no limit" $?
(ulimit -n 20 && B --threads 16 -o "$TMP/t16" "$DATA/spider/dev.json") 2>"$TMP/t16.err"
[ $? -eq 2 ] && grep -q -- "--threads 16" "$TMP/t16.err" && grep -q "limit of 20" "$TMP/t16.err" &&
    [ ! -e "$TMP/t16" ]
check "--threads 16 under ulimit -n 20: refused up front (exit 2, the option and the limit)" $? "$TMP/t16.err"
# The workers add the length statistics of as many labels as their memory
# budget covers (455 at 16 threads), the statistics stage the others: 1,499
# labels (one a question) built at 16 threads and at 1 give the same set.
python3 - "$DATA/spider/train.json" "$TMP/labels.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as f:
    for r in json.load(open(sys.argv[1]))[:1500]:
        f.write(json.dumps(r) + "\n")
PY
B --threads 1 --label-field question -o "$TMP/l1" "$TMP/labels.jsonl" &&
    B --threads 16 --label-field question -o "$TMP/l16" "$TMP/labels.jsonl" &&
    [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["points"]["raw"]["label_count"])' "$TMP/l1/stats.json")" -gt 455 ] &&
    same_set "$TMP/l1" "$TMP/l16"
check "labels past the workers' statistics budget (16 threads): byte-identical to 1 thread" $?
complete "$TMP/t1"
check "the set is complete: checksums, sizes and accounting agree" $?
python3 - "$TMP/t1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
raw = [r for f in m["config"]["inputs"] for r in json.load(open(f))]
assert m["accounting"]["records_in"] == len(raw)
assert m["labels"] == sorted({r["db_id"] for r in raw})
assert len(m["shards"]) == 3 and m["buckets"] == sorted(m["buckets"]) and m["buckets"][-1] <= 128
assert m["tokenizer"]["vocab_size"] == 30522 and len(m["tokenizer"]["vocab_sha256"]) == 64
assert all(len(i["sha256"]) == 64 for i in m["inputs"])
def keys(o):  # every key, at any depth (values hold paths, which may say "threads")
    if isinstance(o, dict):
        for k, v in o.items():
            yield k
            yield from keys(v)
    elif isinstance(o, list):
        for v in o:
            yield from keys(v)
assert not [k for k in keys(m["config"]) if "thread" in k]
PY
check "manifest: counts, the sorted db_id labels, buckets, hashes, no thread count" $?

# Config file, with a flag that wins over it.
cat >"$TMP/cfg.json" <<JSON
{"vocab": "$VOCAB", "label_field": "db_id", "max-length": 64, "shards": 2,
 "buckets": [16, 32, 64], "inputs": ["$DATA/spider/dev.json"], "quiet": true,
 "validate": {"modes": {"truncation_rate": "warn"}}}
JSON
"$PAIRSHARD" build --config "$TMP/cfg.json" --shards 4 -o "$TMP/c"
check "build --config" $?
python3 -c "
import json; m=json.load(open('$TMP/c/manifest.json'))
assert len(m['shards'])==4 and m['buckets']==[16,32,64] and m['tokenizer']['max_length']==64
assert m['accounting']['kept']==1034
"
check "config values apply and flags win" $?

# DIR may end in a slash, and missing parents are created.
B -o "$TMP/deep/er/slash/" "$DATA/spider/dev.json" && complete "$TMP/deep/er/slash" &&
    [ -z "$(ls -a "$TMP/deep/er" | grep '\.tmp\.')" ]
check "-o a/b/c/ (trailing slash, missing parents) builds the set there" $?

# Failures publish nothing and keep the previous set.
cp "$TMP/t1/manifest.json" "$TMP/old-manifest"
B -o "$TMP/t1" "$TMP/absent.json" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "absent.json" "$TMP/err"
check "missing input: exit 2 naming the file" $?
cmp -s "$TMP/old-manifest" "$TMP/t1/manifest.json" && complete "$TMP/t1" &&
    [ -z "$(ls -a "$TMP" | grep '^\.t1\.tmp\.')" ]
check "missing input: the old set is intact and no staging directory is left" $?
B --buckets 16,32 -o "$TMP/bad" $IN 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "max length" "$TMP/err" && [ ! -e "$TMP/bad" ]
check "buckets below max length: exit 2, nothing published" $?
B --part 3/3 -o "$TMP/bad" $IN 2>/dev/null
[ $? -eq 2 ]
check "--part 3/3 is refused" $?

# --part K/N then merge equals the whole build's records.
for k in 0 1 2; do
    B --buckets 16,32,64,128 --shards 2 --part $k/3 -o "$TMP/part$k" $IN || echo "part $k failed"
done
B --buckets 16,32,64,128 --shards 2 -o "$TMP/whole" $IN
"$PAIRSHARD" merge -q -o "$TMP/merged" "$TMP/part0" "$TMP/part1" "$TMP/part2"
check "merge of three parts" $?
python3 - "$TMP" <<'PY'
import json, sys
t = sys.argv[1]
parts = [json.load(open(f"{t}/part{k}/manifest.json")) for k in range(3)]
w = json.load(open(f"{t}/whole/manifest.json"))
m = json.load(open(f"{t}/merged/manifest.json"))
assert sum(p["accounting"]["records_in"] for p in parts) == w["accounting"]["records_in"]
assert m["accounting"] == w["accounting"], [k for k in w["accounting"] if m["accounting"].get(k) != w["accounting"][k]]
assert m["labels"] == w["labels"] and m["buckets"] == w["buckets"]
assert [b["records"] for b in m["totals"]["buckets"]] == [b["records"] for b in w["totals"]["buckets"]]
assert m["totals"]["tokens"] == w["totals"]["tokens"] and len(m["shards"]) == 6
assert "part" not in m
# automatic buckets (t1) pad far less than fixed powers of two (whole)
def pad(man):
    return sum(b["records"] * b["bound"] - b["tokens"] for b in man["totals"]["buckets"]) / man["totals"]["tokens"]
auto = json.load(open(f"{t}/t1/manifest.json"))
print("# padding to the bucket bound: auto %.1f%%, 16,32,64,128 %.1f%%" % (100 * pad(auto), 100 * pad(w)))
assert pad(auto) < pad(w) / 2
PY
check "merged accounting, labels and bucket counts equal the whole build's; auto buckets pad less" $?
complete "$TMP/merged"
check "the merged set is complete" $?
# Parts with automatic buckets (the default) each choose their own bounds;
# merge gives the set the bounds the whole build chooses, and every record.
# (On Spider dev the three parts choose three different sets of bounds.)
for k in 0 1 2; do
    B --shards 2 --part $k/3 -o "$TMP/apart$k" "$DATA/spider/dev.json" || echo "auto part $k failed"
done
B --shards 2 -o "$TMP/awhole" "$DATA/spider/dev.json"
"$PAIRSHARD" merge -q -o "$TMP/amerged" "$TMP/apart0" "$TMP/apart1" "$TMP/apart2" 2>"$TMP/err"
check "merge of three parts built with automatic buckets" $?
"$PAIRSHARD" inspect --verify "$TMP/amerged" >/dev/null 2>"$TMP/err" && complete "$TMP/amerged"
check "... the merged set verifies and is complete" $?
for d in awhole amerged; do
    "$PAIRSHARD" read --world-size 1 --no-shuffle --labels --tokens "$TMP/$d" >"$TMP/$d.read" || echo "# read $d failed"
done
python3 - "$TMP" <<'PY'
import json, sys
t = sys.argv[1]
parts = [json.load(open(f"{t}/apart{k}/manifest.json")) for k in range(3)]
w = json.load(open(f"{t}/awhole/manifest.json"))
m = json.load(open(f"{t}/amerged/manifest.json"))
assert len({tuple(p["buckets"]) for p in parts}) > 1, "the parts chose the same bounds"
assert m["buckets"] == w["buckets"], (m["buckets"], w["buckets"])
assert [b["records"] for b in m["totals"]["buckets"]] == [b["records"] for b in w["totals"]["buckets"]]
assert m["accounting"] == w["accounting"] and m["labels"] == w["labels"]
for s in m["shards"]:
    assert len(s["buckets"]) == len(m["buckets"])
    assert sum(b["blocks"] for b in s["buckets"]) == s["blocks"]
def recs(d):
    out = {}
    for line in open(f"{t}/{d}.read"):
        b = json.loads(line)
        for i, rid in enumerate(b["ids"]):
            n = b["lengths"][i]
            out[rid] = (b["bucket"], b["input_ids"][i][:n], b["token_type_ids"][i][:n], b["label_names"][i])
    return out
a, b = recs("awhole"), recs("amerged")
assert len(a) == w["totals"]["records"] and a == b, (len(a), len(b))
PY
check "... with the whole build's bounds, bucket counts, accounting and records (tokens, labels, buckets)" $?

"$PAIRSHARD" merge -q -o "$TMP/bad" "$TMP/part0" "$TMP/part2" 2>"$TMP/err"
[ $? -eq 2 ] && [ ! -e "$TMP/bad" ]
check "merge refuses an incomplete set of parts" $?
"$PAIRSHARD" merge -q -o "$TMP/bad" "$TMP/part0" "$TMP/t1" 2>/dev/null
[ $? -eq 2 ]
check "merge refuses a set that is not a part" $?

# SIGKILL at random moments: DIR is the old set or the new, complete one.
python3 -c "
import json
recs=json.load(open('$DATA/spider/train.json'))
with open('$TMP/big.jsonl','w') as f:
    for i in range(40):
        for r in recs: r=dict(r); r['question']+=' #%d'%i; f.write(json.dumps(r)+'\n')
"
B --threads 2 --shards 2 -o "$TMP/new" "$TMP/big.jsonl"
B --threads 2 --shards 2 -o "$TMP/k" "$DATA/spider/dev.json" # the old set
cp -r "$TMP/k" "$TMP/old"
# The kill window: one build as the trials run it (replacing the old set,
# input cached), timed; the first build above is slower (a cold input, a
# new directory), and a window from it put half the kills after the end.
# It is longer under sanitizers, so it is measured, never assumed.
t0=$(date +%s.%N)
B --threads 2 --shards 2 -o "$TMP/k" "$TMP/big.jsonl"
KILL_WINDOW=$(echo "$t0 $(date +%s.%N)" | awk '{print ($2 - $1) * 1.1}')
rm -rf "$TMP/k"; cp -r "$TMP/old" "$TMP/k"
ok=0 trials=24 killed=0
# the delays drawn before the trials: no interpreter start inside the window
DELAYS=$(python3 -c "import random; random.seed(1); print(' '.join('%.4f' % random.uniform(0, $KILL_WINDOW) for _ in range($trials)))")
for d in $DELAYS; do
    "$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id --max-length 128 --threads 2 \
        --shards 2 -o "$TMP/k" "$TMP/big.jsonl" &
    pid=$!
    sleep "$d"
    kill -9 $pid 2>/dev/null && killed=$((killed + 1))
    wait $pid 2>/dev/null
    if same_set "$TMP/k" "$TMP/old" || same_set "$TMP/k" "$TMP/new"; then ok=$((ok + 1)); fi
    if ! same_set "$TMP/k" "$TMP/old"; then rm -rf "$TMP/k"; cp -r "$TMP/old" "$TMP/k"; fi
done
echo "# kill test: $trials trials, $killed killed mid-build, $ok left the old or the new set"
[ $ok -eq $trials ] && [ $killed -ge 12 ]
check "SIGKILL during build never leaves a partial set ($trials trials)" $?
B --threads 2 --shards 2 -o "$TMP/k" "$TMP/big.jsonl" && same_set "$TMP/k" "$TMP/new" &&
    [ -z "$(ls -a "$TMP" | grep '^\.k\.tmp\.')" ]
check "a rerun after the kills gives the byte-identical set and clears stale staging" $?

done_testing
