#!/bin/sh
# make demo: the main job on the bundled sample (Spider dev, 1034 pairs):
# clean it with db_id as the label, then tokenize the kept pairs with the
# bert-base-uncased vocabulary. Outputs go to $BUILD/demo/.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PS="$ROOT/$BUILD/bin/pairshard"
OUT="$ROOT/$BUILD/demo"
DATA="$ROOT/tests/data"
mkdir -p "$OUT"

echo "pairshard demo: cleaning $DATA/spider/dev.json"
"$PS" clean "$DATA/spider/dev.json" --label-field db_id \
    -o "$OUT/clean.jsonl" --rejects "$OUT/rejects.jsonl" \
    --duplicates "$OUT/duplicates.jsonl" --stats "$OUT/clean-stats.json"

echo "pairshard demo: tokenizing with bert-base-uncased (max length 128)"
"$PS" tokenize --vocab "$DATA/vocab/bert-base-uncased.vocab.txt" --max-length 128 \
    "$OUT/clean.jsonl" -o "$OUT/tokens.jsonl"

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
s = json.load(open(out + "/clean-stats.json"))
toks = [json.loads(l) for l in open(out + "/tokens.jsonl")]
lens = sorted(len(t["input_ids"]) for t in toks)
print("")
print("records in  %6d" % s["records_in"])
print("kept        %6d" % s["kept"])
print("rejected    %6d  %s" % (s["rejected"], {k: v for k, v in s["rejected_by_reason"].items() if v}))
print("duplicates  %6d" % s["duplicates"])
print("changed by cleaning %d (whitespace in sql: %d)" % (s["changed_by_cleaning"], s["steps"]["whitespace"]["sql_changed"]))
print("labels      %6d" % s["label_count"])
print("tokenized   %6d pairs, length p50 %d, p90 %d, max %d" % (
    len(toks), lens[len(lens) // 2], lens[int(len(lens) * 0.9)], lens[-1]))
print("\noutputs in %s/" % out)
PY
