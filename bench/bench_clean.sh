#!/bin/sh
# Benchmark: `pairshard clean` against the same cleaning in plain Python
# (bench/clean_baseline.py: json + unicodedata + re), one core each, on the
# Spider train+dev pairs replicated to ~38 MB of JSONL (each copy's questions
# made distinct so dedupe keeps them; pairshard with --threads 1: its
# scaling is bench_scaling.sh). Prints MB/s (10^6 bytes of input per
# second) for both and the ratio, and checks both wrote the same records.
set -eu
. "$(dirname "$0")/lib.sh"
bench_setup clean 3
COPIES=${PS_BENCH_COPIES:-20}

"$PY" "$PS_ROOT/bench/spider_corpus.py" "$PS_ROOT/tests/data/spider" "$COPIES" >"$W/corpus.jsonl"
bytes=$(wc -c <"$W/corpus.jsonl")

now() { date +%s.%N; }
best_ps=999999
for _ in $(seq "$RUNS"); do
    t0=$(now)
    "$PAIRSHARD" clean -q --threads 1 --label-field db_id "$W/corpus.jsonl" -o "$W/ps.jsonl"
    t1=$(now)
    best_ps=$(echo "$t1 $t0 $best_ps" | awk '{d=$1-$2; print (d<$3)?d:$3}')
done
best_py=999999
for _ in $(seq "$RUNS"); do
    "$PY" "$PS_ROOT/bench/clean_baseline.py" --label-field db_id "$W/corpus.jsonl" \
        -o "$W/py.jsonl" 2>"$W/py.err"
    s=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["seconds"])' "$W/py.err")
    best_py=$(echo "$s $best_py" | awk '{print ($1<$2)?$1:$2}')
done
same=no
cmp -s "$W/ps.jsonl" "$W/py.jsonl" && same=yes
echo "$bytes $best_ps $best_py $same" | awk '{
    mb = $1 / 1e6;
    printf "clean: %.1f MB input, best of '"$RUNS"' runs, one core each\n", mb;
    printf "  pairshard clean      %8.1f MB/s  (%.3f s, whole process)\n", mb / $2, $2;
    printf "  python baseline      %8.1f MB/s  (%.3f s, processing only)\n", mb / $3, $3;
    printf "  ratio                %8.1fx  (goal >= 20x)\n", $3 / $2;
    printf "  identical output     %s\n", $4 }'
