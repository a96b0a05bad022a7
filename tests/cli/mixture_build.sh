#!/bin/sh
# `pairshard build` over a mixture: one config with four sources, each with
# its own fields, schemas and template -- Spider train (question/query,
# picard), Spider dev (the ddl template), SParC dialogues (--turns) and a
# BIRD-like file (the SQL field, an {evidence} template, its own tables.json
# whose formula_1 is not Spider's). Each source's stored records (ids and
# token ids) are those of its build alone, less the duplicates of another
# source's records; the per-source accounting adds up to the totals. A
# rule that skews only one small source passes the overall checks and is
# stopped by that source's, which names it. TAP.
. "$PS_ROOT/tests/tap.sh"
D="$DATA"
TOK="$D/tokenizers/gpt2.tokenizer.json"
PY=/usr/bin/python3
PRELOAD=$(sanitizer_preload "$PS_BUILD/lib/libpairshard.so")
if ! python_modules numpy lmdb zstandard; then
    skip "mixture builds" "python3 numpy, lmdb or zstandard missing"
    done_testing
    exit
fi

# A BIRD-like source of 150 records: BIRD dev's six, each asked 25 ways
# (the question numbered), so its distributions can be checked (min_records);
# three of the 25 quote their first table MySQL's way (FROM `frpm`).
"$PY" - "$D/formats/bird/dev.json" "$TMP/bird.json" <<'PY'
import json, re, sys
recs = json.load(open(sys.argv[1]))
out = []
for k in range(25):
    for r in recs:
        r = dict(r)
        r["question_id"] = len(out)
        r["question"] = "%s (asked %d)" % (r["question"], k)
        if k < 3:
            r["SQL"] = re.sub(r"FROM (\w+)", r"FROM `\1`", r["SQL"], count=1)
        out.append(r)
json.dump(out, open(sys.argv[2], "w"), indent=1)
PY
cat >"$TMP/bird.tmpl.json" <<'EOF'
{"prompt": "{schema:ddl}\n\n-- External knowledge: {evidence}\n-- Question: {question}\n", "completion": "{sql}"}
EOF
# Each source's options, as a config's source and as a build of its own.
cat >"$TMP/sources.json" <<EOF
[{"name": "spider_train", "inputs": ["$D/spider/train.json"], "schema": "$D/spider/tables.json",
  "template": "picard", "question_field": "question", "sql_field": "query", "label_field": "db_id"},
 {"name": "spider_dev", "inputs": ["$D/spider/dev.json"], "schema": "$D/spider/tables.json",
  "template": "ddl", "label_field": "db_id"},
 {"name": "sparc", "inputs": ["$D/formats/sparc/dev.json"], "schema": "$D/spider/tables.json",
  "template": "picard", "turns": "interaction", "label_field": "database_id"},
 {"name": "bird", "inputs": ["$TMP/bird.json"], "schema": "$D/formats/bird/dev_tables.json",
  "template": "$TMP/bird.tmpl.json", "sql_field": "SQL", "label_field": "db_id"}]
EOF
"$PY" - "$TMP" "$TOK" <<'PY'
import json, sys
tmp, tok = sys.argv[1:]
srcs = json.load(open(tmp + "/sources.json"))
top = {"tokenizer_json": tok, "max_length": 1024}
json.dump(dict(top, sources=srcs), open(tmp + "/mix.json", "w"))
for s in srcs: # the same source, built alone
    one = dict(top, **{k: v for k, v in s.items() if k != "name"})
    json.dump(one, open("%s/alone_%s.json" % (tmp, s["name"]), "w"))
PY

"$PAIRSHARD" build -q --config "$TMP/mix.json" -o "$TMP/mix" --threads 2 2>"$TMP/err"
check "a four-source mixture builds in one run (BIRD's formula_1 beside Spider's)" $? "$TMP/err"
"$PAIRSHARD" inspect --verify "$TMP/mix" >"$TMP/verify" 2>&1
check "inspect --verify: the shards, the totals and the per-source accounting add up" $? "$TMP/verify"
"$PAIRSHARD" inspect "$TMP/mix" >"$TMP/inspect" 2>&1 &&
    grep -q "sources" "$TMP/inspect" && grep -q "spider_train" "$TMP/inspect" && grep -q "bird" "$TMP/inspect"
check "inspect lists the set's sources with their counts" $? "$TMP/inspect"

"$PY" - "$TMP/mix/manifest.json" <<'PY' 2>"$TMP/err"
import json, sys
m = json.load(open(sys.argv[1]))
a, S = m["accounting"], m["sources"]
assert [s["name"] for s in S] == ["spider_train", "spider_dev", "sparc", "bird"], S
for k in ("records_in", "kept", "rejected", "duplicates"):
    assert sum(s["accounting"][k] for s in S) == a[k], (k, [s["accounting"][k] for s in S], a[k])
for s in S:
    t = s["accounting"]
    assert t["records_in"] == t["kept"] + t["rejected"] + t["duplicates"], s["name"]
    assert s["records"] == t["kept"], s["name"]
    for r, n in t["rejected_by_reason"].items():
        pass
for r in a["rejected_by_reason"]:
    assert sum(s["accounting"]["rejected_by_reason"][r] for s in S) == a["rejected_by_reason"][r], r
assert sum(s["records"] for s in S) == m["totals"]["records"]
assert sum(s["tokens"] for s in S) == m["totals"]["tokens"]
assert S[2]["accounting"]["records_in"] == 7, S[2]["accounting"]["records_in"]  # SParC: a record a turn
assert S[3]["accounting"]["kept"] == 150
print({s["name"]: s["accounting"]["kept"] for s in S}, file=sys.stderr)
PY
check "manifest: per-source accounting adds up to the totals (records, tokens, reasons)" $? "$TMP/err"

# A manifest whose sources no longer add up is caught by --verify.
cp -r "$TMP/mix" "$TMP/tampered"
"$PY" - "$TMP/tampered/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
a = m["sources"][3]["accounting"]  # still balanced on its own
a["records_in"] += 5
a["rejected"] += 5
a["rejected_by_reason"]["too_long"] += 5
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
"$PAIRSHARD" inspect --verify "$TMP/tampered" >"$TMP/verify" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "sources' accounting adds up" "$TMP/verify"
check "inspect --verify: per-source accounting that does not add up to the set's is an error" $? "$TMP/verify"

. "$PS_ROOT/tests/tools/dump_set.sh"
dump_set "$TMP/mix" "$TMP/mix.jsonl" 2>"$TMP/err"
check "the mixture reads through the Loader" $? "$TMP/err"
# Serving: each source's Preprocessor renders its stored records again,
# from the raw question (and SQL), BIRD's with its evidence and schema.
PYTHONPATH="$PS_ROOT/python" PAIRSHARD_LIB="$PS_BUILD/lib/libpairshard.so" \
    LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    "$PY" - "$TMP/mix" "$TMP/mix.jsonl" "$D/spider/dev.json" "$TMP/bird.json" <<'PY' 2>"$TMP/err"
import json, sys
import pairshard
d, ids = sys.argv[1], sys.argv[2]
rows = {json.loads(l)["id"]: json.loads(l)["input_ids"] for l in open(ids)}
try:
    pairshard.Preprocessor(d)
    sys.exit("a mixture opened without a source")
except pairshard.PairshardError as e:
    assert "spider_dev" in str(e) and "bird" in str(e), e
n = 0
for name, path, sql, extra in (("spider_dev", sys.argv[3], "query", ()),
                               ("bird", sys.argv[4], "SQL", ("evidence",))):
    with pairshard.Preprocessor(d, source=name) as p:
        for i, r in enumerate(json.load(open(path))[:200]):
            rid = "%s/%s:#%d" % (name, path.rsplit("/", 1)[1], i)
            if rid not in rows:
                continue  # a duplicate or rejected
            kw = {k: r[k] for k in extra}
            got = p.preprocess(question=r["question"], db_id=r["db_id"], sql=r[sql], **kw)
            assert list(got["input_ids"]) == rows[rid], (rid, len(got["input_ids"]), len(rows[rid]))
            n += 1
print(n, "records served alike", file=sys.stderr)
assert n >= 300
PY
check "Preprocessor(DIR, source=...): each source's stored records rendered again from raw text" $? "$TMP/err"
for s in spider_train spider_dev sparc bird; do
    "$PAIRSHARD" build -q --config "$TMP/alone_$s.json" -o "$TMP/alone_$s" --threads 2 2>"$TMP/err" &&
        dump_set "$TMP/alone_$s" "$TMP/alone_$s.jsonl" 2>>"$TMP/err" &&
        "$PY" - "$s" "$TMP/mix.jsonl" "$TMP/alone_$s.jsonl" "$TMP/mix/duplicates.jsonl" <<'PY' 2>>"$TMP/err"
import json, sys
name, mix, alone, dups = sys.argv[1:]
ours = {}
for l in open(mix):
    r = json.loads(l)
    if r["id"].startswith(name + "/"):
        ours[r["id"][len(name) + 1:]] = r["input_ids"]
# the mixture keeps the first of a pair across sources (config order)
across = set()
for l in open(dups):
    d = json.loads(l)
    if d["source_name"] == name and not d["duplicate_of"].startswith(name + "/"):
        across.add(d["id"][len(name) + 1:])
want = {}
for l in open(alone):
    r = json.loads(l)
    if r["id"] not in across:
        want[r["id"]] = r["input_ids"]
print(name, len(ours), "records;", len(across), "duplicates of other sources", file=sys.stderr)
assert len(ours) > 0 and ours == want, (len(ours), len(want), sorted(set(ours) ^ set(want))[:5])
PY
    check "source $s: its stored ids and tokens equal its build alone's" $? "$TMP/err"
done
"$PAIRSHARD" build -q --config "$TMP/mix.json" -o "$TMP/mix1" --threads 1 2>"$TMP/err" &&
    same_set "$TMP/mix" "$TMP/mix1"
check "the mixture's files are the same bytes with 1 thread as with 2" $? "$TMP/err"
"$PY" - "$TMP/alone_bird/manifest.json" <<'PY' 2>"$TMP/err"
import json, sys
m = json.load(open(sys.argv[1]))
assert "sources" not in m and "sources" not in m["config"], "a single-source set has sources"
assert not any(k.startswith("source.") for k in m["preprocess"]["files"])
PY
check "a build without sources has no sources member anywhere (its bytes are those it had)" $? "$TMP/err"

# Two sources sharing 40 records (Spider dev's 40..79), same template.
"$PY" - "$D/spider/dev.json" "$TMP" "$TOK" <<'PY'
import json, sys
dev, tmp, tok = sys.argv[1:]
d = json.load(open(dev))
json.dump(d[:80], open(tmp + "/first.json", "w"))
json.dump(d[40:120], open(tmp + "/second.json", "w"))
src = lambda n, f: {"name": n, "inputs": [tmp + "/" + f], "schema": dev.replace("dev.json", "tables.json"),
                    "template": "ddl", "label_field": "db_id"}
json.dump({"tokenizer_json": tok, "no_gate": True, "sources": [src("b", "second.json"), src("a", "first.json")]},
          open(tmp + "/dups.json", "w"))
PY
"$PAIRSHARD" build -q --config "$TMP/dups.json" -o "$TMP/dups" --threads 2 2>"$TMP/err" &&
    "$PY" - "$TMP/dups" <<'PY' 2>>"$TMP/err"
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
b, a = m["sources"]
dups = [json.loads(l) for l in open(sys.argv[1] + "/duplicates.jsonl")]
across = [d for d in dups if d["source_name"] == "a" and d["duplicate_of"].startswith("b/")]
print(b["duplicates_of"], a["duplicates_of"], len(across), file=sys.stderr)
# "b" comes first in the config: its copies are kept, "a"'s are the duplicates
assert a["duplicates_of"] == {"b": len(across)} and len(across) >= 35 and b["duplicates_of"] == {}
assert all(d["id"][2:] == "first.json:#%d" % (int(d["duplicate_of"].split("#")[1]) + 40) for d in across)
PY
check "duplicates across sources: counted per pair, the first source's record kept" $? "$TMP/err"

# ---- a rule that skews one small source -----------------------------------
cat >"$TMP/rules.json" <<'EOF'
[{"name": "no-mysql-quoted-tables", "field": "sql", "drop_if": "FROM `"}]
EOF
"$PY" -c "
import json; c = json.load(open('$TMP/mix.json')); c['rules'] = '$TMP/rules.json'
json.dump(c, open('$TMP/mix_rules.json', 'w'))"
"$PAIRSHARD" build --config "$TMP/mix_rules.json" -o "$TMP/skewed" --threads 2 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] && [ ! -e "$TMP/skewed" ] && grep -q "source 'bird': " "$TMP/err" &&
    "$PY" - "$TMP/skewed.report.json" <<'PY' 2>>"$TMP/err"
import json, sys
r = json.load(open(sys.argv[1]))
overall = [c for c in r["checks"] if c["group"] != "source"]
src = [c for c in r["checks"] if c["group"] == "source"]
assert all(c["verdict"] != "fail" for c in overall), [c["name"] for c in overall if c["verdict"] == "fail"]
failed = [c for c in src if c["verdict"] == "fail"]
assert failed and all(c["details"]["source"] == "bird" for c in failed), failed
assert all(c["explanation"].startswith("source 'bird': ") for c in failed)
by = {s["name"]: s for s in r["sources"]}
assert by["bird"]["verdict"] == "fail" and by["spider_train"]["verdict"] != "fail"
print([c["explanation"][:100] for c in failed], file=sys.stderr)
PY
check "a rule dropping 12% of BIRD's records: the overall checks pass, bird's stop the build naming it" $? "$TMP/err"

grep -q '<section id="sources">' "$TMP/skewed.report.html" &&
    grep -o '<section id="sources">.*</section>' "$TMP/skewed.report.html" | grep -q "<h3>bird</h3>"
check "report.html: a section per source, with the checks bird failed" $? "$TMP/skewed.report.html"

# ---- parts of a mixture merged: each source's accounting summed --------------
for k in 0 1; do
    "$PAIRSHARD" build -q --config "$TMP/mix.json" -o "$TMP/part$k" --part $k/2 \
        2>>"$TMP/parts.err" || echo "part $k failed" >>"$TMP/parts.err"
done
"$PAIRSHARD" merge -q -o "$TMP/merged" "$TMP/part0" "$TMP/part1" 2>>"$TMP/parts.err" &&
    "$PAIRSHARD" inspect --verify "$TMP/merged" >>"$TMP/parts.err" 2>&1
check "two --part builds of the mixture merge into a set that verifies" $? "$TMP/parts.err"
"$PY" - "$TMP/merged/manifest.json" "$TMP/mix/manifest.json" <<'PY' 2>"$TMP/err"
import json, sys
merged, whole = (json.load(open(f)) for f in sys.argv[1:])
for a, b in zip(merged["sources"], whole["sources"]):
    for s in (a, b): # a few example ids, from the first part that had some
        s["accounting"].get("sql", {}).pop("examples", None)
    for k in ("name", "records", "tokens", "duplicates_of"):
        assert a[k] == b[k], (a["name"], k, a[k], b[k])
    for k in b["accounting"]:
        assert a["accounting"][k] == b["accounting"][k], (a["name"], k)
assert len(merged["sources"]) == len(whole["sources"]) == 4
for m in (merged, whole):
    m["accounting"].get("sql", {}).pop("examples", None)
for k in whole["accounting"]:
    assert merged["accounting"][k] == whole["accounting"][k], ("accounting", k)
PY
check "the merged parts' per-source records, tokens, accounting and duplicates are the whole build's" $? "$TMP/err"

# ---- what a config may not say ----------------------------------------------
bad_config() { # description json: exit status 2 and a message
    printf '%s' "$2" >"$TMP/bad.json"
    "$PAIRSHARD" build -q --config "$TMP/bad.json" -o "$TMP/bad" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 2 ] && [ -s "$TMP/err" ] && [ ! -e "$TMP/bad" ]
    check "$1" $? "$TMP/err"
}
S1="{\"name\": \"a\", \"inputs\": [\"$D/spider/dev.json\"]}"
bad_config "two sources with one name are refused" \
    "{\"tokenizer_json\": \"$TOK\", \"sources\": [$S1, $S1]}"
bad_config "a name outside [A-Za-z0-9_.-] is refused" \
    "{\"tokenizer_json\": \"$TOK\", \"sources\": [{\"name\": \"a/b\", \"inputs\": [\"$D/spider/dev.json\"]}]}"
bad_config "top-level inputs beside sources are refused" \
    "{\"tokenizer_json\": \"$TOK\", \"inputs\": [\"$D/spider/dev.json\"], \"sources\": [$S1]}"
bad_config "a build-wide option inside a source is refused" \
    "{\"tokenizer_json\": \"$TOK\", \"sources\": [{\"name\": \"a\", \"inputs\": [\"$D/spider/dev.json\"], \"max_length\": 64}]}"
done_testing
