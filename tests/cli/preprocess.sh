#!/bin/sh
# Serving a set's preprocessing (pairshard/preprocess.h, pairshard.Preprocessor):
# sets built from Spider dev (rules, --normalize nfc), Spider dev under the
# picard template with its schemas, BIRD's sample (a template file with
# {evidence} and the schema) and a CSpider-like set (NFKC, full-width
# punctuation), BIRD as causal and the CSpider-like set as seq2seq, SParC's
# dialogues (--turns), a merged T5 set; tests/python/test_preprocess.py checks that the
# preprocessor's ids for every record equal the stored ones read through the
# Loader. Then a tampered embedded file makes opening fail, and inspect --verify. TAP.
. "$(dirname "$0")/../tap.sh"

PY=/usr/bin/python3
# torch for the return_tensors='pt' check: installed here too, so that it
# does not depend on whether another test (tests/cli/python.sh, side by
# side) installed it first
if ! [ -x "$PY" ] || ! "$PY" -c "import numpy" 2>/dev/null || ! "$PY" -c "import torch" 2>/dev/null; then
    sh "$PS_ROOT/scripts/apt-install.sh" "$TMP/apt.log" python3-numpy python3-torch
fi
if ! "$PY" -c "import numpy" 2>/dev/null; then
    skip "Preprocessor round trip" "python3-numpy is not installed and apt-get could not install it"
    done_testing
    exit
fi
export PAIRSHARD_LIB="$PS_BUILD/lib/libpairshard.so"
export PYTHONPATH="$PS_ROOT/python"
PRELOAD=$(sanitizer_preload "$PAIRSHARD_LIB")
VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
cat >"$TMP/rules.json" <<'J'
[{"name": "count-of", "field": "question", "replace": "^How many", "with": "Count of", "flags": "i"},
 {"name": "no-like", "field": "sql", "drop_if": "\\bLIKE\\b"}]
J
cat >"$TMP/bird.json" <<'J'
{"prompt": "{question} Hint: {evidence} | {schema:picard}", "completion": "{sql}"}
J
"$PY" "$DATA/cspider/make_cspider_like.py" "$DATA/spider/dev.json" "$TMP/cspider.json" 500
b() { "$PAIRSHARD" build -q --no-gate "$@" 2>>"$TMP/err"; }
b --vocab "$VOCAB" --rules "$TMP/rules.json" --normalize nfc --max-length 64 \
    -o "$TMP/spider" "$DATA/spider/dev.json"
check "build Spider dev with rules and --normalize nfc" $? "$TMP/err"
b --vocab "$VOCAB" --schema "$DATA/spider/tables.json" --template picard --max-length 160 \
    -o "$TMP/picard" "$DATA/spider/dev.json"
check "build Spider dev --template picard --schema" $? "$TMP/err"
b --vocab "$VOCAB" --schema "$DATA/formats/bird/dev_tables.json" --template "$TMP/bird.json" \
    --sql-field SQL,query -o "$TMP/bird" "$DATA/formats/bird/dev.json"
check "build BIRD's sample with a template file reading {evidence}" $? "$TMP/err"
b --vocab "$DATA/vocab/bert-base-chinese.vocab.txt" --lowercase --max-length 96 \
    -o "$TMP/cspider" "$TMP/cspider.json"
check "build a CSpider-like set (default cleaning)" $? "$TMP/err"
b --tokenizer-json "$DATA/tokenizers/t5-small.tokenizer.json" --schema "$DATA/spider/tables.json" \
    --template picard --max-length 0 --sql-normalize none --strip-joiners --part 0/2 \
    -o "$TMP/t5.0" "$DATA/spider/dev.json" &&
    b --tokenizer-json "$DATA/tokenizers/t5-small.tokenizer.json" --schema "$DATA/spider/tables.json" \
        --template picard --max-length 0 --sql-normalize none --strip-joiners --part 1/2 \
        -o "$TMP/t5.1" "$DATA/spider/dev.json" &&
    "$PAIRSHARD" merge -q -o "$TMP/t5" "$TMP/t5.0" "$TMP/t5.1" 2>>"$TMP/err"
check "build Spider dev with T5's tokenizer.json, picard, --sql-normalize none, in two parts, merged" $? "$TMP/err"
# {schema:ddl_values}: example values read from --databases files travel
# with the set's embedded schemas.
mkdir -p "$TMP/dbs/pets"
"$PY" - "$TMP/dbs/pets/pets.sqlite" "$TMP/pets.json" <<'PY'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE pets (id INTEGER PRIMARY KEY, kind TEXT, weight REAL)")
c.executemany("INSERT INTO pets VALUES (?, ?, ?)", [(1, "dog", 12.0), (2, "cat", 4.5)])
c.commit()
json.dump([{"db_id": "pets", "question": q, "query": s} for q, s in [
    ("How many dogs?", "SELECT count(*) FROM pets WHERE kind = 'dog'"),
    ("Heaviest pet?", "SELECT kind FROM pets ORDER BY weight DESC LIMIT 1"),
    ("  Cats ?", "SELECT *  FROM pets WHERE kind='cat'")]], open(sys.argv[2], "w"))
PY
printf '{"prompt": "{schema:ddl_values}\\n-- {question}", "completion": "{sql}"}' >"$TMP/values.json"
b --vocab "$VOCAB" --databases "$TMP/dbs" --template "$TMP/values.json" -o "$TMP/values" "$TMP/pets.json" &&
    grep -q "column_examples" "$TMP/values/preprocess/schemas.json"
check "build with {schema:ddl_values} from --databases; the embedded schemas keep the values" $? "$TMP/err"

b --tokenizer-json "$DATA/tokenizers/t5-small.tokenizer.json" --schema "$DATA/spider/tables.json" \
    --template picard --turns interaction -o "$TMP/sparc" "$DATA/formats/sparc/dev.json"
check "build SParC's sample per turn (--turns interaction, picard with history)" $? "$TMP/err"

# The generator layouts through the Loader too (tests/test_preprocess_layout.c
# has every layout for every set in C).
b --layout causal --tokenizer-json "$DATA/tokenizers/llama3-style.tokenizer.json" \
    --schema "$DATA/formats/bird/dev_tables.json" --template "$TMP/bird.json" --sql-field SQL,query \
    --max-length 4096 -o "$TMP/bird_causal" "$DATA/formats/bird/dev.json"
check "build BIRD's sample --layout causal (Llama-3-style, the {evidence} template)" $? "$TMP/err"
b --layout seq2seq --tokenizer-json "$DATA/tokenizers/t5-small.tokenizer.json" --rules "$TMP/rules.json" \
    --normalize nfc --max-length 96 --max-target-length 128 -o "$TMP/cspider_s2s" "$TMP/cspider.json"
check "build the CSpider-like set --layout seq2seq (T5, rules, --normalize nfc)" $? "$TMP/err"

LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$PY" \
    "$PS_ROOT/tests/python/test_preprocess.py" \
    "$TMP/sparc" "$DATA/formats/sparc/dev.json" sparc \
    "$TMP/values" "$TMP/pets.json" values \
    "$TMP/spider" "$DATA/spider/dev.json" spider \
    "$TMP/picard" "$DATA/spider/dev.json" picard \
    "$TMP/bird" "$DATA/formats/bird/dev.json" bird \
    "$TMP/cspider" "$TMP/cspider.json" cspider \
    "$TMP/t5" "$DATA/spider/dev.json" t5 \
    "$TMP/bird_causal" "$DATA/formats/bird/dev.json" bird_causal \
    "$TMP/cspider_s2s" "$TMP/cspider.json" cspider_s2s >"$TMP/py.out" 2>"$TMP/py.err"
rc=$?
relay_tap "$TMP/py.out"
check "test_preprocess.py ran to its end and exited 0" "$rc" "$TMP/py.err"

# The summary says when cleaning changed a large share of records (CSpider's
# full-width punctuation: most of them) and points to the preprocessor; not
# for text already cleaned (`pairshard clean`'s output), which it does not change.
"$PAIRSHARD" build --no-gate --vocab "$DATA/vocab/bert-base-chinese.vocab.txt" --lowercase \
    -o "$TMP/cs2" "$TMP/cspider.json" 2>"$TMP/sum" </dev/null
grep -q "note cleaning changed [0-9]* of 500 kept records" "$TMP/sum" &&
    grep -q "pairshard.Preprocessor(DIR)" "$TMP/sum"
check "the build summary notes the records cleaning changed and names the preprocessor" $? "$TMP/sum"
grep "note cleaning" "$TMP/sum" | cut -c1-100 | sed 's/^/# /'
"$PAIRSHARD" clean -q -o "$TMP/clean.jsonl" "$DATA/spider/dev.json" &&
    "$PAIRSHARD" build --no-gate --vocab "$VOCAB" -o "$TMP/sp2" "$TMP/clean.jsonl" 2>"$TMP/sum2" </dev/null &&
    grep -q "1034 records in" "$TMP/sum2" && ! grep -q "note cleaning changed" "$TMP/sum2"
check "... and says nothing when cleaning changed none (cleaned Spider dev)" $? "$TMP/sum2"
"$PY" -c "
import json, sys
s = json.load(open(sys.argv[1]))['serving']
assert s['kept'] == 500 and s['changed_by_cleaning'] > 100 and s['threshold'] == 0.2, s
assert 'pairshard.Preprocessor' in s['note']
assert 'serving' not in json.load(open(sys.argv[2]))" "$TMP/cs2/report.json" "$TMP/sp2/report.json" 2>"$TMP/rep"
check "report.json's \"serving\" says the same (and is absent when nothing changed)" $? "$TMP/rep"
grep -q '<section id="serving">.*pairshard.Preprocessor(DIR)' "$TMP/cs2/report.html" &&
    ! grep -q 'id="serving"' "$TMP/sp2/report.html"
check "report.html has the serving section (and none when nothing changed)" $?
printf '{"validate": {"thresholds": {"serving_note_share": 0.99}}}' >"$TMP/share.json"
"$PAIRSHARD" build --no-gate --config "$TMP/share.json" --vocab "$DATA/vocab/bert-base-chinese.vocab.txt" \
    --lowercase -o "$TMP/cs3" "$TMP/cspider.json" 2>"$TMP/sum3" </dev/null &&
    ! grep -q "note cleaning changed" "$TMP/sum3" &&
    "$PY" -c "import json, sys; sys.exit('serving' in json.load(open(sys.argv[1])))" "$TMP/cs3/report.json"
check "validate.thresholds.serving_note_share 0.99: no note under it" $? "$TMP/sum3"

# A tampered embedded tokenizer: refused, naming the file.
cp -r "$TMP/spider" "$TMP/tampered"
sed -i '3000s/.*/tampered/' "$TMP/tampered/preprocess/vocab.txt"
LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$PY" -c "
import sys, pairshard
try:
    pairshard.Preprocessor(sys.argv[1])
except pairshard.PairshardError as e:
    print(e); sys.exit(0 if e.name == 'PS_ECORRUPT' and 'preprocess/vocab.txt' in e.message else 1)
sys.exit(1)" "$TMP/tampered" >"$TMP/t.out" 2>&1
check "a tampered embedded vocab.txt is refused, naming it" $? "$TMP/t.out"
"$PAIRSHARD" inspect --verify "$TMP/spider" >/dev/null 2>"$TMP/v.err"
check "inspect --verify passes an untouched set with its embedded files" $? "$TMP/v.err"
"$PAIRSHARD" inspect --verify "$TMP/tampered" >/dev/null 2>"$TMP/v.err"
[ $? -eq 1 ] && grep -q "corrupt (preprocess):.*preprocess/vocab.txt" "$TMP/v.err"
check "inspect --verify finds the tampered embedded file: exit 1, naming it" $? "$TMP/v.err"
done_testing
