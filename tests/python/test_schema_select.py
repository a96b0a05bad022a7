#!/usr/bin/env python3
"""Schema selection, checked from outside (argv: DIR INPUT KIND triples;
KIND spider or bird, suffixed _causal, _seq2seq or _pair by layout):

- serving without SQL: pairshard.Preprocessor(DIR), given only the
  question (and evidence) and database, gives the ids the set stores for
  the prompt, for every stored record;
- the ranking reads no SQL: the same record with its SQL replaced by
  garbage gets the same prompt;
- gold recall: report.json's counts equal a recomputation here from the
  gold SQL's identifiers (a tokenizer of our own, not the build's) and the
  tables and columns each served prompt declares (its DDL run through
  Python's sqlite3).

Prints TAP, and the measured recall on stderr."""
import json
import re
import sqlite3
import sys

import numpy as np

import pairshard
from tap import Tap

T = Tap()
check = T.check

# identifiers of a SQL text: quoted names and bare words, outside string
# literals and comments, case-folded
SQL_TOKEN = re.compile(r"""'(?:[^']|'')*'|--[^\n]*|/\*.*?\*/|"((?:[^"]|"")*)"|`((?:[^`]|``)*)`"""
                       r"""|\[([^\]]*)\]|([A-Za-z0-9_$\x80-\U0010ffff]+)""", re.S)


def identifiers(sql):
    out = set()
    for m in SQL_TOKEN.finditer(sql):
        q, b, br, w = m.groups()
        name = q.replace('""', '"') if q is not None else b.replace("``", "`") if b is not None \
            else br if br is not None else w
        if name is not None:
            out.add(name.lower())
    return out


def schema_of(tables):
    """db_id → (table names, [(table index, column name)])"""
    out = {}
    for d in json.load(open(tables)):
        names = d.get("table_names_original") or d["table_names"]
        cols = d.get("column_names_original") or d["column_names"]
        out[d["db_id"]] = (names, [(t, c) for t, c in cols if t >= 0])
    return out


def declared(prompt):
    """The tables and (table, column) pairs a DDL prompt declares."""
    db = sqlite3.connect(":memory:")
    for stmt in re.findall(r"^CREATE TABLE .*?^\);$", prompt, re.S | re.M):
        db.execute(stmt)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    cols = set()
    for t in tables:
        for r in db.execute("PRAGMA table_info(%s)" % json.dumps(t)):
            cols.add((t.lower(), r[1].lower()))
    return {t.lower() for t in tables}, cols


def prompt_ids(path):
    """Each stored record's prompt ids (causal: before prompt_lens; seq2seq:
    the source; pair: token type 0), by id."""
    out = {}
    for b in pairshard.Loader(path, batch_size=64, shuffle=False, as_torch=False, copy=True):
        ids = np.asarray(b["input_ids"])
        for i, rid in enumerate(b["ids"]):
            k = int(b["lengths"][i])
            if "prompt_lens" in b:
                k = int(b["prompt_lens"][i])
            elif "token_type_ids" in b and "target_lens" not in b:
                k = int((np.asarray(b["token_type_ids"])[i, :k] == 0).sum())
            out[rid] = ids[i, :k].tolist()
    return out


def fields(kind, rec):
    if kind.startswith("bird"):
        return dict(question=rec["question"], db_id=rec["db_id"], evidence=rec["evidence"]), rec["SQL"]
    return dict(question=rec["question"], db_id=rec["db_id"]), rec["query"]


def run(path, input_path, kind, tables):
    want = prompt_ids(path)
    recs = json.load(open(input_path))
    base = input_path.rsplit("/", 1)[-1]
    pre = pairshard.Preprocessor(path)
    schemas = schema_of(tables)
    bad, garbage_bad, served, shortened = [], [], 0, 0
    measured = tables_ok = cols_ok = 0
    per_db = {}  # db_id → [measured, tables kept, columns kept], for a set labelled by database
    for i, rec in enumerate(recs):
        rid = "%s:#%d" % (base, i)
        if rid not in want:
            continue
        f, sql = fields(kind, rec)
        got = pre.preprocess(**f)
        served += 1
        shortened += got["shortened"]
        if got["input_ids"].tolist() != want[rid]:
            bad.append("%s: %s != stored %s" % (rid, got["input_ids"][:8].tolist(), want[rid][:8]))
        junk = pre.preprocess(sql="SELECT zz FROM qq WHERE yy = 'zz'", **f)
        if junk["prompt"] != got["prompt"]:
            garbage_bad.append(rid)
        names, cols = schemas[rec["db_id"]]
        ids = identifiers(sql)
        gold_t = {n.lower() for n in names if n.lower() in ids}
        gold_c = {(names[t].lower(), c.lower()) for t, c in cols
                  if names[t].lower() in gold_t and c.lower() in ids}
        kept_t, kept_c = declared(got["prompt"])
        measured += 1
        tables_ok += gold_t <= kept_t
        cols_ok += gold_c <= kept_c
        d = per_db.setdefault(rec["db_id"], [0, 0, 0])
        d[0] += 1
        d[1] += gold_t <= kept_t
        d[2] += gold_c <= kept_c
    check("%s: Preprocessor without SQL gives the stored prompt ids for all %d records (%d with "
          "a selected schema)" % (kind, served, shortened),
          served == len(want) and not bad and shortened > 0, "; ".join(bad[:3]))
    check("%s: the prompt is the same with the SQL replaced by garbage (%d records)" % (kind, served),
          not garbage_bad, ", ".join(garbage_bad[:5]))
    sql = json.load(open(path + "/report.json"))["sql"]
    mine = (measured, tables_ok, cols_ok)
    theirs = (sql["gold_checked"], sql["gold_tables_kept"], sql["gold_columns_kept"])
    check("%s: report.json's gold recall %s equals the recomputation %s" % (kind, theirs, mine),
          mine == theirs)
    labels = sql["labels"]
    check("%s: per-label gold counts (%d labels) add up to the total" % (kind, len(labels)),
          sum(l["gold_checked"] for l in labels) + sql["unlabeled"]["gold_checked"] == measured
          and sum(l["gold_tables_kept"] for l in labels) + sql["unlabeled"]["gold_tables_kept"]
          == tables_ok)
    if labels:  # labelled by database: each label's counts are its database's
        theirs = {l["label"]: [l["gold_checked"], l["gold_tables_kept"], l["gold_columns_kept"]]
                  for l in labels}
        check("%s: each label's gold recall equals the recomputation for its database" % kind,
              theirs == per_db, str(sorted(set(theirs) ^ set(per_db)))[:200])
    print("# %s: %d of %d prompts selected (%.0f%%); every gold table kept in %.1f%%, every gold "
          "column in %.1f%%" % (kind, shortened, served, 100.0 * shortened / served,
                                100.0 * tables_ok / measured, 100.0 * cols_ok / measured),
          file=sys.stderr)


def main():
    args = sys.argv[1:]
    for j in range(0, len(args), 4):
        run(args[j], args[j + 1], args[j + 2], args[j + 3])
    sys.exit(T.done())


main()
