#!/bin/sh
# --execute runs each gold query before and after cleaning and compares the
# results' fingerprints (docs/REPORT.md, sql_result_regression), on SQLite
# databases generated here from Spider's tables.json with rows that hold
# the gold queries' own literals (tests/support/spider_dbs.py): a rule that
# lower-cases string literals keeps every query compiling and is stopped
# naming itself; a rule that only moves whitespace passes; a query that
# would run for hours is stopped at its time limit and counted; failed
# queries are rejected on request and accounted; the fingerprints are
# stored per record (the exec database), verified, printed by inspect
# --exec, read through the Python binding and recounted by Python's
# sqlite3; the set's bytes do not depend on --threads. TAP.
. "$PS_ROOT/tests/tap.sh"
SPIDER="$DATA/spider/dev.json"
TABLES="$DATA/spider/tables.json"
VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
python3 "$PS_ROOT/tests/support/spider_dbs.py" "$TABLES" "$SPIDER" "$TMP/dbs"
check "20 databases generated for Spider dev" $(( $(ls "$TMP/dbs" | wc -l) == 20 ? 0 : 1 ))
build() { # OUT [options]: a build of Spider dev on the generated databases
    out=$1; shift
    "$PAIRSHARD" build --databases "$TMP/dbs" --schema "$TABLES" --execute --template ddl \
        --vocab "$VOCAB" -o "$out" "$@" "$SPIDER"
}
check_py() { # description script args...: a python3 assertion script on files
    d=$1; shift
    python3 - "$@" >"$TMP/py.log" 2>&1
    check "$d" $? "$TMP/py.log"
}

# ---- a rule that only folds whitespace: results unchanged ------------------
cat >"$TMP/ws.json" <<'J'
[{"name": "no-space-before-comma", "field": "sql", "replace": "\\s+,", "with": ","}]
J
build "$TMP/ws" --rules "$TMP/ws.json" 2>"$TMP/ws.err"
check "a whitespace rule passes the gate" $? "$TMP/ws.err"
check_py "sql_result_regression passes with the 362 queries the rule changed re-run" \
    "$TMP/ws/report.json" "$TMP/ws/manifest.json" <<'PY'
import json, sys
r, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
c = [c for c in r["checks"] if c["name"] == "sql_result_regression"][0]
rule = m["accounting"]["rules"][0]
e = r["sql"]["execution"]
print(c, rule, e["before"], e["statuses"])
assert c["verdict"] == "pass" and c["details"]["compared"] == 1034, c
assert rule["changed"] == 362, rule
assert e["before"] == e["statuses"] and e["statuses"]["ok"] > 700, e
PY

# ---- a rule lower-casing string literals: stopped, the rule named ----------
python3 -c '
import json, string
print(json.dumps([{"name": "lower-literal-" + c.lower(), "field": "sql",
                   "replace": "(?<=[\x27\"])" + c, "with": c.lower()}
                  for c in string.ascii_uppercase]))' >"$TMP/lower.json"
build "$TMP/lower" --rules "$TMP/lower.json" 2>"$TMP/lower.err"
rc=$?
[ $rc -eq 1 ] && [ ! -e "$TMP/lower" ] &&
    grep -q "FAIL sql_result_regression .*changed by rule 'lower-literal-a'" "$TMP/lower.err"
check "lower-casing literals fails the gate (exit $rc) as sql_result_regression naming the rule" \
    $? "$TMP/lower.err"
check_py "report.json: the regressions, by rule, with the records' fingerprints before and after" \
    "$TMP/lower.report.json" "$SPIDER" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
dev = json.load(open(sys.argv[2]))
c = [c for c in r["checks"] if c["name"] == "sql_result_regression"][0]
d = c["details"]
print(c["explanation"])
assert c["verdict"] == "fail" and d["regressions"] > 50, d["regressions"]
assert d["by_rule"][0]["rule"] == "lower-literal-a", d["by_rule"]
assert sum(x["count"] for x in d["by_rule"]) >= d["regressions"]
# every example's raw query holds a capitalised literal the rules lowered
for ex in d["examples"]:
    q = dev[int(ex["id"].rsplit("#", 1)[1])]["query"]
    assert re.search(r"['\"][A-Z]", q), q
    assert ex["before"] != ex["after"], ex
# the compile check saw nothing: the SQL still compiles
assert [x for x in r["checks"] if x["name"] == "sql_compile_regression"][0]["verdict"] == "pass"
PY

# ---- a query that would run for hours: stopped at its limit ----------------
cat >"$TMP/slow.jsonl" <<'J'
{"db_id": "concert_singer", "question": "How many singers?", "query": "SELECT count(*) FROM singer"}
{"db_id": "concert_singer", "question": "Count to a billion?", "query": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT count(*) FROM c"}
{"db_id": "concert_singer", "question": "Singers named nobody?", "query": "SELECT name FROM singer WHERE name = 'nobody at all'"}
{"db_id": "concert_singer", "question": "Broken?", "query": "SELECT abs(1, 2) FROM singer"}
J
start=$(date +%s)
timeout 120 "$PAIRSHARD" build --databases "$TMP/dbs" --execute --execute-timeout 300 \
    --template ddl --no-gate --vocab "$VOCAB" -o "$TMP/slow" "$TMP/slow.jsonl" 2>"$TMP/slow.err"
rc=$? secs=$(( $(date +%s) - start ))
[ $rc -eq 0 ] && [ $secs -lt 60 ] && grep -q "^SQL executed: 1 ok, 1 empty, 1 error, 1 timeout" "$TMP/slow.err"
check "a recursive CTE counting to 1e9 is counted as timeout, not hung (${secs}s)" $? "$TMP/slow.err"

# ---- --reject-failed-execution: rejected with their reasons, accounted -----
"$PAIRSHARD" build --databases "$TMP/dbs" --execute --execute-timeout 300 \
    --reject-failed-execution error,timeout,empty --template ddl --no-gate --vocab "$VOCAB" \
    -o "$TMP/rej" "$TMP/slow.jsonl" 2>"$TMP/rej.err"
check "--reject-failed-execution error,timeout,empty builds" $? "$TMP/rej.err"
check_py "the three are in rejects.jsonl as execution_timeout/_empty/_error and the sums add up" \
    "$TMP/rej" <<'PY'
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
rej = [json.loads(l) for l in open(d + "/rejects.jsonl")]
a = m["accounting"]
got = {x["id"]: x["reason"] for x in rej}
print(got, a["rejected_by_reason"])
assert got == {"slow.jsonl:2": "execution_timeout", "slow.jsonl:3": "execution_empty",
               "slow.jsonl:4": "execution_error"}, got
assert a["kept"] == 1 and a["rejected"] == 3 and a["records_in"] == 4
for k in ("execution_timeout", "execution_empty", "execution_error"):
    assert a["rejected_by_reason"][k] == 1, a["rejected_by_reason"]
assert all(x.get("detail") for x in rej), rej
PY
"$PAIRSHARD" inspect "$TMP/rej" --verify >"$TMP/rej.verify" 2>&1
check "inspect --verify passes on the set with rejections" $? "$TMP/rej.verify"
"$PAIRSHARD" build --databases "$TMP/dbs" --execute --reject-failed-execution sometimes \
    --no-gate --vocab "$VOCAB" -o "$TMP/bad" "$TMP/slow.jsonl" 2>"$TMP/bad.err"
[ $? -eq 2 ] && grep -q "'sometimes' is not error, timeout or empty" "$TMP/bad.err"
check "--reject-failed-execution with an unknown status is a usage error" $? "$TMP/bad.err"

# ---- the fingerprints stored per record -------------------------------------
"$PAIRSHARD" inspect "$TMP/ws" --verify >"$TMP/ws.verify" 2>&1
check "inspect --verify checks the exec database of a set" $? "$TMP/ws.verify"
"$PAIRSHARD" inspect "$TMP/ws" --exec >"$TMP/ws.exec" 2>"$TMP/ws.exec.err"
check_py "inspect --exec prints one fingerprint per record, matching report.json's statuses" \
    "$TMP/ws.exec" "$TMP/ws/report.json" <<'PY'
import json, sys
fps = [json.loads(l) for l in open(sys.argv[1])]
e = json.load(open(sys.argv[2]))["sql"]["execution"]
n = {}
for f in fps:
    n[f["after"]["status"]] = n.get(f["after"]["status"], 0) + 1
print(n, e["statuses"])
assert len(fps) == 1034 and all(n.get(k, 0) == v for k, v in e["statuses"].items())
assert sum(f["sql_changed"] for f in fps) >= 362
assert all(f["before"] == f["after"] for f in fps)
PY
"$PAIRSHARD" build -q --schema "$TABLES" --template ddl --vocab "$VOCAB" -o "$TMP/plain" \
    "$SPIDER" 2>"$TMP/plain.err"
"$PAIRSHARD" inspect "$TMP/plain" --exec >/dev/null 2>"$TMP/plain.exec.err"
[ $? -eq 2 ] && grep -q "built without --execute" "$TMP/plain.exec.err"
check "a set built without --execute has no exec database (inspect --exec says so)" $? \
    "$TMP/plain.exec.err"

# ---- the same bytes whatever --threads -------------------------------------
build "$TMP/t1" -q --threads 1 --shards 2 --rules "$TMP/ws.json" 2>/dev/null
build "$TMP/t3" -q --threads 3 --shards 2 --rules "$TMP/ws.json" 2>/dev/null
ok_if "--threads 1 and 3 give byte-identical shards and manifest" same_set "$TMP/t1" "$TMP/t3"

# ---- a mixture where one source runs its SQL: the other's are "not run" ------
cat >"$TMP/mix.json" <<EOF
{"vocab": "$VOCAB", "sources": [
 {"name": "run", "inputs": ["$SPIDER"], "schema": "$TABLES", "template": "ddl",
  "databases": "$TMP/dbs", "execute": true},
 {"name": "norun", "inputs": ["$SPIDER"], "schema": "$TABLES", "template": "picard"}]}
EOF
"$PAIRSHARD" build -q --config "$TMP/mix.json" -o "$TMP/mix" 2>"$TMP/mix.err" &&
    "$PAIRSHARD" inspect --verify "$TMP/mix" >>"$TMP/mix.err" 2>&1 &&
    "$PAIRSHARD" inspect "$TMP/mix" --exec >"$TMP/mix.exec" 2>>"$TMP/mix.err"
check "a mixture with one executing source keeps an exec database and verifies" $? \
    "$TMP/mix.err"
check_py "its records: the executing source's ran, the other's are not_run" \
    "$TMP/mix.exec" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
run = [r for r in rows if r["id"].startswith("run/")]
norun = [r for r in rows if r["id"].startswith("norun/")]
assert len(run) == 1034 and len(norun) == 1034, (len(run), len(norun))
assert all(r["after"]["status"] in ("ok", "empty", "error", "timeout") for r in run)
assert all(r["before"]["status"] == r["after"]["status"] == "not_run" for r in norun)
PY

# ---- the binding, recounted by Python's sqlite3 -----------------------------
if python_modules numpy; then
    run_py "$PS_ROOT/tests/python/test_exec_fingerprints.py" "$TMP/ws" "$SPIDER" "$TMP/dbs"
else
    skip "pairshard.exec_fingerprints" "python3-numpy is not installed"
fi
done_testing
