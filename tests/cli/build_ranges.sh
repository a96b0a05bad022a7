#!/bin/sh
# pairshard build reading a plain JSONL file as line ranges (the workers
# read their own lines; ingest/line_range.c, ingest/range_chain.c)
# gives the set the calling thread's own reading gives: the same file
# gzip-compressed under the same name is read the old way, and the two
# sets are byte for byte the same (the manifest but for the input's hash
# and size), at 1 and 4 threads. The input is hostile: blank and
# whitespace lines, CRLF, lines over --max-record-bytes, lines longer than
# a range, runs of thousands of tiny lines (chunks stop early and the
# chain hands out extra chunks), lines that are not JSON, no final newline.
# The same for clean --threads.
. "$PS_ROOT/tests/tap.sh"

VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
mkdir -p "$TMP/plain" "$TMP/gz"
python3 - "$DATA/spider/train.json" "$TMP/plain/hostile.jsonl" <<'PY'
import json, random, sys
random.seed(11)
recs = json.load(open(sys.argv[1]))
out = []
for i in range(40000):
    r = recs[i % len(recs)]
    k = random.random()
    if k < 0.03:
        out.append("")
    elif k < 0.04:
        out.append(" \t ")
    elif k < 0.045:
        out.append(json.dumps({"question": "x" * random.randint(2500, 9000), "query": "SELECT 1"}))
    elif k < 0.0458:
        out.append(json.dumps({"question": "y" * random.randint(270000, 400000), "query": "SELECT 2"}))
    elif k < 0.048:
        out.append("not json")
    elif k < 0.0495:
        out.extend(["{}"] * random.randint(1, 6000))
    else:
        line = json.dumps({"question": "%s (%d)" % (r["question"], i % 7), "query": r["query"],
                           "db_id": r["db_id"]})
        out.append(line + ("\r" if k < 0.2 else ""))
open(sys.argv[2], "w").write("\n".join(out))
PY
gzip -c "$TMP/plain/hostile.jsonl" >"$TMP/gz/hostile.jsonl"
size=$(wc -c <"$TMP/plain/hostile.jsonl")
[ "$size" -gt 4000000 ]
check "a hostile JSONL input of $size bytes, and the same gzip-compressed" $?

# set DIR THREADS OUT: builds DIR/hostile.jsonl, from DIR (the same path)
set_of() {
    (cd "$1" && "$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id --max-length 128 \
        --max-record-bytes 3000 --no-gate --threads "$2" -o "$3" hostile.jsonl)
}
set_of "$TMP/gz" 1 "$TMP/ref" 2>"$TMP/ref.err"
check "the compressed input builds (read by the calling thread)" $? "$TMP/ref.err"

# same_but_input REF DIR: every file identical; the manifests but for the
# input's sha256 and bytes
same_but_input() {
    for f in $(cd "$1" && ls); do
        [ -f "$1/$f" ] || continue
        [ "$f" = manifest.json ] && continue
        cmp -s "$1/$f" "$2/$f" || { echo "differs: $f"; return 1; }
    done
    python3 - "$1/manifest.json" "$2/manifest.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for m in (a, b):
    for i in m["inputs"]:
        i.pop("sha256"), i.pop("bytes")
assert a == b, "the manifests differ"
acc = a["accounting"]
why = acc["rejected_by_reason"]
assert acc["kept"] > 5000 and acc["duplicates"] > 10000 and why["too_long"] > 100 and \
    why["bad_json"] > 50 and acc["blank_lines_skipped"] > 1000, "too few of each kind"
PY
}
for t in 1 4; do
    set_of "$TMP/plain" $t "$TMP/r$t" 2>"$TMP/r$t.err"
    rc=$?
    [ $rc -eq 0 ] && same_but_input "$TMP/ref" "$TMP/r$t" >"$TMP/r$t.diff" 2>&1
    check "read as line ranges at $t thread(s): the same set, rejects, duplicates and reports" $? \
        "$TMP/r$t.diff"
done

# clean --threads reads the same way: the same lines, rejects, duplicates
# and accounting as the calling thread's own reading, and as 1 thread.
clean_of() {
    (cd "$1" && "$PAIRSHARD" clean -q --label-field db_id --max-record-bytes 3000 --threads "$2" \
        -o "$3.out" --rejects "$3.rej" --duplicates "$3.dup" --stats "$3.st" hostile.jsonl)
}
clean_of "$TMP/gz" 3 "$TMP/cz" && clean_of "$TMP/plain" 3 "$TMP/c3" &&
    clean_of "$TMP/plain" 1 "$TMP/c1"
rc=$?
for x in c3 c1; do
    for f in out rej dup; do
        cmp -s "$TMP/cz.$f" "$TMP/$x.$f" || rc=1
    done
done
python3 - "$TMP/cz.st" "$TMP/c3.st" <<'PY' || rc=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a == b and a["rejected_by_reason"]["too_long"] > 100, "the accounting differs"
PY
[ "$(wc -l <"$TMP/c3.out")" -gt 5000 ] || rc=1
check "clean --threads 3 reading line ranges: the same lines, rejects, duplicates, accounting" $rc

# The profile: with ranges the calling thread hardly reads.
(cd "$TMP/plain" && "$PAIRSHARD" build -q --profile --vocab "$VOCAB" --label-field db_id \
    --max-length 128 --max-record-bytes 3000 --no-gate --threads 2 -o "$TMP/p2" hostile.jsonl) \
    2>"$TMP/p2.err"
awk '/^profile:     reading/ {r = $3} /^profile:     worker/ {w += $4}
     END {exit !(w > 0 && r < w / 20)}' "$TMP/p2.err"
check "--profile at 2 threads: the calling thread's reading is under 5% of the workers' time" $? \
    "$TMP/p2.err"

done_testing
