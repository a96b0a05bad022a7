#!/bin/sh
# Benchmark: reading a mixture. Spider train+dev (COPIES copies) built as
# one set, and the same records split in three (50%, 30%, 20% of the lines)
# built as three sets with the same options. Read with `pairshard
# bench-read` (3 epochs, batch 32, 2 threads): the one set (the peer,
# measured in the same run), the three sets read as one mixture with every
# weight 1 (the same records, so the same size), the three joined by
# `pairshard merge` into one set of three sources (weights 1), and that
# set with weights 0.5/1/2 (a different size: compared by records/s). RUNS
# runs each way, interleaved, the fastest kept (a shared machine's slow run
# says nothing about the reader). Goal: a 3-source mixture reads at >= 0.9
# of the one set's speed.
#
# env: PS_BENCH_COPIES   corpus copies (4)
#      PS_BENCH_RUNS     runs timed, best kept (5)
set -eu
. "$(dirname "$0")/lib.sh"
bench_setup mix 5
COPIES=${PS_BENCH_COPIES:-8}
VOCAB="$PS_ROOT/tests/data/vocab/bert-base-uncased.vocab.txt"
"$PY" "$PS_ROOT/bench/spider_corpus.py" "$PS_ROOT/tests/data/spider" "$COPIES" >"$W/corpus.jsonl"
n=$(wc -l <"$W/corpus.jsonl")
a=$((n / 2)) b=$((n * 8 / 10))
sed -n "1,${a}p" "$W/corpus.jsonl" >"$W/spider.jsonl"
sed -n "$((a + 1)),${b}p" "$W/corpus.jsonl" >"$W/bird.jsonl"
sed -n "$((b + 1)),\$p" "$W/corpus.jsonl" >"$W/sparc.jsonl"
BO="-q --no-gate --vocab $VOCAB --label-field db_id --max-length 128 --shards 2"
# shellcheck disable=SC2086
"$PAIRSHARD" build $BO -o "$W/one" "$W/corpus.jsonl"
for s in spider bird sparc; do
    # shellcheck disable=SC2086
    "$PAIRSHARD" build $BO -o "$W/$s" "$W/$s.jsonl"
done
"$PAIRSHARD" merge -q --no-gate -o "$W/joined" "$W/spider" "$W/bird" "$W/sparc"
if ! "$PAIRSHARD" bench-read --help 2>&1 | grep -q -- '--weights'; then
    echo "mix: skipped, this pairshard's bench-read has no --weights"
    exit 0
fi
RO="--rank 0 --world-size 1 --seed 1 --epochs 3 --threads 2 --json"
ONES="--weights spider=1,bird=1,sparc=1"
for k in $(seq "$RUNS"); do
    # shellcheck disable=SC2086
    "$PAIRSHARD" bench-read $RO "$W/one" >"$W/one.$k.json"
    # shellcheck disable=SC2086
    "$PAIRSHARD" bench-read $RO $ONES "$W/spider" "$W/bird" "$W/sparc" >"$W/sets.$k.json"
    # shellcheck disable=SC2086
    "$PAIRSHARD" bench-read $RO $ONES "$W/joined" >"$W/joined.$k.json"
    # shellcheck disable=SC2086
    "$PAIRSHARD" bench-read $RO --weights spider=0.5,bird=1,sparc=2 "$W/joined" \
        >"$W/weighted.$k.json"
done
"$PY" - "$W" "$n" <<'PY'
import glob, json, os, sys
w, n = sys.argv[1], int(sys.argv[2])
best = {}
for kind in ("one", "sets", "joined", "weighted"):
    runs = [json.load(open(p)) for p in glob.glob(os.path.join(w, kind + ".*.json"))]
    best[kind] = {"records": runs[0]["records"],
                  "records_per_s": max(o["records_per_s"] for o in runs),
                  "cpu_us": min(1e6 * o["cpu_seconds"] / o["records"] for o in runs)}
one = best["one"]
print("mix: Spider train+dev, %d records: one set against the same records as 3 sources "
      "(3 epochs, batch 32, 2 threads, best of %d)" % (n, len(glob.glob(os.path.join(w, "one.*")))))
print("  %-34s %9s %13s %15s %12s" % ("", "records", "records/s", "CPU us/record",
                                      "cost ratio"))
names = {"one": "one set (peer)", "sets": "3 sets read as one, weights 1",
         "joined": "3 sets merged, weights 1", "weighted": "merged, weights 0.5/1/2"}
for kind in ("one", "sets", "joined", "weighted"):
    b = best[kind]
    print("  %-34s %9d %13.4g %15.3f %12.3f" % (names[kind], b["records"], b["records_per_s"],
                                               b["cpu_us"], b["cpu_us"] / one["cpu_us"]))
print("  cost ratio = CPU time per record against the one set's (goal: <= 1.10 for the "
      "3-source mixtures)")
PY
