#!/usr/bin/env python3
"""Independent reference for pairshard's SQL compile check (schema/compile.c).

    sql_compile_ref.py TABLES DATA [SQL_FIELD [DB_FIELD]]

Builds each database of a Spider-format tables.json in memory with Python's
sqlite3 module and its own CREATE TABLE code, then compiles every record's
SQL without running it (EXPLAIN: SQLite prepares the statement and lists its
program; no table is read), and classifies SQLite's message. Output as
tests/tools/sql_compile.c prints it: "count CLASS N" per class, then
"fail INDEX CLASS MESSAGE" per record that does not compile. On stderr, the
compile time per query.

What it shares with pairshard by design (the schema semantics, not code):
tables named sqlite_* are skipped; names SQLite would call duplicates (ASCII
case folded) are created once; a table without columns gets one column named
"" (empty). A trailing run of ';' and white space is not a second statement
(Python's own check counts ";;" as two).
"""
import json
import sqlite3
import sys
import time

CLASSES = ["ok", "syntax", "no_such_table", "no_such_column", "ambiguous_column",
           "no_such_function", "multiple_statements", "other"]


def quote(name):
    return '"' + name.replace('"', '""') + '"'


def create_db(d):
    tables = d.get("table_names_original", d.get("table_names"))
    columns = d.get("column_names_original", d.get("column_names"))
    conn = sqlite3.connect(":memory:")
    seen_tables = set()
    for ti, t in enumerate(tables):
        if t.lower().startswith("sqlite_") or t.lower() in seen_tables:
            continue
        seen_tables.add(t.lower())
        cols, seen = [], set()
        for c_t, c in columns:
            if c_t == ti and c.lower() not in seen:
                seen.add(c.lower())
                cols.append(quote(c))
        conn.execute("CREATE TABLE %s (%s)" % (quote(t), ", ".join(cols) or '""'))
    return conn


def classify(msg):
    if "syntax error" in msg or msg.startswith("incomplete input") or \
            msg.startswith("unrecognized token"):
        return "syntax"
    for prefix, cls in (("no such table", "no_such_table"), ("no such column", "no_such_column"),
                        ("ambiguous column name", "ambiguous_column"),
                        ("no such function", "no_such_function"),
                        ("wrong number of arguments", "no_such_function")):
        if msg.startswith(prefix):
            return cls
    return "other"


def compile_one(conn, sql):
    body = sql.rstrip(" \t\r\n\f\v;")
    if not body.strip():
        return "syntax", "empty statement"
    try:
        conn.execute("EXPLAIN " + body).fetchall()
    except sqlite3.ProgrammingError as e:
        if "one statement at a time" in str(e):
            return "multiple_statements", "more than one statement"
        return classify(str(e)), str(e)
    except (sqlite3.OperationalError, sqlite3.Warning) as e:
        if "one statement at a time" in str(e):
            return "multiple_statements", "more than one statement"
        return classify(str(e)), str(e)
    return "ok", ""


def main():
    tables_path, data_path = sys.argv[1], sys.argv[2]
    sql_field = sys.argv[3] if len(sys.argv) > 3 else "query"
    db_field = sys.argv[4] if len(sys.argv) > 4 else "db_id"
    schemas = {d["db_id"]: d for d in json.load(open(tables_path, encoding="utf-8"))}
    data = json.load(open(data_path, encoding="utf-8"))
    conns, results = {}, []
    t0 = time.perf_counter()
    for r in data:
        db = r[db_field]
        if db not in conns:
            conns[db] = create_db(schemas[db])
        results.append(compile_one(conns[db], r[sql_field]))
    dt = time.perf_counter() - t0
    for c in CLASSES:
        print("count %s %d" % (c, sum(1 for cls, _ in results if cls == c)))
    for i, (cls, msg) in enumerate(results):
        if cls != "ok":
            print("fail %d %s %s" % (i, cls, msg))
    print("python sqlite3 %s: compile %.1f us/query over %d queries (first use of a database "
          "included)" % (sqlite3.sqlite_version, dt * 1e6 / max(len(data), 1), len(data)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
