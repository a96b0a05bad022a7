#!/bin/sh
# Benchmark: `pairshard leakage` on Spider train x100 (700,000 records, each
# copy's question numbered so copies are not one record) against dev x10
# (10,340), on 2 threads: wall time, peak RSS (GNU time's maximum resident
# set) and the rate of training records. Peer, measured in the same run: the
# exact near-duplicate pass (every training question against every held-out
# one, bench/leakage_baseline.py) on a subsample, its time per pair times the
# pairs of the whole run; the ratio is that estimate over pairshard's time
# for all five kinds.
set -eu
. "$(dirname "$0")/lib.sh"
bench_setup leakage 1
TRAIN_COPIES=${PS_BENCH_TRAIN_COPIES:-100}
DEV_COPIES=${PS_BENCH_DEV_COPIES:-10}
SAMPLE=${PS_BENCH_SAMPLE:-300}
# 1: dev's copies numbered like train's (distinct held-out questions:
# PS_BENCH_TRAIN_COPIES=143 PS_BENCH_DEV_COPIES=97 is 1 M against 100 k)
DEV_DISTINCT=${PS_BENCH_DEV_DISTINCT:-0}

"$PY" - "$PS_ROOT/tests/data/spider" "$TRAIN_COPIES" "$DEV_COPIES" "$W" "$DEV_DISTINCT" <<'PY'
import json, sys
d, tc, dc, w, dd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
train = json.load(open(f"{d}/train.json"))
dev = json.load(open(f"{d}/dev.json"))
with open(f"{w}/train.jsonl", "w") as f:
    for c in range(tc):
        for i, r in enumerate(train):
            q = r["question"] if c == 0 else f"{r['question']} ({c})"
            f.write(json.dumps({"id": f"t{c}-{i}", "question": q, "sql": r["query"],
                                "db_id": r["db_id"]}) + "\n")
with open(f"{w}/dev.jsonl", "w") as f:
    for c in range(dc):
        for i, r in enumerate(dev):
            q = r["question"] if c == 0 or not dd else f"{r['question']} [{c}]"
            f.write(json.dumps({"id": f"d{c}-{i}", "question": q,
                                "sql": r["query"], "db_id": r["db_id"]}) + "\n")
PY
ntrain=$(wc -l <"$W/train.jsonl")
ndev=$(wc -l <"$W/dev.jsonl")
TIME=/usr/bin/time
[ -x "$TIME" ] || TIME=""
t0=$(date +%s.%N)
if [ -n "$TIME" ]; then
    "$TIME" -f '%M' -o "$W/rss" "$PAIRSHARD" leakage -q --threads 2 --train "$W/train.jsonl" \
        --holdout "$W/dev.jsonl" --json "$W/l.json" || [ $? -eq 1 ]
else
    "$PAIRSHARD" leakage -q --threads 2 --train "$W/train.jsonl" --holdout "$W/dev.jsonl" \
        --json "$W/l.json" || [ $? -eq 1 ]
    echo 0 >"$W/rss"
fi
t1=$(date +%s.%N)
"$PY" "$PS_ROOT/bench/leakage_baseline.py" "$W/train.jsonl" "$W/dev.jsonl" "$SAMPLE" >"$W/py.json"
"$PY" - "$W/l.json" "$W/py.json" "$(echo "$t1 $t0" | awk '{print $1-$2}')" "$(cat "$W/rss")" \
    "$ntrain" "$ndev" <<'PY'
import json, sys
l, py = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
secs, rss_kb, ntrain, ndev = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
per_pair = py["seconds"] / py["pairs"]
est = per_pair * ntrain * ndev
k = l["kinds"]
print(f"leakage: {ntrain} training records against {ndev} held-out, 2 threads")
print(f"  pairshard leakage    {secs:8.1f} s  ({ntrain / secs:,.0f} records/s), peak RSS {rss_kb / 1024:.0f} MiB")
print("  found                " + ", ".join(f"{n} {k[n]['records']}" for n in k))
print(f"  exact all-pairs      {py['pairs']} pairs in {py['seconds']:.1f} s (python, {py['train']} "
      f"training records): {est / 3600:,.1f} h estimated for the whole run")
print(f"  ratio                {est / secs:8.0f}x")
PY
