#!/bin/sh
# make demo: the main job on the bundled sample (Spider dev, 1034 pairs):
# build it into length-bucketed LMDB shards (clean, tokenize with the
# bert-base-uncased vocabulary, label = db_id), then print the inspect
# summary after verifying every block, and read the first training batches
# back as a trainer would (shuffled, padded). Outputs go to $BUILD/demo/.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PS="$ROOT/$BUILD/bin/pairshard"
OUT="$ROOT/$BUILD/demo"
DATA="$ROOT/tests/data"
mkdir -p "$OUT"

echo "pairshard demo: building $DATA/spider/dev.json into $OUT/shards"
"$PS" build --vocab "$DATA/vocab/bert-base-uncased.vocab.txt" --label-field db_id \
    --max-length 128 --shards 2 -o "$OUT/shards" "$DATA/spider/dev.json"
echo
"$PS" inspect --verify "$OUT/shards" | awk '/^labels/ { n = 0 } { if (n++ < 40) print }'
echo
echo "pairshard demo: the first 3 batches a trainer gets (seed 1, batch size 32):"
"$PS" read --seed 1 --limit 3 "$OUT/shards" | cut -c1-160
"$PS" bench-read --seed 1 --epochs 5 "$OUT/shards" | grep -E "padding waste|tokens/s"
echo
echo "pairshard demo: the shards, manifest, rejects and the validation report (report.html) are in $OUT/shards/"
