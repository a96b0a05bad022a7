"""The peer of bench_text2sql.sh: the schema step of a text-to-SQL pipeline
as a Python training repository writes it — PICARD's serialization of the
record's schema (from tables.json) and the gold SQL compiled against an
in-memory SQLite copy of that schema (Python's sqlite3, prepare only via
EXPLAIN), before and after a whitespace fold. Reads the corpus JSONL,
prints {"records", "seconds", "compiled"} as JSON on stderr; the time
excludes reading the corpus and loading tables.json.
Usage: text2sql_baseline.py TABLES.json CORPUS.jsonl"""
import json
import re
import sqlite3
import sys
import time

TYPES = {"number": "NUMERIC", "text": "TEXT", "time": "TEXT", "boolean": "INTEGER"}


def quote(name):
    return '"' + name.replace('"', '""') + '"'


def schemas(path):
    out = {}
    for db in json.load(open(path)):
        tables = db.get("table_names_original") or db["table_names"]
        cols = db.get("column_names_original") or db["column_names"]
        by_table = {i: [] for i in range(len(tables))}
        for k, (t, c) in enumerate(cols):
            if t >= 0:
                by_table[t].append((c, db["column_types"][k]))
        keep = [i for i, t in enumerate(tables) if not t.lower().startswith("sqlite_")]
        out[db["db_id"]] = (db["db_id"], [(tables[i], by_table[i]) for i in keep])
    return out


def picard(schema):
    db_id, tables = schema
    return " | " + db_id + "".join(
        " | " + t.lower() + " : " + " , ".join(c.lower() for c, _ in cols) for t, cols in tables)


def connect(schema, cache):
    db_id, tables = schema
    conn = cache.get(db_id)
    if conn is None:
        # No statement cache: the corpus repeats each query COPIES times
        # (bench/spider_corpus.py), and Python's cache (128 statements a
        # connection) would answer the repeats without compiling them,
        # while pairshard compiles every record's SQL.
        conn = sqlite3.connect(":memory:", cached_statements=0)
        for t, cols in tables:
            body = ", ".join(quote(c) + " " + TYPES.get(ty, "") for c, ty in cols) or "x"
            conn.execute("CREATE TABLE %s (%s)" % (quote(t), body))
        cache[db_id] = conn
    return conn


def compiles(conn, sql):
    try:
        conn.execute("EXPLAIN " + sql)
        return True
    except (sqlite3.Error, sqlite3.Warning):
        return False


def main():
    sch = schemas(sys.argv[1])
    recs = [json.loads(l) for l in open(sys.argv[2])]
    cache = {}
    t0 = time.perf_counter()
    ok = 0
    for r in recs:
        s = sch[r["db_id"]]
        prompt = r["question"].strip() + " " + picard(s).strip()
        conn = connect(s, cache)
        raw = r["query"]
        clean = re.sub(r"\s+", " ", raw).strip()
        ok += compiles(conn, raw) and compiles(conn, clean) and bool(prompt)
    secs = time.perf_counter() - t0
    json.dump({"records": len(recs), "seconds": secs, "compiled": ok}, sys.stderr)


main()
