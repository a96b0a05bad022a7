#!/bin/sh
# The validation gate through `pairshard build`, reproducing the incident:
# on Spider with db_id labels, a user rule that mangles the questions of one
# database must fail the gate and name the label and the check; the same
# build without the rule passes. A failed gate publishes nothing and keeps
# the previous set; --no-gate publishes; merge validates the whole.
. "$PS_ROOT/tests/tap.sh"

VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
IN="$DATA/spider/train.json $DATA/spider/dev.json"
B() { "$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id "$@"; }
verdict() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['verdict'])" "$1"; }

B -o "$TMP/clean" $IN
check "clean Spider train+dev: the build passes (exit 0)" $?
[ "$(verdict "$TMP/clean/report.json")" = pass ] && [ -s "$TMP/clean/report.html" ] &&
    [ -s "$TMP/clean/stats.json" ]
check "report.json says pass; report.html and stats.json are in the set" $?

# The incident: a word-splitting rule whose lookahead only fires on
# questions about wine, i.e. on one database (wine_1).
cat >"$TMP/split.rules" <<'JSON'
[{"name": "split-words", "field": "question",
  "replace": "(?i)(?:^(?=.*\\bwines?\\b)|(?!^)\\G)\\W*\\w\\K(?=\\W*\\w)", "with": " "}]
JSON
cp -r "$TMP/clean" "$TMP/set"
B --rules "$TMP/split.rules" -o "$TMP/set" $IN 2>"$TMP/err"
[ $? -eq 1 ]
check "a rule that splits one database's words: the build exits 1" $?
grep -q "wine_1" "$TMP/err" && grep -q "FAIL" "$TMP/err"
check "the terminal summary names the label and the failing check" $?
cmp -s "$TMP/clean/manifest.json" "$TMP/set/manifest.json" &&
    [ -z "$(ls -a "$TMP" | grep '^\.set\.tmp\.')" ]
check "nothing is published: the previous set is intact, no staging left" $?
python3 - "$TMP/set.report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdict"] == "fail"
failed = [c for c in r["checks"] if c["verdict"] == "fail"]
assert failed and any("wine_1" in c["explanation"] for c in failed), failed
assert any(c["name"] == "question_length_change" for c in failed)
ex = r["paired"]["examples"]
assert ex and ex[0]["label"] == "wine_1" and ex[0]["question_before"] != ex[0]["question_after"]
PY
check "the report beside DIR names wine_1 in the failing checks and shows it before -> after" $?
[ -s "$TMP/set.report.html" ] && grep -q "wine_1" "$TMP/set.report.html"
check "report.html beside DIR" $?

B --rules "$TMP/split.rules" --no-gate -o "$TMP/forced" $IN 2>/dev/null
[ $? -eq 0 ] && [ "$(verdict "$TMP/forced/report.json")" = fail ] && [ -f "$TMP/forced/manifest.json" ]
check "--no-gate publishes anyway and keeps the failing report" $?

cat >"$TMP/drop.rules" <<'JSON'
[{"name": "no-wine", "field": "question", "drop_if": "(?i)\\bwines?\\b"}]
JSON
B --rules "$TMP/drop.rules" -o "$TMP/dropped" $IN 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "label_retention" "$TMP/err" && grep -q "wine_1" "$TMP/err"
check "a rule that drops one database's questions fails label retention naming it" $?

# Thresholds are configurable: the same check set to warn lets it through.
cat >"$TMP/cfg.json" <<'JSON'
{"validate": {"modes": {"label_retention": "warn", "label_js_distance": "warn",
                        "label_psi": "warn", "label_chi2": "warn"}}}
JSON
B --config "$TMP/cfg.json" --rules "$TMP/drop.rules" -o "$TMP/warned" $IN 2>"$TMP/err"
[ $? -eq 0 ] && [ "$(verdict "$TMP/warned/report.json")" = warn ]
check "config modes turn the label failures into warnings: published, verdict warn" $?

# merge validates the merged statistics with the same checks
for k in 0 1; do
    B --buckets 16,32,64,128,512 --part $k/2 -o "$TMP/p$k" $IN || echo "part $k failed"
done
"$PAIRSHARD" merge -q -o "$TMP/merged" "$TMP/p0" "$TMP/p1"
[ $? -eq 0 ] && [ "$(verdict "$TMP/merged/report.json")" = pass ]
check "merge of two clean parts passes validation and writes the report" $?
python3 - "$TMP" <<'PY'
import json, sys
t = sys.argv[1]
s = json.load(open(f"{t}/merged/stats.json"))
w = json.load(open(f"{t}/clean/stats.json"))
for p in ("raw", "cleaned", "tokenized"):
    assert s["points"][p]["records"] == w["points"][p]["records"], p
assert s["points"]["raw"]["labels"] == w["points"]["raw"]["labels"]
PY
check "the merged statistics equal the single build's (they are mergeable)" $?

# pairshard validate compares two saved statistics files
B -o "$TMP/dev" "$DATA/spider/dev.json"
"$PAIRSHARD" validate --baseline "$TMP/clean/stats.json" --current "$TMP/clean/stats.json" \
    --json "$TMP/same.json" >/dev/null 2>&1
[ $? -eq 0 ] && [ "$(verdict "$TMP/same.json")" = pass ]
check "validate: a statistics file against itself passes" $?
"$PAIRSHARD" validate --baseline "$TMP/clean/stats.json" --current "$TMP/dev/stats.json" \
    --json "$TMP/diff.json" >"$TMP/out" 2>&1
[ $? -eq 1 ] && [ "$(verdict "$TMP/diff.json")" = fail ]
check "validate: train+dev against dev alone fails (other labels)" $?

# [UNK] diagnostics and the calibrated thresholds, on a CSpider-like set
# (Spider dev's SQL, Chinese questions with curly quotes; see
# tests/data/PROVENANCE.md) with bert-base-chinese as published.
python3 "$DATA/cspider/make_cspider_like.py" "$DATA/spider/dev.json" "$TMP/cspider.json"
ZH="$TMP/zh.vocab.txt"
cp "$DATA/vocab/bert-base-chinese.vocab.txt" "$ZH"
Z() { "$PAIRSHARD" build -q --vocab "$ZH" --label-field db_id "$@"; }
Z --lowercase -o "$TMP/zh_lower" "$TMP/cspider.json" 2>"$TMP/err"
[ $? -eq 0 ] && [ "$(verdict "$TMP/zh_lower/report.json")" = warn ]
check "CSpider-like + bert-base-chinese, lower-cased: published, verdict warn (curly quotes)" $?
python3 - "$TMP/zh_lower/stats.json" "$TMP/zh_lower/report.json" <<'PY'
import json, sys
u = json.load(open(sys.argv[1]))["points"]["tokenized"]["unk_words"]
q = {w["word"]: w for w in u["question"]["words"]}
assert "\u201c" in q and "\u201d" in q, q.keys()
assert q["\u201c"]["hint"] == "rules" and q["\u201c"]["example"], q["\u201c"]
assert u["question"]["total"] >= q["\u201c"]["count"] + q["\u201d"]["count"]
r = json.load(open(sys.argv[2]))
c = {c["name"]: c for c in r["checks"]}
assert c["unk_token_rate"]["verdict"] == "warn" and c["unk_record_rate"]["verdict"] == "warn", c
hints = {h["hint"]: h for h in c["unk_token_rate"]["details"]["unk_words"]["hints"]}
rule = hints["rules"]["rules"][0]
assert rule["replace"] in ("[\u201c\u201d]", "[\u201d\u201c]") and rule["with"] == '"', rule
PY
check "stats.json keeps the curly quotes as [UNK] words; the report hints a rules file" $?

Z --no-lowercase -o "$TMP/zh_cased" "$TMP/cspider.json" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "FAIL unk_token_rate" "$TMP/err" && grep -q "\[UNK\] words in sql" "$TMP/err" &&
    grep -q "SELECT" "$TMP/err" && grep -q "try --lowercase" "$TMP/err" && grep -q '"replace":"\[' "$TMP/err"
check "CSpider-like with --no-lowercase stops; the summary lists the [UNK] words and the hints" $?
python3 - "$TMP/zh_cased.report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = {c["name"]: c for c in r["checks"]}
assert c["unk_token_rate"]["verdict"] == "fail"
uw = c["unk_token_rate"]["details"]["unk_words"]
sql = {w["word"]: w for w in uw["sql"]["words"]}
assert len(uw["sql"]["words"]) == 20 and sql["SELECT"]["hint"] == "lowercase", sql.keys()
assert any(h["hint"] == "lowercase" for h in uw["hints"])
PY
check "report.json beside DIR: the top 20 [UNK] words per field with hints" $?
grep -q "Words that became \[UNK\]" "$TMP/zh_cased.report.html" && grep -q "SELECT" "$TMP/zh_cased.report.html"
check "report.html beside DIR lists the [UNK] words" $?

"$PAIRSHARD" build -q --vocab "$DATA/vocab/bert-base-uncased.vocab.txt" -o "$TMP/zh_uncased" \
    "$TMP/cspider.json" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "FAIL unk_token_rate" "$TMP/err" && grep -q "\[UNK\] words in question" "$TMP/err"
check "CSpider-like with an English vocabulary stops and lists the question words" $?
"$PAIRSHARD" build -q --no-gate --vocab "$DATA/vocab/bert-base-chinese.mirror-escaped.vocab.txt" -o "$TMP/damaged" \
    "$DATA/spider/dev.json" 2>/dev/null
python3 - "$TMP/damaged/report.json" <<'PY'
import json, sys
c = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
h = {h["hint"]: h for h in c["unk_token_rate"]["details"]["unk_words"]["hints"]}
assert "html_escaped" in h and "<" in h["html_escaped"]["words"], h
PY
check "an HTML-escaped vocabulary: the report says so, naming <" $?

# the words are the same at any thread count, and parts merge to the whole
Z --no-lowercase --no-gate --threads 1 -o "$TMP/t1" "$TMP/cspider.json"
Z --no-lowercase --no-gate --threads 2 -o "$TMP/t2" "$TMP/cspider.json"
cmp -s "$TMP/t1/stats.json" "$TMP/t2/stats.json" && grep -q '"word": "SELECT"' "$TMP/t1/stats.json"
check "stats.json with its [UNK] words is byte-identical at 1 and 2 threads" $?
for k in 0 1; do
    Z --no-lowercase --no-gate --buckets 16,32,64,128,512 --part $k/2 -o "$TMP/zp$k" "$TMP/cspider.json"
done
"$PAIRSHARD" merge -q --no-gate -o "$TMP/zmerged" "$TMP/zp0" "$TMP/zp1" 2>/dev/null
python3 - "$TMP/zmerged/stats.json" "$TMP/t1/stats.json" <<'PY'
import json, sys
m, w = (json.load(open(p))["points"]["tokenized"]["unk_words"] for p in sys.argv[1:3])
for f in ("question", "sql"):
    assert m[f]["total"] == w[f]["total"], f
    assert [(x["word"], x["count"]) for x in m[f]["words"]] == \
        [(x["word"], x["count"]) for x in w[f]["words"]], f
PY
check "the merged parts' [UNK] words equal the single build's" $?

# With more than one thread the checks run beside phase 2 and a failed
# gate stops it: the same files beside DIR as a 1-thread build, whose
# phase 2 never starts, nothing published and no staging left.
for t in 1 3; do
    mkdir -p "$TMP/g$t"
    B --threads $t --rules "$TMP/split.rules" -o "$TMP/g$t/set" $IN 2>/dev/null
    echo $? >"$TMP/g$t/rc"
done
same=0
for f in rc set.report.json set.report.html set.stats.json set.rejects.jsonl; do
    cmp -s "$TMP/g1/$f" "$TMP/g3/$f" || same=1
done
[ $same -eq 0 ] && [ "$(cat "$TMP/g3/rc")" = 1 ] && [ ! -e "$TMP/g3/set" ] &&
    [ "$(ls -a "$TMP/g3" | grep -c '^\.set')" -eq 0 ]
check "a failed gate at 3 threads (checks beside phase 2): the 1-thread build's files beside DIR, nothing published" $?

# A build that keeps no record (here: a template field no record has, 50
# records, under min_records, where the other checks have too little data)
# fails the empty_set check: nothing published, the report beside DIR says
# where the records went. Its --part slices are not judged (a slice may be
# empty); merge judges the whole and stops.
python3 -c "
import json, sys
json.dump(json.load(open(sys.argv[1]))[:50], open(sys.argv[2], 'w'))" "$DATA/spider/dev.json" "$TMP/d50.json"
printf '{"prompt": "{question} {hint}", "completion": "{sql}"}' >"$TMP/hint.json"
B --template "$TMP/hint.json" -o "$TMP/none" "$TMP/d50.json" 2>"$TMP/err"
[ $? -eq 1 ] && [ ! -e "$TMP/none" ] && [ -s "$TMP/none.report.json" ] && [ -s "$TMP/none.rejects.jsonl" ] &&
    grep -q "FAIL empty_set  *0 records kept of 50 read (fail below 1): FAIL; rejected 50 (missing_field 50), duplicates 0; e.g. .*d50.json:#0: the template's placeholder {hint} needs the field 'hint'" "$TMP/err" &&
    grep -q "validation failed: nothing was published" "$TMP/err"
check "a build that keeps 0 of 50 records: exit 1, nothing published, the causes named" $? "$TMP/err"
python3 - "$TMP/none.report.json" <<'PY'
import json, sys
c = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}["empty_set"]
assert c["verdict"] == "fail" and c["value"] == 0 and c["op"] == "<" and c["threshold"] == 1, c
d = c["details"]
assert (d["records_in"], d["kept"], d["rejected"], d["duplicates"]) == (50, 0, 50, 0), d
assert d["largest_causes"] == [{"reason": "missing_field", "rule": None, "count": 50}], d
PY
check "report.json: empty_set failed, with the counts and the largest causes" $?
printf '[]' >"$TMP/nothing.json"
B -o "$TMP/none" "$TMP/nothing.json" 2>"$TMP/err"
[ $? -eq 1 ] && [ ! -e "$TMP/none" ] && grep -q "FAIL empty_set  *0 records kept of 0 read" "$TMP/err"
check "an input of no records: exit 1, nothing published" $? "$TMP/err"
for k in 0 1; do
    B --template "$TMP/hint.json" --part $k/2 -o "$TMP/np$k" "$TMP/d50.json" 2>"$TMP/err$k"
    echo $? >"$TMP/np$k.rc"
done
[ "$(cat "$TMP/np0.rc" "$TMP/np1.rc")" = "0
0" ] && grep -q '"name": "empty_set".*"verdict": "not_enough_data".*not judged: 0 of 2[0-9] records kept in this --part' "$TMP/np0/report.json"
check "each --part slice of it is published, empty_set not judged" $? "$TMP/err0"
"$PAIRSHARD" merge -q -o "$TMP/nmerged" "$TMP/np0" "$TMP/np1" 2>"$TMP/err"
[ $? -eq 1 ] && [ ! -e "$TMP/nmerged" ] && grep -q "FAIL empty_set  *0 records kept of 50 read" "$TMP/err"
check "merge of the empty slices: the gate stops it, nothing published" $? "$TMP/err"

done_testing
