"""The execution fingerprints of a set built with --execute, read through
the binding (pairshard.exec_fingerprints), against an independent recount:
Python's sqlite3 runs the raw gold query of a sample of records on the same
database files and counts its rows, which must be the stored rows_before
(and the status ok or empty to match).

usage: test_exec_fingerprints.py SET_DIR INPUT.json DATABASES_DIR"""
import json
import os
import sqlite3
import sys

import testenv  # noqa: F401  (puts python/ first on sys.path)
import pairshard
from tap import Tap


def main():
    set_dir, input_path, dbs = sys.argv[1:4]
    t = Tap()
    records = json.load(open(input_path))
    fps = list(pairshard.exec_fingerprints(set_dir))
    kept = json.load(open(os.path.join(set_dir, "manifest.json")))["accounting"]["kept"]
    ids = [f["id"] for f in fps]
    t.check("one fingerprint per stored record (%d, the manifest keeps %d), ids unique"
            % (len(fps), kept), len(fps) == kept and len(set(ids)) == len(ids))
    statuses = {f["after"]["status"] for f in fps} | {f["before"]["status"] for f in fps}
    t.check("statuses are named (%s)" % sorted(statuses),
            statuses <= {"ok", "empty", "error", "timeout", "no_database", "not_run"})
    sample = fps[::7]
    bad = []
    for f in sample:
        r = records[int(f["id"].rsplit("#", 1)[1])]
        path = os.path.join(dbs, r["db_id"], r["db_id"] + ".sqlite")
        c = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        try:
            rows = len(c.execute(r["query"]).fetchall())
            status = "ok" if rows else "empty"
        except sqlite3.Error:
            rows, status = 0, "error"
        c.close()
        if (status, rows) != (f["before"]["status"], f["before"]["rows"]):
            bad.append((f["id"], r["query"], status, rows, f["before"]))
    t.check("sqlite3 recounts the rows of %d sampled raw queries as stored" % len(sample),
            not bad, "\n".join(map(str, bad[:5])))
    same = [f for f in fps if not f["sql_changed"]]
    t.check("a query cleaning left as it was has the same fingerprint before and after "
            "(%d records)" % len(same), same and all(f["before"] == f["after"] for f in same))
    try:
        list(pairshard.exec_fingerprints(os.path.join(set_dir, "nowhere")))
        t.check("a missing set raises PairshardError", False)
    except pairshard.PairshardError as e:
        t.check("a missing set raises PairshardError (%s)" % e.name, e.code < 0)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
