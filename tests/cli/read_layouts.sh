#!/bin/sh
# pairshard read / bench-read on generator layouts (docs/READER.md,
# "Layouts" and "Packing"): Spider dev built causal (gpt2) and seq2seq
# (t5-small) with ddl schema prompts; read --check passes on unpacked,
# packed and seq2seq batches; the flags' refusals; a too-long record named.
. "$PS_ROOT/tests/tap.sh"

SP="$DATA/spider"
TOK="$DATA/tokenizers"
"$PAIRSHARD" build -q --tokenizer-json "$TOK/gpt2.tokenizer.json" --layout causal \
    --template ddl --schema "$SP/tables.json" --max-length 2048 --label-field db_id \
    -o "$TMP/causal" "$SP/dev.json" 2>"$TMP/b1.err" &&
    "$PAIRSHARD" build -q --tokenizer-json "$TOK/t5-small.tokenizer.json" --layout seq2seq \
        --template ddl --schema "$SP/tables.json" --max-length 1024 -o "$TMP/s2s" \
        "$SP/dev.json" 2>"$TMP/b2.err"
check "build causal and seq2seq sets of Spider dev" $? "$TMP/b1.err"

"$PAIRSHARD" read "$TMP/causal" --batch-size 16 --check --labels >"$TMP/u.out" 2>"$TMP/u.err" &&
    [ "$(grep -o '"dev.json:#[0-9]*"' "$TMP/u.out" | sort -u | wc -l)" = 1034 ] &&
    grep -q '"cu_seqlens":\[0,' "$TMP/u.out" && grep -q '"class_labels":' "$TMP/u.out"
check "read causal unpacked: --check passes, every record once" $? "$TMP/u.err"

"$PAIRSHARD" read "$TMP/causal" --pack 2048 --batch-size 4 --check --int32 --threads 3 \
    >"$TMP/p.out" 2>"$TMP/p.err" &&
    [ "$(grep -o '"dev.json:#[0-9]*"' "$TMP/p.out" | sort -u | wc -l)" = 1034 ] &&
    [ "$(grep -o '"dev.json:#[0-9]*"' "$TMP/p.out" | wc -l)" = 1034 ] &&
    ! grep -v '"T":2048,' "$TMP/p.out" | grep -q .
check "read --pack 2048: --check passes, T 2048, every record exactly once" $? "$TMP/p.err"

"$PAIRSHARD" read "$TMP/causal" --pack 2048 --batch-size 4 --threads 1 >"$TMP/p1.out" 2>&1 &&
    "$PAIRSHARD" read "$TMP/causal" --pack 2048 --batch-size 4 --threads 3 >"$TMP/p3.out" 2>&1 &&
    cmp -s "$TMP/p1.out" "$TMP/p3.out"
check "read --pack: the same bytes at 1 and 3 threads" $?

"$PAIRSHARD" read "$TMP/causal" --pack 2048 --batch-size 4 --limit 5 --save-state "$TMP/st" \
    >"$TMP/r1.out" 2>&1 &&
    "$PAIRSHARD" read "$TMP/causal" --pack 2048 --batch-size 4 --resume "$TMP/st" \
        >"$TMP/r2.out" 2>&1 &&
    cat "$TMP/r1.out" "$TMP/r2.out" | cmp -s - "$TMP/p1.out"
check "read --pack: --save-state after 5 batches, --resume prints the rest" $?

"$PAIRSHARD" read "$TMP/causal" --pack 2048 --batch-size 4 --pack 1024 --resume "$TMP/st" \
    >/dev/null 2>"$TMP/r3.err"
[ $? = 2 ] && grep -q "pack 2048" "$TMP/r3.err"
check "read --resume with another --pack: exit 2 naming it" $? "$TMP/r3.err"

# shuffle_window's defaults are what `read --help` and docs/READER.md say:
# one for unpacked reading, another with --pack (the state records it).
"$PAIRSHARD" read "$TMP/causal" --batch-size 16 --limit 1 --save-state "$TMP/st-plain" \
    >/dev/null 2>&1
w_plain=$(od -An -t u4 -j 72 -N 4 "$TMP/st-plain" | tr -d ' ')
w_pack=$(od -An -t u4 -j 72 -N 4 "$TMP/st" | tr -d ' ')
help=$("$PAIRSHARD" read --help 2>&1 | tr -s ' \n' '  ')
case $help in *"--shuffle-window K blocks per record-shuffle window (default $w_plain; $w_pack with --pack)"*) r=0 ;; *) r=1 ;; esac
grep -q "^| \`shuffle_window\` | $w_plain; $w_pack with \`pack\` |" "$PS_ROOT/docs/READER.md"
check "shuffle window: $w_plain unpacked, $w_pack with --pack, as read --help and READER.md say" $((r + $?))

"$PAIRSHARD" read "$TMP/causal" --pack 512 >/dev/null 2>"$TMP/l.err"
[ $? = 2 ] && grep -q "(id dev.json:#[0-9]*) has [0-9]* tokens, longer than pack 512" "$TMP/l.err"
check "read --pack 512: a longer record refused, named by its id" $? "$TMP/l.err"

"$PAIRSHARD" read "$TMP/causal" --pack 512 --skip-long --check >"$TMP/s.out" 2>"$TMP/s.err" &&
    [ "$(grep -o '"dev.json:#[0-9]*"' "$TMP/s.out" | wc -l)" -lt 1034 ]
check "read --pack 512 --skip-long: the rest delivered" $? "$TMP/s.err"
# A pack below every record: --skip-long would leave an epoch of no batches.
for cmd in read bench-read; do
    "$PAIRSHARD" $cmd "$TMP/causal" --pack 64 --skip-long >"$TMP/e.out" 2>"$TMP/e.err"
    [ $? = 2 ] && [ ! -s "$TMP/e.out" ] &&
        grep -q "causal: an epoch has no batches: every one of the 1034 records is longer than pack 64 (the shortest has [0-9]* tokens) and skip_long leaves them all out" "$TMP/e.err"
    check "$cmd --pack 64 --skip-long (every record longer): exit 2 naming why" $? "$TMP/e.err"
done

"$PAIRSHARD" read "$TMP/s2s" --decoder-start-id 0 --check --tokens --pad-multiple 8 \
    >"$TMP/q.out" 2>"$TMP/q.err" &&
    grep -q '"decoder_input_ids":\[\[0,' "$TMP/q.out" && grep -q '"target_lens":' "$TMP/q.out"
check "read seq2seq: --check passes, decoder_input_ids start with the start id" $? "$TMP/q.err"

"$PAIRSHARD" read "$TMP/s2s" --pack 1024 >/dev/null 2>"$TMP/e1.err"
r1=$?
"$PAIRSHARD" read "$TMP/causal" --skip-long >/dev/null 2>"$TMP/e2.err"
r2=$?
[ $r1 = 2 ] && grep -q "causal" "$TMP/e1.err" && [ $r2 = 2 ] && grep -q -- "--pack" "$TMP/e2.err"
check "--pack on a seq2seq set and --skip-long without --pack: exit 2" $? "$TMP/e1.err"

"$PAIRSHARD" bench-read "$TMP/causal" --pack 2048 --batch-size 8 >"$TMP/bench.out" 2>&1 &&
    grep -q "1034 records" "$TMP/bench.out"
check "bench-read --pack: counts records, not rows" $? "$TMP/bench.out"

done_testing
