#!/bin/sh
# Benchmark: packing causal rows (issue 16). Spider train+dev with schema
# prompts (--schema tables.json --template ddl), GPT-2's tokenizer.json,
# --layout causal, built once per row length L = 512, 1024, 2048 with
# --max-length L (a longer schema prompt is shortened to fit). At each L,
# batches of ROWS rows: the fill ratio (real tokens / tokens delivered) of
#   - packing (pack=L, best-fit decreasing and a local search within
#     shuffle windows),
#   - padding to the longest in bucketed batches (the reader unpacked,
#     max_tokens = L * ROWS, so B * T is comparable),
#   - random batching (an independent peer in Python: the same records'
#     lengths shuffled and cut into batches of the bucketed run's sizes,
#     each padded to its longest);
# packing's fill with other shuffle windows and the most that any packing
# of whole records could reach (the L2 lower bound on the rows needed); and
# reading speed, packed against unpacked, through the Python Loader
# (bench/packing_fill.py) and, where it has --pack, `pairshard bench-read`
# (best of RUNS runs of 3 epochs).
#
# env: PS_BENCH_COPIES   corpus copies (1)
#      PS_BENCH_ROWS     rows a batch (8)
#      PS_BENCH_RUNS     runs timed, best kept (5)
set -eu
. "$(dirname "$0")/lib.sh"
bench_setup packing 5
COPIES=${PS_BENCH_COPIES:-1}
ROWS=${PS_BENCH_ROWS:-8}
TABLES="$PS_ROOT/tests/data/spider/tables.json"
GPT2="$PS_ROOT/tests/data/tokenizers/gpt2.tokenizer.json"
export PAIRSHARD_LIB="${PS_BUILD:-$PS_ROOT/build}/lib/libpairshard.so"
if ! "$PY" -c "import numpy" 2>/dev/null; then
    echo "packing: skipped, $PY cannot import numpy (python3-numpy)"
    exit 0
fi

"$PY" "$PS_ROOT/bench/spider_corpus.py" "$PS_ROOT/tests/data/spider" "$COPIES" >"$W/corpus.jsonl"
if ! "$PAIRSHARD" build -q --layout causal --tokenizer-json "$GPT2" --schema "$TABLES" \
        --template ddl --max-length 512 -o "$W/set512" "$W/corpus.jsonl" 2>"$W/err"; then
    echo "packing: skipped, this pairshard cannot build --layout causal: $(tail -n 1 "$W/err")"
    exit 0
fi
for L in 1024 2048; do
    "$PAIRSHARD" build -q --layout causal --tokenizer-json "$GPT2" --schema "$TABLES" \
        --template ddl --max-length "$L" -o "$W/set$L" "$W/corpus.jsonl"
done
has_pack=0
"$PAIRSHARD" bench-read --help 2>&1 | grep -q -- '--pack' && has_pack=1
for L in 512 1024 2048; do
    "$PY" "$PS_ROOT/bench/packing_fill.py" "$W/set$L" "$L" "$ROWS" "$RUNS" >"$W/fill$L.json"
    if [ "$has_pack" = 1 ]; then
        # RUNS runs of 3 epochs each way, interleaved; the fastest kept (a
        # shared machine's slow run says nothing about the reader).
        RO="--rank 0 --world-size 1 --seed 1 --epochs 3 --json"
        for k in $(seq "$RUNS"); do
            # shellcheck disable=SC2086
            "$PAIRSHARD" bench-read $RO --pack "$L" --batch-size "$ROWS" --skip-long \
                "$W/set$L" >"$W/bp$L.$k.json"
            # shellcheck disable=SC2086
            "$PAIRSHARD" bench-read $RO --max-tokens $((L * ROWS)) "$W/set$L" >"$W/bu$L.$k.json"
        done
        for kind in bp bu; do
            "$PY" -c '
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
print(json.dumps(max(runs, key=lambda o: o["real_tokens_per_s"])))' "$W/$kind$L".*.json \
                >"$W/$kind$L.json"
        done
    fi
done

"$PY" - "$W" "$ROWS" "$has_pack" <<'PY'
import json, os, sys
w, rows, has_pack = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
m = json.load(open(os.path.join(w, "set512", "manifest.json")))
print("packing: Spider train+dev, DDL schema prompts, GPT-2, causal; %d records built at "
      "--max-length 512; batches of %d rows (bucketed: max_tokens = L x %d)"
      % (m["totals"]["records"], rows, rows))
print("  %5s %8s %9s %9s %9s %10s %10s %8s" % ("L", "records", "packed", "bucketed", "random",
                                                 "vs bucket", "vs random", "skipped"))
for L in (512, 1024, 2048):
    f = json.load(open(os.path.join(w, "fill%d.json" % L)))
    print("  %5d %8d %8.2f%% %8.2f%% %8.2f%% %9.2fx %9.2fx %8d"
          % (L, f["records"], 100 * f["packed_fill"], 100 * f["bucketed_fill"],
             100 * f["random_fill"], f["packed_fill"] / f["bucketed_fill"],
             f["packed_fill"] / f["random_fill"], f["packed_skipped"]))
print("  fill = real tokens / tokens delivered (goal: packed >= 97% at 1024 and 2048)")
print("  packing's fill by shuffle window, against the most whole records allow (L2 bound):")
for L in (512, 1024, 2048):
    f = json.load(open(os.path.join(w, "fill%d.json" % L)))
    print("  %5d  default (128 blocks) %6.2f%%, 16 blocks %6.2f%%, whole epoch %6.2f%%, "
          "bound %6.2f%%" % (L, 100 * f["packed_fill"], 100 * f["packed_fill_window16"],
             100 * f["packed_fill_whole_epoch"], 100 * f["fill_bound"]))
for L in (512, 1024, 2048):
    f = json.load(open(os.path.join(w, "fill%d.json" % L)))
    line = ("  L %4d reading, Python Loader: packed %.3g real tokens/s, unpacked %.3g, "
            "ratio packed/unpacked %.2f (goal >= 0.5)"
            % (L, f["packed_tokens_per_s"], f["unpacked_tokens_per_s"],
               f["packed_tokens_per_s"] / f["unpacked_tokens_per_s"]))
    print(line)
    if has_pack:
        p = json.load(open(os.path.join(w, "bp%d.json" % L)))
        u = json.load(open(os.path.join(w, "bu%d.json" % L)))
        print("         bench-read:     packed %.3g real tokens/s, unpacked %.3g, ratio %.2f"
              % (p["real_tokens_per_s"], u["real_tokens_per_s"],
                 p["real_tokens_per_s"] / u["real_tokens_per_s"]))
if not has_pack:
    print("  NOTE: this pairshard's bench-read has no --pack: the Python Loader's speeds only")
PY
