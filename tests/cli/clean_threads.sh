#!/bin/sh
# pairshard clean --threads: every output (cleaned records, rejects,
# duplicates, stats) and the summary byte-identical to --threads 1, over
# inputs that span many chunks (Spider train+dev, repeated, with its
# duplicates), the torture file's rejections, CSV from stdin, a gzip
# input, SParC dialogues with --turns and a template over schemas; and
# the same failure (a truncated gzip, a full disk) at any thread count.
. "$PS_ROOT/tests/tap.sh"

SP="$DATA/spider"
TABLES="$SP/tables.json"
# run NAME T ARGS...: clean with T threads into $TMP/NAME.T.{out,rej,dup,stats,err}
run() {
    name=$1 t=$2
    shift 2
    "$PAIRSHARD" clean --threads "$t" "$@" -o "$TMP/$name.$t.out" --rejects "$TMP/$name.$t.rej" \
        --duplicates "$TMP/$name.$t.dup" --stats "$TMP/$name.$t.stats" 2>"$TMP/$name.$t.err"
    echo $? >"$TMP/$name.$t.rc"
}
# same NAME T...: every output of each T equals that of the first
same() {
    name=$1
    shift
    first=$1
    for t in "$@"; do
        for x in out rej dup stats err rc; do
            a="$TMP/$name.$first.$x" b="$TMP/$name.$t.$x"
            [ ! -e "$a" ] && [ ! -e "$b" ] && continue # a failed run writes nothing
            cmp -s "$a" "$b" || { echo "# $name: .$x differs at $t threads"; return 1; }
        done
    done
}

# 1. Many chunks, with duplicates: Spider train+dev, and train again.
for t in 1 2 5; do run spider $t --label-field db_id "$SP/train.json" "$SP/dev.json" "$SP/train.json"; done
same spider 1 2 5 && [ "$(cat "$TMP/spider.1.rc")" = 0 ] && [ "$(wc -l <"$TMP/spider.1.dup")" -ge 7000 ] &&
    [ "$(wc -l <"$TMP/spider.1.out")" -gt 2048 ]
check "Spider train+dev+train: identical at 1, 2 and 5 threads (over 2 chunks kept, 7000+ duplicates)" $? "$TMP/spider.1.err"

# 2. Rejections of every kind (the torture file), and CSV from stdin.
for t in 1 3; do run torture $t "$DATA/torture/torture.jsonl"; done
same torture 1 3 && [ "$(cat "$TMP/torture.1.rc")" = 0 ] && [ -s "$TMP/torture.1.rej" ]
check "torture.jsonl: rejects and summary identical at 1 and 3 threads" $? "$TMP/torture.1.err"
python3 - "$SP/dev.json" >"$TMP/dev.csv" <<'PY'
import csv, json, sys
w = csv.writer(sys.stdout)
w.writerow(["db_id", "question", "query"])
for r in json.load(open(sys.argv[1])):
    w.writerow([r["db_id"], r["question"], r["query"]])
PY
for t in 1 4; do run csv $t --label-field db_id --format csv - <"$TMP/dev.csv"; done
same csv 1 4 && [ "$(cat "$TMP/csv.1.rc")" = 0 ] && [ "$(wc -l <"$TMP/csv.1.out")" -gt 1024 ]
check "CSV on stdin: header mapped in every chunk, identical at 1 and 4 threads" $? "$TMP/csv.4.err"

# 2b. JSONL over many chunks, whose lines the workers split: a BOM, CRLF,
# blank and whitespace lines, lines over --max-record-bytes, no final
# newline; and an input whose first record fills a chunk alone, so that a
# block starts at its second record: a missing named field's message lists
# the keys of the first 8 records only, as one thread reads them.
python3 - "$SP/train.json" "$TMP/lines.jsonl" "$TMP/late.jsonl" <<'PY'
import json, random, sys
random.seed(3)
recs = json.load(open(sys.argv[1]))
out = ["\ufeff" + json.dumps(recs[0])]
for i, r in enumerate(recs[1:] + recs[:3000], 1):
    k = random.random()
    line = json.dumps(r)
    if k < 0.05: out.append("")
    if k < 0.02: out.append(" \t ")
    if k < 0.01: out.append("\r")
    if 0.05 <= k < 0.10: line += "\r"
    if 0.10 <= k < 0.11: line = json.dumps(dict(r, question=r["question"] + " x" * 700))
    out.append(line)
open(sys.argv[2], "w", newline="").write("\n".join(out))
with open(sys.argv[3], "w") as f:
    f.write(json.dumps({"question": "q " * 2300000, "sql": "SELECT 1", "early": 1}) + "\n")
    for i in range(1, 3000):
        extra = "early" if i < 8 else "late"
        f.write(json.dumps({"question": "q%d" % i, "sql": "SELECT %d" % i, extra: i}) + "\n")
PY
for t in 1 2 3; do run lines $t --label-field db_id --max-record-bytes 1200 "$TMP/lines.jsonl"; done
same lines 1 2 3 && [ "$(cat "$TMP/lines.1.rc")" = 0 ] && grep -q '"too_long"' "$TMP/lines.1.rej" &&
    [ "$(wc -l <"$TMP/lines.1.out")" -gt 6000 ] && grep -q '"blank_lines_skipped": [1-9]' "$TMP/lines.1.stats"
check "JSONL split by the workers (BOM, CRLF, blank lines, too-long lines): identical at 1, 2 and 3 threads" $? "$TMP/lines.2.err"
for t in 1 2; do run late $t --max-record-bytes 8000000 --label-field nosuch "$TMP/late.jsonl"; done
same late 1 2 && [ "$(cat "$TMP/late.1.rc")" = 2 ] && grep -q "early" "$TMP/late.2.err" &&
    ! grep -q "late," "$TMP/late.2.err"
check "a missing named field after a one-record chunk: the first 8 records' keys at 1 and 2 threads" $? "$TMP/late.2.err"

# 3. Dialogues with --turns and a template over schemas.
for t in 1 2; do
    run sparc $t --schema "$TABLES" --template picard --turns interaction "$DATA/formats/sparc/dev.json"
done
same sparc 1 2 && [ "$(cat "$TMP/sparc.1.rc")" = 0 ] && grep -q '"prompt"' "$TMP/sparc.1.out"
check "SParC --turns with the picard template: identical at 1 and 2 threads" $? "$TMP/sparc.2.err"

# 4. Failures: a truncated gzip reports the same records, then the same error.
gzip -c "$SP/train.json" | head -c 60000 >"$TMP/cut.json.gz"
for t in 1 2; do run cut $t --label-field db_id "$TMP/cut.json.gz"; done
same cut 1 2 && [ "$(cat "$TMP/cut.1.rc")" = 2 ]
check "a truncated gzip: the same exit status and message at 1 and 2 threads" $? "$TMP/cut.2.err"
if [ -w /dev/full ]; then
    for t in 1 2; do
        "$PAIRSHARD" clean -q --threads $t "$SP/dev.json" -o /dev/full 2>"$TMP/full.$t.err"
        echo $? >"$TMP/full.$t.rc"
    done
    cmp -s "$TMP/full.1.err" "$TMP/full.2.err" && [ "$(cat "$TMP/full.2.rc")" = 2 ] && [ -s "$TMP/full.2.err" ]
    check "a full disk: exit 2 with the same message at 1 and 2 threads" $? "$TMP/full.2.err"
else
    skip "a full disk: exit 2 with the same message at 1 and 2 threads" "no writable /dev/full"
fi
# 5. Duplicates name the record they duplicate by its default id: the
# path when two inputs share a base name, "<base>:#<index>" in a JSON
# array; expected ids computed here from the inputs (their text is already
# clean, so a pair's identity is its question and sql).
mkdir -p "$TMP/a" "$TMP/b"
python3 - "$TMP/a/x.jsonl" "$TMP/b/x.jsonl" "$TMP/c.json" "$TMP/ids.want" <<'PY'
import json, sys
a, b, c, want = sys.argv[1:5]
rec = lambda k: {"question": "what is item %d" % k, "sql": "SELECT %d" % k}
inputs = [(a, "a/x.jsonl:", [i % 2000 for i in range(3000)]),
          (b, "b/x.jsonl:", [i * 7 % 2600 for i in range(2000)]),
          (c, "c.json:#", [i * 3 % 4000 for i in range(1500)])]
first, out = {}, []
for path, prefix, keys in inputs:
    with open(path, "w") as f:
        if path.endswith(".json"):
            json.dump([rec(k) for k in keys], f)
        else:
            f.write("".join(json.dumps(rec(k)) + "\n" for k in keys))
    for n, k in enumerate(keys):
        rid = prefix + str(n if path.endswith(".json") else n + 1)
        if k in first:
            out.append("%s %s" % (rid, first[k]))
        else:
            first[k] = rid
open(want, "w").write("".join(l + "\n" for l in out))
PY
(cd "$TMP" && for t in 1 3; do run ids $t a/x.jsonl b/x.jsonl c.json; done)
same ids 1 3 && python3 -c '
import json, sys
got = ["%s %s\n" % (r["id"], r["duplicate_of"]) for r in map(json.loads, open(sys.argv[1]))]
sys.exit(got != open(sys.argv[2]).readlines())' "$TMP/ids.1.dup" "$TMP/ids.want"
check "duplicate_of names the first record by its default id (paths, JSON indexes) at 1 and 3 threads" $? "$TMP/ids.1.err"

"$PAIRSHARD" clean --threads 0 "$SP/dev.json" -o "$TMP/x.out" 2>"$TMP/t0.err"
[ $? -eq 2 ] && grep -q threads "$TMP/t0.err"
check "--threads 0: a usage error naming --threads" $? "$TMP/t0.err"

done_testing
