#!/bin/sh
# The reader under concurrency, across processes: 8 ranks of one world,
# each a separate process with several decoding threads, started together
# on the same set, deliver every record exactly once per epoch (2 epochs);
# and a reader keeps reading the set it opened while `pairshard build`
# publishes a different set at the same directory.
#
# Record ids are checked against an independent decode of the shards in
# Python (python3-lmdb, python3-zstandard), not against the reader itself.
. "$PS_ROOT/tests/tap.sh"
. "$PS_ROOT/tests/tools/build_tool.sh"

PY=/usr/bin/python3
VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
B() { "$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id --max-length 128 "$@"; }

# set_ids DIR: every record id in the set's shards, sorted, one a line.
set_ids() {
    "$PY" - "$1" <<'PY' | LC_ALL=C sort
import json, os, struct, sys
import lmdb, zstandard
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
dz = zstandard.ZstdDecompressor()
for s in m["shards"]:
    env = lmdb.open(os.path.join(d, s["file"]), subdir=False, readonly=True, lock=False, max_dbs=4)
    db = env.open_db(b"blocks", create=False)
    with env.begin(db=db) as txn:
        for _, v in txn.cursor():
            c = dz.decompress(v)
            assert c[:4] == b"PSB1"
            n = struct.unpack_from("<I", c, 4)[0]
            off = struct.unpack_from("<%dI" % (n + 1), c, 12 + 12 * n)
            base = 12 + 16 * n + 4
            for i in range(n):
                sys.stdout.write(c[base + off[i]:base + off[i + 1]].decode() + "\n")
    env.close()
PY
}

# from_ids FILE... EPOCH: the ids of that epoch in the "EPOCH ID" files, sorted.
epoch_ids() {
    e=$1; shift
    cat "$@" | awk -v e="$e" '$1 == e { sub(/^[^ ]* /, ""); print }' | LC_ALL=C sort
}

build_tool read_all "$PS_BUILD" "$TMP/read_all"
check "read_all builds against the library" $?

B --shards 8 -o "$TMP/set" "$DATA/spider/dev.json" "$DATA/spider/train.json"
check "build an 8-shard set of Spider dev+train" $?
set_ids "$TMP/set" >"$TMP/ref_ids"
total=$(wc -l <"$TMP/ref_ids")
[ "$total" -gt 8000 ] && [ -z "$(uniq -d "$TMP/ref_ids")" ]
check "independent decode: $total records, ids unique" $?

# ---- 8 processes x 3 threads, one world, two epochs --------------------------
start=$(date +%s)
pids=""
for k in 0 1 2 3 4 5 6 7; do
    "$TMP/read_all" "$TMP/set" --rank $k --world-size 8 --threads 3 --prefetch 3 \
        --batch-size 16 --seed 9 --epochs 2 --ids "$TMP/ids.$k" >"$TMP/sum.$k" 2>"$TMP/err.$k" &
    pids="$pids $!"
done
bad=0
for p in $pids; do wait "$p" || bad=$((bad + 1)); done
[ "$bad" -eq 0 ]
check "8 concurrent reader processes all exit 0 ($(($(date +%s) - start)) s)" $?
[ -z "$(cat "$TMP"/err.*)" ]
check "and report nothing on stderr" $?
for e in 0 1; do
    epoch_ids "$e" "$TMP"/ids.* >"$TMP/got.$e"
    [ -z "$(uniq -d "$TMP/got.$e")" ]
    check "epoch $e: no record delivered twice across the 8 ranks" $?
    cmp -s "$TMP/got.$e" "$TMP/ref_ids"
    check "epoch $e: the 8 ranks together deliver exactly the set's records" $?
done
# Equal batch counts on every rank, and the two epochs differ in order.
"$PY" - "$TMP" <<'PY'
import json, sys
t = sys.argv[1]
s = [json.loads(open("%s/sum.%d" % (t, k)).read()) for k in range(8)]
assert len({x["batches"] for x in s}) == 1, [x["batches"] for x in s]
assert sum(x["records"] for x in s) == 2 * s[0]["records_total"]
ids = [l.split(" ", 1) for l in open(t + "/ids.0")]
e0 = [i for e, i in ids if e == "0"]
e1 = [i for e, i in ids if e == "1"]
assert e0 != e1
PY
check "every rank got the same number of batches; epochs are reshuffled" $?

# The same world again: the same records per rank and epoch (nothing
# depends on timing).
pids=""
for k in 0 1 2 3 4 5 6 7; do
    "$TMP/read_all" "$TMP/set" --rank $k --world-size 8 --threads 1 --prefetch 2 \
        --batch-size 16 --seed 9 --epochs 2 --ids "$TMP/again.$k" >/dev/null 2>&1 &
    pids="$pids $!"
done
bad=0
for p in $pids; do wait "$p" || bad=$((bad + 1)); done
same=0
for k in 0 1 2 3 4 5 6 7; do cmp -s "$TMP/ids.$k" "$TMP/again.$k" || same=1; done
[ "$bad" -eq 0 ] && [ "$same" -eq 0 ]
check "a second run at 1 thread each: every rank's batches identical, in order" $?

# ---- reading while the set is replaced ----------------------------------------
# The old reader stops after its first batch (its workers fill the rest of
# a 2-slot ring), the directory is rebuilt from another input, then it
# reads on. 16 shards, 8-record blocks, one block a window: most shards
# are first opened after the new set was published, through the
# descriptors taken at open.
B --shards 16 --block-records 8 -o "$TMP/live" "$DATA/spider/dev.json"
set_ids "$TMP/live" >"$TMP/old_ids"
"$TMP/read_all" "$TMP/live" --threads 2 --prefetch 2 --batch-size 8 --shuffle-window 1 \
    --sort-pool 1 --pause-after 1 \
    --paused-file "$TMP/paused" --resume-file "$TMP/go" --ids "$TMP/live_ids" \
    >"$TMP/live_sum" 2>"$TMP/live_err" &
slow=$!
i=0
while [ ! -f "$TMP/paused" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -f "$TMP/paused" ]
check "the old reader is mid-epoch (paused after its first batch)" $?
B --shards 3 -o "$TMP/live" "$DATA/spider/train.json"
check "rebuild the directory with another input while it is being read" $?
kill -0 "$slow" 2>/dev/null
check "the old reader was still open when the new set was published" $?
: >"$TMP/go"
wait "$slow"
check "the old reader finishes with exit 0" $?
[ ! -s "$TMP/live_err" ]
check "and no errors" $?
epoch_ids 0 "$TMP/live_ids" >"$TMP/live_got"
cmp -s "$TMP/live_got" "$TMP/old_ids"
check "the old reader delivered exactly the old set's records" $?
set_ids "$TMP/live" >"$TMP/new_ids"
"$TMP/read_all" "$TMP/live" --threads 2 --ids "$TMP/new_read" >/dev/null 2>&1 &&
    epoch_ids 0 "$TMP/new_read" | cmp -s - "$TMP/new_ids" &&
    ! cmp -s "$TMP/new_ids" "$TMP/old_ids"
check "a reader opened afterwards reads the new set" $?

done_testing
