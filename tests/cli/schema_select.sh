#!/bin/sh
# Schema selection (docs/BUILD.md, "Schema selection"): sets whose prompts
# are over their budget — Spider dev and train under --template ddl with
# GPT-2 (causal), T5 (seq2seq) and BERT (pair), BIRD's sample with its
# evidence — then tests/python/test_schema_select.py: the Preprocessor,
# without SQL, gives every stored prompt's ids; the prompt does not change
# when the SQL is garbage; the gold recall the report gives equals a
# recomputation from the SQL's identifiers. Then --reject-lost-schema's
# accounting, the gate on gold recall, the manifest, usage errors. TAP.
. "$(dirname "$0")/../tap.sh"

PY=/usr/bin/python3
if ! python_modules numpy; then
    skip "schema selection round trip" "python3-numpy is not installed and apt-get could not install it"
    done_testing
    exit
fi
export PAIRSHARD_LIB="$PS_BUILD/lib/libpairshard.so"
export PYTHONPATH="$PS_ROOT/python:$PS_ROOT/tests/python"
PRELOAD=$(sanitizer_preload "$PAIRSHARD_LIB")
TABLES="$DATA/spider/tables.json"
TOKS="$DATA/tokenizers"
b() { "$PAIRSHARD" build -q --no-gate --threads 2 "$@" 2>>"$TMP/err"; }

b --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" --schema "$TABLES" --template ddl \
    --max-length 384 --label-field db_id -o "$TMP/gpt2" "$DATA/spider/dev.json"
check "build Spider dev --template ddl, GPT-2, causal, --max-length 384, labelled by database" $? "$TMP/err"
b --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" --schema "$TABLES" --template ddl \
    --max-length 384 -o "$TMP/train" "$DATA/spider/train.json"
check "build Spider train (7,000) the same way" $? "$TMP/err"
b --layout seq2seq --tokenizer-json "$TOKS/t5-small.tokenizer.json" --schema "$TABLES" \
    --template ddl --max-length 256 --max-target-length 256 -o "$TMP/t5" "$DATA/spider/dev.json"
check "build Spider dev --template ddl, T5, seq2seq, --max-length 256" $? "$TMP/err"
b --vocab "$DATA/vocab/bert-base-uncased.vocab.txt" --schema "$TABLES" --template ddl \
    --max-length 384 --max-prompt-length 256 -o "$TMP/bert" "$DATA/spider/dev.json"
check "build Spider dev --template ddl, BERT, pair, --max-prompt-length 256" $? "$TMP/err"
cat >"$TMP/bird.json" <<'J'
{"prompt": "{question} Hint: {evidence}\n{schema:ddl}\n", "completion": "{sql}"}
J
b --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" \
    --schema "$DATA/formats/bird/dev_tables.json" --template "$TMP/bird.json" --sql-field SQL,query \
    --max-length 300 --max-prompt-length 200 -o "$TMP/bird" "$DATA/formats/bird/dev.json"
check "build BIRD's sample (evidence in the prompt), GPT-2, causal, --max-prompt-length 200" $? "$TMP/err"

LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$PY" \
    "$PS_ROOT/tests/python/test_schema_select.py" \
    "$TMP/gpt2" "$DATA/spider/dev.json" spider_causal "$TABLES" \
    "$TMP/train" "$DATA/spider/train.json" spider_train_causal "$TABLES" \
    "$TMP/t5" "$DATA/spider/dev.json" spider_seq2seq "$TABLES" \
    "$TMP/bert" "$DATA/spider/dev.json" spider_pair "$TABLES" \
    "$TMP/bird" "$DATA/formats/bird/dev.json" bird_causal "$DATA/formats/bird/dev_tables.json" \
    >"$TMP/py.out" 2>"$TMP/py.err"
rc=$?
relay_tap "$TMP/py.out"
check "test_schema_select.py ran to its end and exited 0" "$rc" "$TMP/py.err"
sed 's/^/# /' "$TMP/py.err"

# the manifest records how the prompts were selected, and the budget
"$PY" - "$TMP/gpt2/manifest.json" "$TMP/t5/manifest.json" <<'PY' 2>"$TMP/err"
import json, sys
a = json.load(open(sys.argv[1]))["text_to_sql"]["schema_selection"]
b = json.load(open(sys.argv[2]))["text_to_sql"]["schema_selection"]
assert a == {"mode": "question", "max_prompt_length": 288, "reject_lost_schema": False}, a
assert b["max_prompt_length"] == 256, b
PY
check "manifest: schema_selection mode question, budget 288 (3/4 of 384), 256 for a seq2seq source" $? "$TMP/err"

# --reject-lost-schema: exactly the records whose gold tables were cut,
# accounted as schema_lost_gold
"$PAIRSHARD" build --no-gate --threads 2 --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" \
    --schema "$TABLES" --template ddl --max-length 384 --reject-lost-schema -o "$TMP/rej" \
    "$DATA/spider/dev.json" >"$TMP/rej.out" 2>&1
check "build --reject-lost-schema" $? "$TMP/rej.out"
"$PY" - "$TMP/gpt2/report.json" "$TMP/rej/manifest.json" "$TMP/rej/rejects.jsonl" <<'PY' 2>"$TMP/err"
import json, sys
sql = json.load(open(sys.argv[1]))["sql"]
lost = sql["gold_checked"] - sql["gold_tables_kept"]
acc = json.load(open(sys.argv[2]))["accounting"]
rej = [json.loads(l) for l in open(sys.argv[3])]
by = [r for r in rej if r.get("reason") == "schema_lost_gold"]
assert lost > 0 and len(by) == lost, (lost, len(by))
assert acc["records_in"] == acc["kept"] + acc["rejected"] + acc["duplicates"], acc
assert acc["kept"] == sql["gold_checked"] - lost, (acc, sql)
PY
check "--reject-lost-schema rejects exactly the records whose gold tables were cut (schema_lost_gold), accounted" $? "$TMP/err"
grep -q "^Schema selection: [0-9,]* of [0-9,]* prompts over their budget; every gold table kept in" "$TMP/rej.out"
check "the build summary gives the gold recall" $? "$TMP/rej.out"

# the gate: a recall threshold above what the set reaches fails the build
printf '{"validate": {"thresholds": {"schema_gold_table_recall": 0.995}}}\n' >"$TMP/gate.json"
"$PAIRSHARD" build --threads 2 --config "$TMP/gate.json" --layout causal --label-field db_id \
    --tokenizer-json "$TOKS/gpt2.tokenizer.json" --schema "$TABLES" --template ddl \
    --max-length 384 -o "$TMP/gated" "$DATA/spider/dev.json" >"$TMP/gate.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] && grep -q "FAIL schema_gold_table_recall" "$TMP/gate.out" && ! [ -e "$TMP/gated/manifest.json" ]
check "validate.thresholds.schema_gold_table_recall 0.995 fails the gate (exit $rc), naming the check" $? "$TMP/gate.out"
grep -q "^  lowest gold table recall of a label: '[a-z_0-9]*', [0-9.]*% of [0-9]*" "$TMP/gate.out"
check "the summary names the label with the lowest gold table recall" $? "$TMP/gate.out"

# the config keys are the flags
printf '{"max_prompt_length": 256, "reject_lost_schema": true}\n' >"$TMP/keys.json"
b --config "$TMP/keys.json" --vocab "$DATA/vocab/bert-base-uncased.vocab.txt" --schema "$TABLES" \
    --template ddl --max-length 384 -o "$TMP/keys" "$DATA/spider/dev.json" &&
    b --vocab "$DATA/vocab/bert-base-uncased.vocab.txt" --schema "$TABLES" --template ddl \
        --max-length 384 --max-prompt-length 256 --reject-lost-schema -o "$TMP/flags" \
        "$DATA/spider/dev.json" &&
    same_set "$TMP/keys" "$TMP/flags"
check "config keys max_prompt_length and reject_lost_schema build the same set as the flags" $? "$TMP/err"

"$PAIRSHARD" build -q --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" --schema "$TABLES" \
    --template ddl --max-length 384 --max-prompt-length 400 -o "$TMP/bad" "$DATA/spider/dev.json" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "max-prompt-length 400 must be at most --max-length" "$TMP/err"
check "--max-prompt-length over --max-length is a usage error" $? "$TMP/err"
done_testing
