#!/bin/sh
# Benchmark: what the text-to-SQL schema step costs per record. `pairshard
# clean` on Spider train+dev (x COPIES) without a schema, with --schema (the
# SQL compiled against its database before and after cleaning), and with
# --template picard and ddl on top; against the same step in Python
# (bench/text2sql_baseline.py: PICARD's serialization and sqlite3 compiles,
# processing time only, no statement cache), one core each (--threads 1).
# Prints microseconds per record and the ratio of Python's cost to the
# schema step's.
set -eu
. "$(dirname "$0")/lib.sh"
bench_setup t2s 3
COPIES=${PS_BENCH_COPIES:-4}
TABLES="$PS_ROOT/tests/data/spider/tables.json"

"$PY" "$PS_ROOT/bench/spider_corpus.py" "$PS_ROOT/tests/data/spider" "$COPIES" >"$W/corpus.jsonl"
records=$(wc -l <"$W/corpus.jsonl")
now() { date +%s.%N; }
best() { # command... : the best wall time of RUNS runs
    b=999999
    for _ in $(seq "$RUNS"); do
        t0=$(now)
        "$@" >/dev/null
        t1=$(now)
        b=$(echo "$t1 $t0 $b" | awk '{d=$1-$2; print (d<$3)?d:$3}')
    done
    echo "$b"
}
plain=$(best "$PAIRSHARD" clean -q --threads 1 "$W/corpus.jsonl" -o "$W/a.jsonl")
schema=$(best "$PAIRSHARD" clean -q --threads 1 --schema "$TABLES" "$W/corpus.jsonl" -o "$W/b.jsonl")
picard=$(best "$PAIRSHARD" clean -q --threads 1 --schema "$TABLES" --template picard "$W/corpus.jsonl" -o "$W/c.jsonl")
ddl=$(best "$PAIRSHARD" clean -q --threads 1 --schema "$TABLES" --template ddl "$W/corpus.jsonl" -o "$W/d.jsonl")
py=999999
for _ in $(seq "$RUNS"); do
    "$PY" "$PS_ROOT/bench/text2sql_baseline.py" "$TABLES" "$W/corpus.jsonl" 2>"$W/py.err"
    s=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["seconds"])' "$W/py.err")
    py=$(echo "$s $py" | awk '{print ($1<$2)?$1:$2}')
done
echo "$records $plain $schema $picard $ddl $py" | awk '{
    n = $1; us = 1e6 / n;
    printf "text-to-SQL inputs: %d records (Spider train+dev x '"$COPIES"'), best of '"$RUNS"' runs, one core\n", n;
    printf "  clean, no schema                  %7.2f us/record\n", $2 * us;
    printf "  + --schema (compile before/after) %7.2f us/record  (+%.2f)\n", $3 * us, ($3 - $2) * us;
    printf "  + --template picard               %7.2f us/record  (+%.2f)\n", $4 * us, ($4 - $2) * us;
    printf "  + --template ddl                  %7.2f us/record  (+%.2f)\n", $5 * us, ($5 - $2) * us;
    printf "  python: picard + 2 compiles       %7.2f us/record  (processing only)\n", $6 * us;
    printf "  python / schema step (picard)     %7.2f  (above 1: pairshard is faster)\n", $6 / ($4 - $2 > 0 ? $4 - $2 : 1e-9) }'
