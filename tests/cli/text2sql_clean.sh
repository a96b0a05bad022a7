#!/bin/sh
# pairshard clean with text-to-SQL inputs: --schema and each template preset
# on Spider dev (picard checked against PICARD's own serialization, written
# in Python from tables.json), a template file with BIRD's {evidence}, SParC
# dialogues with --turns, unknown databases, SQL that does not compile
# (counted, or rejected with --reject-invalid-sql), a rule that breaks SQL
# (a regression), and the usage errors. Every run's accounting must balance.
. "$PS_ROOT/tests/tap.sh"

SPIDER="$DATA/spider/dev.json"
TABLES="$DATA/spider/tables.json"
F="$DATA/formats"
C() { "$PAIRSHARD" clean -q "$@"; }
# records_in = kept + rejected + duplicates
balanced() {
    python3 - "$1" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
assert a["balanced"] and a["records_in"] == a["kept"] + a["rejected"] + a["duplicates"], a
PY
}

# 1. Spider dev with its schema and each preset.
for t in pair question picard ddl; do
    C --schema "$TABLES" --template $t "$SPIDER" -o "$TMP/$t.jsonl" --stats "$TMP/$t.stats"
    [ $? -eq 0 ] && balanced "$TMP/$t.stats"
    check "spider dev --template $t: exit 0, accounting balances" $?
done
python3 - "$TMP" "$TABLES" <<'PY'
import json, sys
tmp, tables = sys.argv[1], sys.argv[2]
schemas = {d["db_id"]: d for d in json.load(open(tables))}
def rows(name):
    return [json.loads(l) for l in open(f"{tmp}/{name}.jsonl")]
# PICARD, seq2seq/utils/dataset.py serialize_schema (peteshaw, with db_id,
# normalize_query=True: names lower-cased) over table_names_original and
# column_names_original; SQLite's own sqlite_* tables are left out.
def picard_schema(db_id):
    d = schemas[db_id]
    tables = []
    for ti, tn in enumerate(d["table_names_original"]):
        if tn.lower().startswith("sqlite_"):
            continue
        cols = " , ".join(c.lower() for t, c in d["column_names_original"] if t == ti)
        tables.append(" | {table} : {columns}".format(table=tn.lower(), columns=cols))
    return " | {db_id}".format(db_id=db_id) + "".join(tables)
pair, question, picard, ddl = rows("pair"), rows("question"), rows("picard"), rows("ddl")
assert len(pair) == len(question) == len(picard) == len(ddl) == 1034
for p, q, k, d in zip(pair, question, picard, ddl):
    assert p["prompt"] == p["question"] and p["completion"] == p["sql"], p
    assert q["prompt"] == q["question"] and q["completion"] is None, q
    # spider_get_input / spider_get_target(target_with_db_id=True, no normalize)
    want = k["question"].strip() + " " + picard_schema(k["db_id"]).strip()
    assert k["prompt"] == want, (k["prompt"], want)
    assert k["completion"] == k["db_id"] + " | " + k["sql"], k
    assert d["prompt"].startswith("CREATE TABLE ") and d["prompt"].endswith(
        "\n\n-- Using valid SQLite, answer the following question for the tables provided above.\n-- "
        + d["question"] + "\n"), d["prompt"][-200:]
    assert d["completion"] == d["sql"] and d["sql_check"] == "ok", d
PY
check "presets: pair = question/sql, question has no completion, picard = PICARD's string, ddl ends with the question" $?
python3 - "$TMP/picard.stats" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["sql"]
assert s["checked"] == 1034 and s["compiled_raw"] == 1034 and s["compiled_clean"] == 1034, s
assert s["regressions"] == 0 and s["clean"]["ok"] == 1034, s
PY
check "spider dev: every raw and cleaned query compiles against its schema (stats 'sql')" $?

# 1b. The examples docs/CLEANING.md shows are what the serializations give
# (Spider dev #0 is concert_singer's).
python3 -c "import json, sys; print(json.dumps(json.load(open(sys.argv[1]))[0]))" "$SPIDER" >"$TMP/dev0.jsonl"
printf '{"prompt": "{schema:ddl}", "completion": "{schema:picard}"}' >"$TMP/ser.json"
C --schema "$TABLES" --template "$TMP/ser.json" "$TMP/dev0.jsonl" -o "$TMP/ser.out" &&
    python3 - "$TMP/ser.out" "$PS_ROOT/docs/CLEANING.md" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
doc = open(sys.argv[2], encoding="utf-8").read()
def example(title, start, end):
    sec = doc[doc.index(title):]
    sec = sec[sec.index(start):sec.index(end)]
    return "\n".join(l[4:] for l in sec.rstrip("\n").split("\n"))
ddl = example("### `{schema:ddl}`", "    CREATE TABLE stadium", "\n\nUnder selection")
picard = example("### `{schema:picard}`", "     | concert_singer", "\n\nWhen a prompt")
assert r["prompt"] == ddl, (r["prompt"], ddl)
# {schema:picard} is rendered without its leading space; the doc shows the string itself
assert " " + r["completion"] == picard, (r["completion"], picard)
PY
check "CLEANING.md's {schema:ddl} and {schema:picard} examples are the rendered output, byte for byte" $?

# 2. BIRD with its own tables file and a template file using {evidence}.
cat >"$TMP/evidence.json" <<'EOF'
{"prompt": "{schema:ddl}\n-- External knowledge: {evidence}\n-- {question}\n", "completion": "{sql}"}
EOF
C --schema "$F/bird/dev_tables.json" --template "$TMP/evidence.json" "$F/bird/dev.json" \
    -o "$TMP/bird.jsonl" --stats "$TMP/bird.stats"
[ $? -eq 0 ] && balanced "$TMP/bird.stats" && python3 - "$TMP/bird.jsonl" "$F/bird/dev.json" <<'PY'
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
raw = json.load(open(sys.argv[2]))
assert len(out) == len(raw) == 6
for o, r in zip(out, raw):
    assert "-- External knowledge: " + " ".join(r["evidence"].split()) + "\n" in o["prompt"], o
    assert o["completion"] == o["sql"] and o["db_id"] == r["db_id"] and o["sql_check"] == "ok", o
PY
check "bird dev: --template FILE with {evidence}, the SQL from BIRD's 'SQL', compiled ok" $?

# 3. SParC dialogues, one record per turn.
C --schema "$TABLES" --template picard --turns interaction "$F/sparc/dev.json" \
    -o "$TMP/sparc.jsonl" --stats "$TMP/sparc.stats"
[ $? -eq 0 ] && balanced "$TMP/sparc.stats" && python3 - "$TMP/sparc.jsonl" "$TMP/sparc.stats" <<'PY'
import json, sys
out = {json.loads(l)["id"]: json.loads(l) for l in open(sys.argv[1])}
st = json.load(open(sys.argv[2]))
assert st["records_in"] == 7 and st["dialogues"] == 3, st
r = out["dev.json:#1/2"]
# By hand, from the data and PICARD's cosql_get_input(utterances,
# serialized_schema, prefix=""): utterances[-1].strip() + " " +
# serialized_schema.strip() + " || " + " | ".join(reversed(earlier)),
# the schema being serialize_schema(...) for pets_1 (lower-cased names).
want = ("How heavy is the heaviest one? | pets_1 | student : stuid , lname , fname , age , sex , "
        "major , advisor , city_code | has_pet : stuid , petid | pets : petid , pettype , "
        "pet_age , weight || Only the dogs. | Show all pets.")
assert r["prompt"] == want, r["prompt"]
assert r["completion"].startswith("pets_1 | SELECT"), r
assert out["dev.json:#1/0"]["prompt"].endswith("weight"), out["dev.json:#1/0"]
PY
check "sparc --turns interaction: 7 turns of 3 dialogues, picard prompt = PICARD's cosql input" $?

# 4. A database the schemas do not hold.
C --schema "$F/bird/dev_tables.json" "$SPIDER" -o "$TMP/unk.jsonl" --rejects "$TMP/unk.rej" \
    --stats "$TMP/unk.stats"
[ $? -eq 0 ] && balanced "$TMP/unk.stats" && [ ! -s "$TMP/unk.jsonl" ] &&
    [ "$(grep -c '"reason":"unknown_database"' "$TMP/unk.rej")" -eq 1034 ] &&
    head -1 "$TMP/unk.rej" | grep -q "database 'concert_singer' is in none of the 3 databases"
check "unknown_database: every Spider record against BIRD's schema, named with the count" $?

# 4b. --db-field names the database field; a list falls back in order.
cat >"$TMP/dbf.jsonl" <<'EOF'
{"database": "concert_singer", "question": "How many singers?", "query": "SELECT count(*) FROM singer"}
{"db_id": "pets_1", "question": "How many pets?", "query": "SELECT count(*) FROM pets"}
{"database": "no_such_db", "question": "Anything?", "query": "SELECT 1"}
EOF
C --schema "$TABLES" --db-field database "$TMP/dbf.jsonl" -o "$TMP/dbf.out" --rejects "$TMP/dbf.rej" \
    --stats "$TMP/dbf.stats"
[ $? -eq 0 ] && balanced "$TMP/dbf.stats" && [ "$(grep -c . "$TMP/dbf.out")" -eq 1 ] &&
    grep -q '"db_id":"concert_singer","sql_check":"ok"' "$TMP/dbf.out" &&
    grep -q "\"reason\":\"missing_field\",\"detail\":\"no field 'database' naming the database\"" "$TMP/dbf.rej" &&
    grep -q "database 'no_such_db' is in none of the 166 databases" "$TMP/dbf.rej"
check "--db-field database: read from that field; a record without it is missing_field" $? "$TMP/dbf.rej"
C --schema "$TABLES" --db-field database,db_id "$TMP/dbf.jsonl" -o "$TMP/dbf2.out" --rejects "$TMP/dbf2.rej"
[ $? -eq 0 ] && [ "$(grep -c . "$TMP/dbf2.out")" -eq 2 ] && grep -q '"db_id":"pets_1"' "$TMP/dbf2.out" &&
    [ "$(grep -c unknown_database "$TMP/dbf2.rej")" -eq 1 ]
check "--db-field database,db_id: the first field a record has wins" $? "$TMP/dbf2.rej"

# 5. SQL that does not compile: counted, or rejected with --reject-invalid-sql.
cat >"$TMP/bad.jsonl" <<'EOF'
{"db_id": "concert_singer", "question": "Names?", "query": "SELECT nme FROM singer"}
{"db_id": "concert_singer", "question": "Count?", "query": "SELECT count(*) FROM singer"}
{"question": "No database?", "query": "SELECT 1"}
EOF
C --schema "$TABLES" "$TMP/bad.jsonl" -o "$TMP/bad.out" --rejects "$TMP/bad.rej" --stats "$TMP/bad.stats"
[ $? -eq 0 ] && balanced "$TMP/bad.stats" && [ "$(grep -c . "$TMP/bad.out")" -eq 2 ] &&
    grep -q '"sql_check":"no_such_column","sql_message":"no such column: nme"' "$TMP/bad.out" &&
    grep -q "\"reason\":\"missing_field\",\"detail\":\"no field 'db_id' or 'database_id'" "$TMP/bad.rej"
check "a query that does not compile is kept and marked; a record without its database: missing_field" $?
C --schema "$TABLES" --reject-invalid-sql "$TMP/bad.jsonl" -o "$TMP/bad2.out" --rejects "$TMP/bad2.rej" \
    --stats "$TMP/bad2.stats"
[ $? -eq 0 ] && balanced "$TMP/bad2.stats" && [ "$(grep -c . "$TMP/bad2.out")" -eq 1 ] &&
    grep -q '"reason":"sql_invalid","detail":"the SQL does not compile against database .concert_singer. (no_such_column): no such column: nme"' "$TMP/bad2.rej" &&
    python3 - "$TMP/bad2.stats" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["rejected_by_reason"]["sql_invalid"] == 1 and s["sql"]["clean"]["no_such_column"] == 1, s
assert s["sql"]["examples"]["no_such_column"] == ["bad.jsonl:1"], s["sql"]
PY
check "--reject-invalid-sql: sql_invalid with SQLite's message; stats count the class with an example id" $?

# 6. A rule that breaks SQL: compiled before cleaning, not after.
cat >"$TMP/rules.json" <<'EOF'
[{"name": "rename_t1", "field": "sql", "replace": "AS T1", "with": "AS X1"}]
EOF
C --schema "$TABLES" --rules "$TMP/rules.json" "$SPIDER" -o "$TMP/reg.jsonl" --stats "$TMP/reg.stats"
[ $? -eq 0 ] && balanced "$TMP/reg.stats" && python3 - "$TMP/reg.stats" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["sql"]
assert s["regressions"] > 100 and s["compiled_raw"] == 1034, s
assert s["compiled_clean"] == 1034 - s["regressions"] and len(s["regression_examples"]) == 3, s
assert s["clean"]["no_such_column"] > 0, s["clean"]
PY
check "a rule renaming 'AS T1' but not its references: counted as SQL regressions" $?
"$PAIRSHARD" clean --schema "$TABLES" --rules "$TMP/rules.json" "$SPIDER" -o "$TMP/reg2.jsonl" 2>"$TMP/reg2.err"
n=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['sql']['regressions'])" "$TMP/reg.stats")
grep -q "^pairshard clean: SQL: 1034 checked, 1034 compiled raw, $((1034 - n)) after cleaning, $n regressions$" "$TMP/reg2.err" &&
    grep -q "^pairshard clean:   no_such_column $n after cleaning, e.g. dev.json:#" "$TMP/reg2.err"
check "clean's summary: the SQL counts, and each failing class with its first record" $? "$TMP/reg2.err"

# 7. --databases DIR (schemas from the .sqlite files) and --execute.
mkdir -p "$TMP/dbs/tiny"
python3 - "$TMP/dbs/tiny/tiny.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE pets (id INTEGER PRIMARY KEY, kind TEXT, weight REAL)")
c.executemany("INSERT INTO pets VALUES (?, ?, ?)", [(1, "dog", 12.0), (2, "cat", 4.5)])
c.commit()
PY
cat >"$TMP/tiny.jsonl" <<'EOF'
{"db_id": "tiny", "question": "All dogs?", "sql": "SELECT * FROM pets WHERE kind = 'dog'", "note": "n1"}
{"db_id": "tiny", "question": "Any fish?", "sql": "SELECT * FROM pets WHERE kind = 'fish'", "note": null}
{"db_id": "tiny", "question": "Bad?", "sql": "SELECT nme FROM pets", "note": "n3"}
EOF
printf '{"prompt": "{note}: {question}", "completion": "{sql}"}' >"$TMP/note.json"
C --databases "$TMP/dbs" --execute --template "$TMP/note.json" "$TMP/tiny.jsonl" -o "$TMP/tiny.out" \
    --rejects "$TMP/tiny.rej" --stats "$TMP/tiny.stats"
[ $? -eq 0 ] && balanced "$TMP/tiny.stats" && python3 - "$TMP/tiny.stats" "$TMP/tiny.out" "$TMP/tiny.rej" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
e = s["sql"]["execute"]
assert e["executed"] == 2 and e["ok"] == 1 and e["error"] == 1 and e["rows"] == 1, e
out = [json.loads(l) for l in open(sys.argv[2])]
assert [o["prompt"] for o in out] == ["n1: All dogs?", "n3: Bad?"], out
rej = [json.loads(l) for l in open(sys.argv[3])]
assert len(rej) == 1 and rej[0]["reason"] == "missing_field" and "{note}" in rej[0]["detail"], rej
PY
check "--databases + --execute: ok/error counted with rows; a null {note} is missing_field naming it" $?

# 7b. {schema:ddl_values}: each column's example values from the .sqlite file,
# as SQL literals after the line's comma (quotes doubled, long text cut).
python3 - "$TMP/dbs/tiny/tiny.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT, pic BLOB)")
c.executemany("INSERT INTO notes VALUES (?, ?, ?)",
              [(1, "it's", b"x"), (2, "a" * 60, b"y"), (3, None, None), (4, "it's", None)])
c.commit()
PY
printf '{"prompt": "{schema:ddl_values}", "completion": "{sql}"}' >"$TMP/vals.json"
C --databases "$TMP/dbs" --template "$TMP/vals.json" "$TMP/tiny.jsonl" -o "$TMP/vals.out"
python3 - "$TMP/vals.out" <<'PY'
import json, sys
p = json.loads(open(sys.argv[1]).readline())["prompt"]
want = ("CREATE TABLE pets (\n"
        "  id INTEGER, -- example values: 1, 2\n"
        "  kind TEXT, -- example values: 'dog', 'cat'\n"
        "  weight REAL, -- example values: 12.0, 4.5\n"
        "  PRIMARY KEY (id)\n"
        ");\n\n"
        "CREATE TABLE notes (\n"
        "  id INTEGER, -- example values: 1, 2, 3\n"
        "  body TEXT, -- example values: 'it''s', '" + "a" * 40 + "...'\n"
        "  pic BLOB,\n"
        "  PRIMARY KEY (id)\n"
        ");")
print(p, file=sys.stderr)
sys.exit(0 if p == want else 1)
PY
check "{schema:ddl_values}: example values from the file after each column, quoted and cut" $?

# 8. CSV: the database and template fields are columns.
printf 'db_id,question,query,evidence\nconcert_singer,How many singers?,SELECT count(*) FROM singer,"count rows, all of them"\nconcert_singer,Names?,SELECT name FROM singer,\n' >"$TMP/t.csv"
printf '{"prompt": "{question} ({evidence}) {db_id}", "completion": "{sql}"}' >"$TMP/ev2.json"
C --schema "$TABLES" --template "$TMP/ev2.json" "$TMP/t.csv" -o "$TMP/csv.out" --stats "$TMP/csv.stats"
[ $? -eq 0 ] && balanced "$TMP/csv.stats" &&
    grep -q '"prompt":"How many singers? (count rows, all of them) concert_singer"' "$TMP/csv.out" &&
    grep -q '"prompt":"Names? () concert_singer"' "$TMP/csv.out"
check "CSV: db_id and {evidence} from columns (an empty cell renders empty)" $? "$TMP/csv.out"

# 9. The build reads dialogues through the same record calls, turn by turn, in order.
"$PAIRSHARD" build -q --vocab "$DATA/vocab/bert-base-uncased.vocab.txt" --turns interaction \
    --label-field database_id --no-gate --threads 3 -o "$TMP/bset" "$F/sparc/dev.json"
[ $? -eq 0 ] && python3 - "$TMP/bset/manifest.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["accounting"]
assert a["records_in"] == 7 == a["kept"] and a["dialogues"] == 3 and a["balanced"], a
PY
check "build --turns interaction: 7 turns of 3 dialogues, balanced" $?

# 10. Usage errors: exit 2 naming the file (and position), nothing written.
printf '[{"db_id": "x", ' >"$TMP/broken_tables.json"
C --schema "$TMP/broken_tables.json" "$SPIDER" -o "$TMP/u1.jsonl" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "broken_tables.json: not JSON: line 1, column" "$TMP/err" && [ ! -e "$TMP/u1.jsonl" ]
check "--schema FILE that does not parse: exit 2 naming FILE, line and column" $? "$TMP/err"
printf '{"prompt": "{question} {schema:ddl"}' >"$TMP/broken_template.json"
C --schema "$TABLES" --template "$TMP/broken_template.json" "$SPIDER" -o "$TMP/u2.jsonl" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "broken_template.json: prompt: the placeholder at offset 11 does not close" "$TMP/err" &&
    [ ! -e "$TMP/u2.jsonl" ]
check "--template FILE with an unclosed placeholder: exit 2 naming FILE and the offset" $? "$TMP/err"
# An empty style is no field named "schema:" that every record would lack.
for ph in schema history; do
    printf '{"prompt": "{question} {%s:}"}' $ph >"$TMP/empty_style.json"
    C --schema "$TABLES" --template "$TMP/empty_style.json" "$SPIDER" -o "$TMP/u4.jsonl" 2>"$TMP/err"
    [ $? -eq 2 ] && [ ! -e "$TMP/u4.jsonl" ] &&
        grep -q "empty_style.json: prompt: unknown placeholder {$ph:} at offset 11: no style after the colon ($ph styles: picard" "$TMP/err"
    check "--template FILE with {$ph:}: exit 2 naming the placeholder and the styles" $? "$TMP/err"
done
C --template picardd "$SPIDER" -o "$TMP/u3.jsonl" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "unknown template 'picardd' (presets: pair, question, picard, ddl" "$TMP/err"
check "--template with an unknown preset: exit 2 listing the presets" $? "$TMP/err"
C --template picard "$SPIDER" -o "$TMP/u4.jsonl" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "needs schemas" "$TMP/err"
check "--template picard without --schema: exit 2" $? "$TMP/err"
C --execute --schema "$TABLES" "$SPIDER" -o "$TMP/u5.jsonl" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "\-\-databases" "$TMP/err"
check "--execute without --databases: exit 2" $? "$TMP/err"
"$PAIRSHARD" clean --help | grep -q -- "--turn-question-field" &&
    "$PAIRSHARD" clean --help | grep -q -- "--reject-invalid-sql"
check "clean --help documents the text-to-SQL options" $?

done_testing
