#!/bin/sh
# Fields across the published text-to-SQL formats (tests/data/formats/):
# a named field no record has is a usage error with a did-you-mean; default
# ids stay unique when inputs share a base name; ids that collide are
# counted; rejections say why and where; candidate lists take Spider and
# BIRD in one build; config files resolve paths against their folder and
# suggest the nearest key. Every run's accounting must balance.
. "$PS_ROOT/tests/tap.sh"

VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
SPIDER="$DATA/spider/dev.json"
F="$DATA/formats"
B() { "$PAIRSHARD" build -q --vocab "$VOCAB" "$@"; }
# records_in = kept + rejected + duplicates, in a stats file or a manifest
balanced() {
    python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
a = j.get("accounting", j)
assert a["records_in"] == a["kept"] + a["rejected"] + a["duplicates"], a
PY
}

# 1. A named field that no record has.
B --label-field dbid -o "$TMP/dbid" "$SPIDER" 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] && grep -q "did you mean 'db_id'" "$TMP/err" && grep -q "'dbid'" "$TMP/err" &&
    grep -q "spider/dev.json" "$TMP/err" && [ ! -e "$TMP/dbid" ] &&
    [ -z "$(ls -a "$TMP" | grep '^\.dbid\.tmp\.')" ]
check "build --label-field dbid: exit 2 naming the field, the input and 'did you mean db_id'; nothing published" $?

"$PAIRSHARD" clean -q --id-field questionid "$SPIDER" -o "$TMP/q.jsonl" --rejects "$TMP/q.rej" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "id field 'questionid'" "$TMP/err" && [ ! -e "$TMP/q.jsonl" ] && [ ! -e "$TMP/q.rej" ]
check "clean --id-field questionid: exit 2, no half-written output" $?

"$PAIRSHARD" clean -q --sql-field sql "$F/bird/dev.json" -o "$TMP/b.jsonl" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "did you mean 'SQL'" "$TMP/err"
check "clean --sql-field sql on BIRD: exit 2, did you mean 'SQL' (case-insensitive)" $?

"$PAIRSHARD" clean -q --label-field db_id "$SPIDER" "$F/sparc/dev.json" -o "$TMP/s.jsonl" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "sparc/dev.json: no record has the label field 'db_id'" "$TMP/err" &&
    grep -q "did you mean 'database_id'" "$TMP/err"
check "a field absent from one input of several: the error names that input" $?

printf '%s\n' '{"question":"a","sql":"SELECT 1","db_id":"x"}' '{"question":"b","sql":"SELECT 2"}' >"$TMP/some.jsonl"
"$PAIRSHARD" clean -q --label-field db_id "$TMP/some.jsonl" -o "$TMP/some.out" --stats "$TMP/some.stats"
[ $? -eq 0 ] && [ "$(grep -c . "$TMP/some.out")" -eq 2 ] && balanced "$TMP/some.stats"
check "a named field absent from only some records: no error, the run goes on" $?

# 2. Default ids: two inputs called dev.json.
"$PAIRSHARD" clean -q --sql-field SQL,query "$SPIDER" "$F/bird/dev.json" -o "$TMP/two.jsonl" \
    --stats "$TMP/two.stats"
python3 - "$TMP/two.jsonl" <<'PY'
import json, sys
ids = [json.loads(l)["id"] for l in open(sys.argv[1])]
assert len(ids) == 1040 and len(set(ids)) == len(ids), (len(ids), len(set(ids)))
assert ids[0].endswith("spider/dev.json:#0") and ids[-1].endswith("bird/dev.json:#5"), ids[-1]
PY
check "spider/dev.json + bird/dev.json: 1040 distinct ids, named by their paths" $?
balanced "$TMP/two.stats"
check "  ... and the accounting balances" $?

"$PAIRSHARD" clean -q --label-field db_id "$SPIDER" -o "$TMP/one.jsonl"
head -1 "$TMP/one.jsonl" | grep -q '"id":"dev.json:#0"'
check "a single input keeps base-name ids (dev.json:#0)" $?

B --sql-field SQL,query --label-field db_id -o "$TMP/mixed" "$SPIDER" "$F/bird/dev.json"
rc=$?
python3 - "$TMP/mixed/manifest.json" "$TMP/mixed/report.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
a = m["accounting"]
assert a["records_in"] == 1040 and a["kept"] == 1040 and a["rejected"] == 0, a
assert "id_collisions" not in a, a
r = json.load(open(sys.argv[2]))
c = [c for c in r["checks"] if c["name"] == "id_collisions"][0]
assert c["verdict"] == "pass" and c["value"] == 0, c
PY
py=$?
[ $rc -eq 0 ] && [ $py -eq 0 ]
check "build --sql-field SQL,query over Spider + BIRD keeps all 1040, no id collision" $?

# Ids from an --id-field that collide: DuSQL's question_id repeated across two inputs.
mkdir -p "$TMP/a" "$TMP/b"
cp "$F/dusql/dev.json" "$TMP/a/dev.json"
sed 's/哪些/有哪些/; s/最大的/最大的是/; s/超过/多于/; s/有多少/共有多少/' "$F/dusql/dev.json" >"$TMP/b/dev.json"
"$PAIRSHARD" clean -q --id-field question_id --label-field db_id "$TMP/a/dev.json" "$TMP/b/dev.json" \
    -o "$TMP/ids.jsonl" --stats "$TMP/ids.stats"
python3 - "$TMP/ids.stats" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
c = s["id_collisions"]
assert c["count"] == 4, c
e = c["examples"][0]
assert e["id"] == "qid000001" and e["source"].endswith("b/dev.json:#0") and e["first_source"].endswith("a/dev.json:#0"), e
assert s["records_in"] == s["kept"] + s["rejected"] + s["duplicates"]
PY
check "--id-field question_id over two DuSQL files: 4 collisions counted with examples (stats)" $?

B --id-field question_id --label-field db_id --no-lowercase --vocab "$DATA/vocab/bert-base-chinese.vocab.txt" \
    -o "$TMP/idset" "$TMP/a/dev.json" "$TMP/b/dev.json" 2>"$TMP/err"
rc=$?
python3 - "$TMP/idset/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = [c for c in r["checks"] if c["name"] == "id_collisions"][0]
assert c["verdict"] == "warn" and c["value"] == 4 and "qid000001" in c["explanation"], c
assert r["paired"]["id_collisions"]["count"] == 4
PY
py=$?
[ $rc -eq 0 ] && [ $py -eq 0 ]
check "  ... and the build's report warns (check id_collisions)" $?

# 8. Rejections with their reason, input and an example: BIRD's records with
# their SQL under a name no default reads ("SQL" is the third default).
mkdir -p "$TMP/bird" && BIRDX="$TMP/bird/dev.json"
sed 's/"SQL":/"Sql":/' "$F/bird/dev.json" >"$BIRDX"
"$PAIRSHARD" clean "$BIRDX" -o "$TMP/bird.jsonl" --rejects "$TMP/bird.rej" --stats "$TMP/bird.stats" 2>"$TMP/err"
grep -q "largest rejection cause: missing_field (6 records), e.g. .*bird/dev.json:#0: no field 'sql', 'query' or 'SQL' (fields: .*Sql" "$TMP/err"
check "clean's summary names the largest rejection cause, its input and why" $?
head -1 "$TMP/bird.rej" | grep -q "no field 'sql', 'query' or 'SQL' (fields: question_id, db_id, question, evidence, Sql, difficulty)" &&
    balanced "$TMP/bird.stats"
check "BIRD with its SQL renamed: each rejection lists the fields the record has (Sql)" $?

printf '{"validate": {"thresholds": {"min_records": 5}}, "label_field": "db_id"}\n' >"$TMP/small.json"
B --config "$TMP/small.json" -o "$TMP/stopped" "$BIRDX" 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] && [ ! -e "$TMP/stopped" ] && [ "$(grep -c . "$TMP/stopped.rejects.jsonl")" -eq 6 ] &&
    grep -q "bird/dev.json:#0: no field 'sql', 'query' or 'SQL' (fields: .*Sql" "$TMP/err" &&
    grep -q "stopped.rejects.jsonl" "$TMP/err"
check "a stopped build: exit 1, DIR.rejects.jsonl beside the report, the summary names input and detail" $?
python3 - "$TMP/stopped.report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rbi = r["paired"]["rejected_by_input"]
assert len(rbi) == 1 and rbi[0]["input"].endswith("bird/dev.json") and rbi[0]["count"] == 6, rbi
assert "Sql" in rbi[0]["example"]["detail"] and rbi[0]["example"]["source"].endswith("#0")
PY
[ $? -eq 0 ] && grep -q "Rejections by input" "$TMP/stopped.report.html" &&
    grep -q "question_id, db_id, question, evidence, Sql, difficulty" "$TMP/stopped.report.html"
check "report.json and report.html list rejections per input with the example" $?

# --part: the parts' per-input rejections add up in the merged report.
B --buckets 32,64,512 --part 1/2 --sql-field sql,query --label-field db_id -o "$TMP/part1" \
    "$SPIDER" "$F/bird/dev.json" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "did you mean 'SQL'" "$TMP/err" && [ ! -e "$TMP/part1" ]
check "--part: a named field no record of an input has stops the part (every part decides alike)" $?
for k in 0 1; do
    B --buckets 32,64,512 --part $k/2 --label-field db_id -o "$TMP/part$k" "$SPIDER" "$BIRDX"
done
"$PAIRSHARD" merge -q -o "$TMP/merged" "$TMP/part0" "$TMP/part1" 2>/dev/null
python3 - "$TMP/merged/report.json" "$TMP/merged/manifest.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rbi = r["paired"]["rejected_by_input"]
assert len(rbi) == 1 and rbi[0]["count"] == 6 and rbi[0]["input"].endswith("bird/dev.json"), rbi
a = json.load(open(sys.argv[2]))["accounting"]
assert a["records_in"] == 1040 == a["kept"] + a["rejected"] + a["duplicates"] and a["rejected"] == 6, a
PY
check "merge of two --part sets: rejections per input add up (6 from bird/dev.json), accounting balances" $?

python3 - "$TMP/part1/stats.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for e in s["paired"]["rejected_by_input"]:
    e["count"] = 99
json.dump(s, open(sys.argv[1], "w"))
PY
"$PAIRSHARD" merge -q -o "$TMP/merged2" "$TMP/part0" "$TMP/part1" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "rejected_by_input counts exceed rejected" "$TMP/err" && [ ! -e "$TMP/merged2" ]
check "a part whose stats.json counts more rejections per input than rejections is refused" $?

"$PAIRSHARD" clean -q "$F/nl2sql/train.json" -o "$TMP/nl.jsonl" --rejects "$TMP/nl.rej" --stats "$TMP/nl.stats"
[ "$(grep -c '"reason":"wrong_type","detail":"field '"'"'sql'"'"' is an object, expected a string"' "$TMP/nl.rej")" -eq 3 ] &&
    balanced "$TMP/nl.stats"
check "NL2SQL's structured sql object: rejected as wrong_type, saying it is an object" $?

# 9. Candidate lists, and dotted paths for SParC/CoSQL's final turn.
"$PAIRSHARD" clean -q --question-field final.utterance,question --sql-field final.query,query \
    --label-field database_id,db_id "$F/sparc/dev.json" "$F/cosql/dev.json" "$F/cspider/dev.json" \
    -o "$TMP/conv.jsonl" --stats "$TMP/conv.stats"
[ $? -eq 0 ] && [ "$(grep -c . "$TMP/conv.jsonl")" -eq 9 ] && grep -q '"label":"car_1"' "$TMP/conv.jsonl" &&
    grep -q '"label":"pets_1","source":"[^"]*cspider' "$TMP/conv.jsonl" && balanced "$TMP/conv.stats"
check "lists over SParC + CoSQL (final turn) + CSpider: all 9 kept with their labels" $?

# 12. Config files: paths relative to the file, unknown keys.
mkdir -p "$TMP/proj/data"
cp "$F/bird/dev.json" "$TMP/proj/data/bird.json"
cp "$SPIDER" "$TMP/proj/data/spider.json"
cat >"$TMP/proj/build.json" <<'JSON'
{"inputs": ["data/spider.json", "data/bird.json"], "sql_field": "SQL,query",
 "label_field": "db_id", "output": "shards"}
JSON
(cd / && "$PAIRSHARD" build -q --vocab "$VOCAB" --config "$TMP/proj/build.json")
[ $? -eq 0 ] && [ -f "$TMP/proj/shards/manifest.json" ] && balanced "$TMP/proj/shards/manifest.json"
check "config: inputs and output relative to the config's folder, run from elsewhere" $?

printf '{"inputs": ["data/bird.json"], "lable_field": "db_id"}\n' >"$TMP/proj/typo.json"
B --config "$TMP/proj/typo.json" -o "$TMP/typo" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q 'typo.json: unknown key "lable_field"; did you mean "label_field"?' "$TMP/err"
check "config: an unknown key names the file and the nearest known key" $?

done_testing
