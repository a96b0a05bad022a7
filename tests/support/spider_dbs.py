#!/usr/bin/env python3
"""Writes SQLite databases in Spider's layout, DIR/<db_id>/<db_id>.sqlite,
from a tables.json and the gold queries of a Spider-format JSON file, with
deterministic rows, so that gold SQL can be run in tests without Spider's
own databases (which are not in tests/data).

Each table of a database the queries use gets ROWS rows. A column's values
follow its Spider type: number and boolean columns take integers (the row
number, so that key and foreign-key columns join, cycled with the numbers
the database's gold queries name), text and time columns strings (the
string literals the database's gold queries name, cycled, so that their
WHERE clauses find rows, then "<column> <row>"). The same inputs give the
same files.

usage: spider_dbs.py TABLES.json QUERIES.json OUT_DIR [ROWS]
"""
import json
import os
import re
import sqlite3
import sys

STRING = re.compile(r"'((?:[^']|'')*)'|\"((?:[^\"]|\"\")*)\"")
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")


def literals(queries):
    """The string and number literals of a database's gold queries, in
    first-seen order (double-quoted strings too: Spider writes most of its
    literals so)."""
    strings, numbers = [], []
    for q in queries:
        for m in STRING.finditer(q):
            s = m.group(1) if m.group(1) is not None else m.group(2).replace('""', '"')
            s = s.replace("''", "'")
            if s not in strings:
                strings.append(s)
        for m in NUMBER.finditer(STRING.sub("''", q)):
            v = float(m.group(1)) if "." in m.group(1) else int(m.group(1))
            if v not in numbers:
                numbers.append(v)
    return strings, numbers


def quote(name):
    return '"' + name.replace('"', '""') + '"'


def make(db, queries, path, rows):
    strings, numbers = literals(queries)
    if os.path.exists(path):
        os.remove(path)
    c = sqlite3.connect(path)
    names = db["table_names_original"]
    cols = [[] for _ in names]
    for (t, name), ty in zip(db["column_names_original"], db["column_types"]):
        if t >= 0 and name.lower() not in [n.lower() for n, _ in cols[t]]:
            cols[t].append((name, ty))
    for t, table in enumerate(names):
        if table.lower() == "sqlite_sequence" or not cols[t]:
            continue
        decl = ", ".join(quote(n) + (" NUMERIC" if ty in ("number", "boolean") else " TEXT")
                         for n, ty in cols[t])
        c.execute("CREATE TABLE %s (%s)" % (quote(table), decl))
        data = []
        for r in range(rows):
            row = []
            for k, (n, ty) in enumerate(cols[t]):
                if ty in ("number", "boolean"):
                    # keys join on the row number; every third row a literal
                    row.append(numbers[(r + k) % len(numbers)] if numbers and r % 3 == 2
                               else r + 1)
                else:
                    i = r + 3 * k + t
                    row.append(strings[i % len(strings)] if strings and r % 2 == 0
                               else "%s %d" % (n, r + 1))
            data.append(row)
        c.executemany("INSERT INTO %s VALUES (%s)" % (quote(table), ",".join("?" * len(cols[t]))),
                      data)
    c.commit()
    c.close()


def main():
    tables, queries, out = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    by_db = {}
    for r in json.load(open(queries)):
        by_db.setdefault(r["db_id"], []).append(r["query"])
    for db in json.load(open(tables)):
        if db["db_id"] not in by_db:
            continue
        d = os.path.join(out, db["db_id"])
        os.makedirs(d, exist_ok=True)
        make(db, by_db[db["db_id"]], os.path.join(d, db["db_id"] + ".sqlite"), rows)


if __name__ == "__main__":
    main()
