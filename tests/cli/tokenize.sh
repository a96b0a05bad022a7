#!/bin/sh
# CLI tests of `pairshard tokenize` and `pairshard bench-tokenize`: usage,
# clean's output as input, stdin/stdout, and clear errors naming FILE:LINE.
. "$PS_ROOT/tests/tap.sh"
VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"

"$PAIRSHARD" tokenize --help >"$TMP/help" 2>&1
check "tokenize --help exits 0" $?
grep -q -- "--max-length" "$TMP/help"
check "tokenize --help documents --max-length" $?
"$PAIRSHARD" bench-tokenize --help >"$TMP/help" 2>&1
check "bench-tokenize --help exits 0" $?

# clean writes the records tokenize reads
"$PAIRSHARD" clean -q --label-field db_id "$DATA/spider/dev.json" -o "$TMP/dev.jsonl" 2>"$TMP/err"
check "clean Spider dev for tokenize" $?
"$PAIRSHARD" tokenize --vocab "$VOCAB" --max-length 128 "$TMP/dev.jsonl" -o "$TMP/dev.tok" 2>"$TMP/err"
check "tokenize clean's output exits 0" $?
[ "$(wc -l <"$TMP/dev.tok")" -eq "$(wc -l <"$TMP/dev.jsonl")" ]
check "one output line per record" $?
python3 - "$TMP/dev.jsonl" "$TMP/dev.tok" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
outs = [json.loads(l) for l in open(sys.argv[2])]
ok = all(o["id"] == r["id"] and o["input_ids"][0] == 101 and o["input_ids"][-1] == 102
         and len(o["input_ids"]) == len(o["token_type_ids"]) <= 128
         and set(o["token_type_ids"]) <= {0, 1} for r, o in zip(recs, outs))
sys.exit(0 if ok else 1)
PY
check "ids, [CLS]...[SEP], types and lengths" $?

printf '{"id":"q1","question":"Hello world","sql":"SELECT 1","label":null,"source":"x"}\n' |
    "$PAIRSHARD" tokenize --vocab "$VOCAB" - >"$TMP/one" 2>"$TMP/err"
check "stdin to stdout" $?
grep -q '"input_ids": \[101, 7592, 2088, 102, 7276, 1015, 102\]' "$TMP/one"
check "known ids for 'Hello world' / 'SELECT 1'" $?
printf '{"id":"q1","question":"Hello world","sql":"SELECT 1"}\n' |
    "$PAIRSHARD" tokenize --vocab "$VOCAB" --field sql - >"$TMP/one" 2>"$TMP/err"
grep -q '"input_ids": \[101, 7276, 1015, 102\], "token_type_ids": \[0, 0, 0, 0\]' "$TMP/one"
check "--field sql encodes the field alone" $?

printf '{"id":"1","question":"a","sql":"b"}\n{"id":"2","question":"a",\n' >"$TMP/bad.jsonl"
"$PAIRSHARD" tokenize --vocab "$VOCAB" "$TMP/bad.jsonl" -o "$TMP/bad.out" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "bad.jsonl:2:" "$TMP/err"
check "a malformed line exits 2 naming file:line" $?
[ ! -e "$TMP/bad.out" ]
check "nothing is written on error" $?
printf '{"id":"1","question":"a"}\n' >"$TMP/nosql.jsonl"
"$PAIRSHARD" tokenize --vocab "$VOCAB" "$TMP/nosql.jsonl" -o "$TMP/x" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "nosql.jsonl:1: field 'sql' is missing" "$TMP/err"
check "a missing field is named" $?
"$PAIRSHARD" tokenize "$TMP/nosql.jsonl" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q -- "--vocab" "$TMP/err"
check "no vocabulary is a usage error" $?
"$PAIRSHARD" tokenize --vocab "$VOCAB" --max-length 2 "$TMP/nosql.jsonl" 2>"$TMP/err"
check_status=$?
[ $check_status -eq 2 ]
check "--max-length 2 is refused for pairs" $?
"$PAIRSHARD" tokenize --vocab /nonexistent.txt "$TMP/nosql.jsonl" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "/nonexistent.txt" "$TMP/err"
check "a missing vocabulary is named" $?

# A record clean could have written that fails to encode (here: a
# vocabulary without [SEP]) says why, naming the vocabulary, and is not
# told to run clean first: clean would not help.
grep -v '^\[SEP\]$' "$VOCAB" >"$TMP/nosep.txt"
printf '{"id":"q1","question":"Hello world","sql":"SELECT 1"}\n' >"$TMP/clean1.jsonl"
"$PAIRSHARD" tokenize --vocab "$TMP/nosep.txt" "$TMP/clean1.jsonl" -o "$TMP/x" 2>"$TMP/err"
[ $? -eq 2 ] &&
    grep -q "clean1.jsonl:1: encoding with .*nosep.txt failed: the vocabulary lacks the token '\[SEP\]'" "$TMP/err" &&
    ! grep -q "clean" "$(sed 's/clean1.jsonl//g' "$TMP/err" >"$TMP/err2" && echo "$TMP/err2")"
check "an encode failure names the vocabulary and gives no advice to run clean" $?
# ... while a record without clean's fields still gets that advice.
"$PAIRSHARD" tokenize --vocab "$VOCAB" "$TMP/nosql.jsonl" -o "$TMP/x" 2>"$TMP/err"
grep -q "run 'pairshard clean .*nosql.jsonl -o clean.jsonl' first" "$TMP/err"
check "a missing field still says to run clean first" $?

"$PAIRSHARD" bench-tokenize --vocab "$VOCAB" --threads 2 --seconds 0.05 "$DATA/spider/dev.json" >"$TMP/bench" 2>"$TMP/err"
check "bench-tokenize on Spider's JSON array" $?
grep -q "MB/s .* tokens/s" "$TMP/bench"
check "bench-tokenize prints MB/s and tokens/s" $?
# A damaged vocabulary (the bert-base-chinese mirror's HTML escapes and
# CRLF) loads, and each command that loads it says what is wrong with it.
DAMAGED="$DATA/vocab/chinese-damaged-small.vocab.txt"
printf '{"id":"a","question":"a < b & c","sql":"SELECT 1"}\n' >"$TMP/lt.jsonl"
"$PAIRSHARD" tokenize --no-lowercase --vocab "$DAMAGED" "$TMP/lt.jsonl" -o "$TMP/lt.tok" 2>"$TMP/err"
check "tokenize loads a damaged vocabulary" $?
grep -q "^pairshard tokenize: warning: .*chinese-damaged-small.vocab.txt:134: '&lt;' is HTML-escaped and '<' is missing" "$TMP/err" &&
    grep -q "^pairshard tokenize: warning: .*chinese-damaged-small.vocab.txt:112: '&amp;'" "$TMP/err" &&
    grep -q "^pairshard tokenize: warning: .*chinese-damaged-small.vocab.txt:1: 200 of 200 lines end in CRLF" "$TMP/err"
check "tokenize warns about &lt;, &amp; and CRLF with file and line" $?
"$PAIRSHARD" bench-tokenize --no-lowercase --vocab "$DAMAGED" --seconds 0.05 "$TMP/lt.jsonl" >/dev/null 2>"$TMP/err"
grep -q "^pairshard bench-tokenize: warning: .*:136: '&gt;'" "$TMP/err"
check "bench-tokenize prints the same warnings" $?
"$PAIRSHARD" build -q --no-gate --no-lowercase --vocab "$DAMAGED" -o "$TMP/dset" "$DATA/spider/dev.json" 2>"$TMP/err"
grep -q "^pairshard build: warning: .*:134: '&lt;'" "$TMP/err"
check "build prints the vocabulary warnings" $?
python3 -c '
import json, sys
w = json.load(open(sys.argv[1])).get("vocab_warnings", [])
sys.exit(0 if any(":134: '"'"'&lt;'"'"' is HTML-escaped" in x for x in w) and len(w) == 4 else 1)
' "$TMP/dset/report.json"
check "build records them in report.json's vocab_warnings" $?
"$PAIRSHARD" tokenize --vocab "$VOCAB" "$TMP/lt.jsonl" -o "$TMP/lt.tok" 2>"$TMP/err"
[ ! -s "$TMP/err" ]
check "an intact vocabulary loads without warnings" $?
done_testing
