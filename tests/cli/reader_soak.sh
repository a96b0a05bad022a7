#!/bin/sh
# Soak: one reader streams many epochs (ps_reader_set_epoch) in one
# process. Every epoch must deliver each record of the set exactly once,
# and the resident set must stay flat: VmRSS at the end may exceed VmRSS
# after epoch 5 by at most RSS_SLACK_KB (a leak of one slot, window or
# plan per epoch would add far more over hundreds of epochs). Under a
# sanitizer build the allocator keeps freed memory and its own metadata
# grows, so there the bound is skipped (LeakSanitizer checks leaks at exit
# instead) and only the coverage is checked.
. "$PS_ROOT/tests/tap.sh"
. "$PS_ROOT/tests/tools/build_tool.sh"

PY=/usr/bin/python3
VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
RSS_SLACK_KB=${RSS_SLACK_KB:-2048}
B() { "$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id --max-length 128 "$@"; }

build_tool read_all "$PS_BUILD" "$TMP/read_all"
check "read_all builds against the library" $?
SANITIZED=0
nm "$PS_BUILD/lib/libpairshard.a" 2>/dev/null | grep -q ' U __[at]san_' && SANITIZED=1

B --shards 2 --block-records 16 -o "$TMP/small" "$DATA/spider/dev.json"
check "build a small set (Spider dev, 16-record blocks)" $?
B --shards 4 -o "$TMP/big" "$DATA/spider/dev.json" "$DATA/spider/train.json"
check "build a larger set (Spider dev+train)" $?

# soak NAME DIR EPOCHS read_all-options...: runs and checks one soak.
soak() {
    name=$1 dir=$2 epochs=$3
    shift 3
    start=$(date +%s)
    "$TMP/read_all" "$dir" --epochs "$epochs" --check-epochs --rss "$@" >"$TMP/$name.json" \
        2>"$TMP/$name.err"
    rc=$?
    secs=$(($(date +%s) - start))
    cat "$TMP/$name.err"
    echo "# $name: $(cat "$TMP/$name.json") (${secs} s)"
    [ "$rc" -eq 0 ] && [ ! -s "$TMP/$name.err" ]
    check "$name: $epochs epochs, each delivers every record exactly once" $?
    "$PY" - "$TMP/$name.json" "$dir" "$epochs" >"$TMP/$name.rss" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2] + "/manifest.json"))
epochs = int(sys.argv[3])
n = m["totals"]["records"]
assert s["records_total"] == n and s["records_per_epoch"] == n, s
assert s["records"] == epochs * n and s["bad_epochs"] == 0, s
# one read of each block per epoch
assert s["blocks_decoded"] == epochs * m["totals"]["blocks"], (s, m["totals"])
early, end = s["rss_kb_after_epoch5"], s["rss_kb_end"]
assert early > 0 and end > 0
print(early, end)
PY
    check "$name: record, epoch and block counts match the manifest" $?
    read -r early end <"$TMP/$name.rss"
    echo "# $name: VmRSS after epoch 5 ${early:-?} kB, at the end ${end:-?} kB"
    if [ "$SANITIZED" -eq 1 ]; then
        check "$name: VmRSS flat # SKIP sanitizer build" 0
    else
        [ -n "$early" ] && [ $((end - early)) -le "$RSS_SLACK_KB" ]
        check "$name: VmRSS flat: grew $((${end:-0} - ${early:-0})) kB (bound $RSS_SLACK_KB kB)" $?
    fi
}

soak small-2threads "$TMP/small" 1000 --threads 2 --prefetch 4 --batch-size 16
soak small-4threads-prefetch2 "$TMP/small" 500 --threads 4 --prefetch 2 --batch-size 8 --seed 3
soak big-3threads "$TMP/big" 100 --threads 3 --prefetch 8 --batch-size 32 --seed 1

done_testing
