#!/usr/bin/python3
"""Inputs that used to hang a build or be read wrong.

  slow tokenizer regexes: a copy of GPT-2's tokenizer.json whose
      pre-tokenizer is a Split on `a*a*a*a*c|.` (polynomial: each match
      attempt backtracks a few million steps, one attempt per character)
      or `(a+)+$` (exponential), built over three records of
      ("a" * 300 + "b") * 200 and five ordinary ones: within a bounded
      time, exit 0, the three rejected as tokenizer_error naming the
      pattern's JSON path (rejects.jsonl, stats), the five kept, the
      accounting balanced; the Python Preprocessor raises RejectedError
      (tokenizer_error) for such a question and encodes an ordinary one.
      Before: 87 s a record and no limit for the first pattern, a bare
      "pre-tokenizer failed" stopping the whole build for the second.
  WAL databases: a --databases file in WAL mode whose table `walonly`
      was created after the last checkpoint (it lives only in the -wal
      file; python3's sqlite3, no checkpoint on close), in a folder made
      read-only: clean's SQL check compiles against it, --execute runs
      on it, {schema:ddl_values} shows its example values; no file is
      created in the folder (no -shm) and none changes; a -wal that is a
      FIFO is refused at once, naming it; the -wal beside an empty
      database file is not removed (SQLite's open would). Controls: SQLite's own
      read-only open (mode=ro, on a copy) sees the table and an
      immutable open does not. Before: no_such_table, as immutable=1
      ignored the log.
"""
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import faultlib
from faultlib import DATA, PAIRSHARD, ROOT, finish, fresh_dir, note, run

cases = 0


def tap(ok, desc):
    global cases
    cases += 1
    return faultlib.tap(ok, desc)


def jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


# ---- slow tokenizer regexes ----------------------------------------------------
base = fresh_dir("inputs-regex")
with open(os.path.join(DATA, "tokenizers", "gpt2.tokenizer.json")) as f:
    gpt2 = json.load(f)
SLOW = ("a" * 300 + "b") * 200
corpus = os.path.join(base, "in.jsonl")
with open(corpus, "w") as f:
    for i in range(3):
        f.write(json.dumps({"question": SLOW, "query": "SELECT %d" % i, "db_id": "x"}) + "\n")
    for i in range(5):
        f.write(json.dumps({"question": "How many singers are there in stadium %d?" % i,
                            "query": "SELECT count(*) FROM singer", "db_id": "x"}) + "\n")


def tokenizer_with(pattern):
    t = dict(gpt2)
    t["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]}
    path = os.path.join(base, "split-%d.tokenizer.json" % len(pattern))
    with open(path, "w") as f:
        json.dump(t, f)
    return path


LIMIT = 60  # seconds; the first pattern took 87 s for one record before
COMPONENT = "pre_tokenizer.pretokenizers[0].pattern"
built = {}
for what, pattern in (("polynomial a*a*a*a*c|.", "a*a*a*a*c|."),
                      ("exponential (a+)+$", "(a+)+$")):
    tj = tokenizer_with(pattern)
    out = os.path.join(base, "set-%d" % len(pattern))
    r = run([PAIRSHARD, "build", "-q", "--tokenizer-json", tj, "--label-field", "db_id",
             "--no-gate", "--threads", "2", "-o", out, corpus], timeout=LIMIT)
    rej, acct = [], {}
    if r.rc == 0:
        rej = jsonl(os.path.join(out, "rejects.jsonl"))
        with open(os.path.join(out, "manifest.json")) as f:
            acct = json.load(f)["accounting"]
        built[pattern] = out
    named = [x for x in rej if x.get("reason") == "tokenizer_error" and
             COMPONENT in (x.get("detail") or "")]
    ok = (not r.timed_out and r.rc == 0 and len(rej) == 3 and len(named) == 3 and
          sorted(x["id"] for x in rej) == ["in.jsonl:%d" % i for i in (1, 2, 3)] and
          acct.get("records_in") == 8 and acct.get("kept") == 5 and
          acct.get("rejected") == 3 and acct.get("balanced") is True and
          acct.get("rejected_by_reason", {}).get("tokenizer_error") == 3)
    tap(ok, "Split %s on 3 slow records: %s in %.1fs, %d rejected as tokenizer_error naming %s, "
        "kept %s of 8" % (what, r.why(), r.secs, len(named), COMPONENT, acct.get("kept")))
    if not ok:
        note(r.err.strip()[-400:])
        note(json.dumps(rej)[:400])

# Control: the same records with GPT-2's own pre-tokenizer are all kept.
out = os.path.join(base, "set-gpt2")
r = run([PAIRSHARD, "build", "-q", "--tokenizer-json",
         os.path.join(DATA, "tokenizers", "gpt2.tokenizer.json"), "--label-field", "db_id",
         "--no-gate", "-o", out, corpus], timeout=LIMIT)
kept = None
if r.rc == 0:
    with open(os.path.join(out, "manifest.json")) as f:
        kept = json.load(f)["accounting"]["kept"]
tap(r.rc == 0 and kept == 8, "control: GPT-2's own pre-tokenizer keeps all 8 records (%s, "
    "kept %s)" % (r.why(), kept))

# The Preprocessor of such a set rejects the same question the same way.
LIB_DIR = os.path.join(ROOT, "python")
CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
import pairshard
p = pairshard.Preprocessor(sys.argv[2])
ids = p.encode("How many singers are there in stadium 1?", sql="SELECT 1")
print("ordinary", len(ids["input_ids"]))
try:
    p.encode(sys.argv[3], sql="SELECT 1")
    print("slow kept")
except pairshard.RejectedError as e:
    print("slow", e.reason, e.detail)
"""
if "a*a*a*a*c|." in built:
    env = dict(os.environ, PAIRSHARD_LIB=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(PAIRSHARD))), "lib", "libpairshard.so"))
    t0 = time.monotonic()
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, LIB_DIR, built["a*a*a*a*c|."], SLOW],
                           capture_output=True, text=True, timeout=LIMIT, env=env)
        outp, errp, secs = p.stdout, p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        outp, errp, secs = "", "timed out", time.monotonic() - t0
    ok = "ordinary " in outp and ("slow tokenizer_error" in outp and COMPONENT in outp)
    tap(ok, "Preprocessor: the slow question raises RejectedError(tokenizer_error) naming the "
        "pattern, an ordinary one encodes (%.1fs)" % secs)
    if not ok:
        note((outp + errp).strip()[-400:])
else:
    tap(False, "Preprocessor: no set was built to serve from")

# ---- WAL databases -------------------------------------------------------------
wbase = fresh_dir("inputs-wal")
dbs = os.path.join(wbase, "dbs")
folder = os.path.join(dbs, "w")
os.makedirs(folder)
db = os.path.join(folder, "w.sqlite")
MAKE = r"""
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA journal_mode=WAL")
c.execute("PRAGMA wal_autocheckpoint=0")
c.execute("CREATE TABLE base (id INTEGER PRIMARY KEY, name TEXT)")
c.commit()
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
c.execute("CREATE TABLE walonly (id INTEGER PRIMARY KEY, label TEXT)")
c.executemany("INSERT INTO walonly VALUES (?, ?)", [(i, "l%d" % i) for i in range(5)])
c.commit()
os._exit(0)  # no close: a close would checkpoint the log into the file
"""
subprocess.run([sys.executable, "-c", MAKE, db], check=True)
os.unlink(db + "-shm")  # as a copy of the files, or a crashed writer's, leaves them


def has_walonly(uri):
    c = sqlite3.connect(uri, uri=True)
    try:
        return c.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'walonly'").fetchone()[0]
    finally:
        c.close()


ctl = fresh_dir("inputs-wal-control")
for name in ("w.sqlite", "w.sqlite-wal"):
    shutil.copy(os.path.join(folder, name), os.path.join(ctl, name))
seen_ro = has_walonly("file:%s/w.sqlite?mode=ro" % ctl)
seen_imm = has_walonly("file:%s/w.sqlite?mode=ro&immutable=1" % ctl)
tap(seen_ro == 1 and seen_imm == 0,
    "control: SQLite's own read-only open sees the table that lives only in the -wal file "
    "(%d), an immutable open does not (%d)" % (seen_ro, seen_imm))


def snapshot():
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


before = snapshot()
records = os.path.join(wbase, "in.jsonl")
with open(records, "w") as f:
    f.write(json.dumps({"db_id": "w", "question": "How many labels?",
                        "sql": "SELECT count(*) FROM walonly"}) + "\n")
    f.write(json.dumps({"db_id": "w", "question": "Names?", "sql": "SELECT name FROM base"}) + "\n")
vals = os.path.join(wbase, "vals.json")
with open(vals, "w") as f:
    json.dump({"prompt": "{schema:ddl_values} {question}", "completion": "{sql}"}, f)
stats = os.path.join(wbase, "stats.json")
os.chmod(folder, 0o555)
os.chmod(dbs, 0o555)
try:
    r1 = run([PAIRSHARD, "clean", "-q", "--databases", dbs, "--reject-invalid-sql", "--execute",
              "-o", os.path.join(wbase, "out.jsonl"), "--stats", stats, records], timeout=60)
    r2 = run([PAIRSHARD, "clean", "-q", "--databases", dbs, "--template", vals,
              "-o", os.path.join(wbase, "vals.jsonl"), records], timeout=60)
finally:
    os.chmod(dbs, 0o755)
    os.chmod(folder, 0o755)
after = snapshot()

sql = {}
if r1.rc == 0:
    with open(stats) as f:
        sql = json.load(f).get("sql", {})
clean_ok = sql.get("clean", {}).get("ok")
no_table = sql.get("clean", {}).get("no_such_table")
tap(r1.rc == 0 and clean_ok == 2 and no_table == 0,
    "WAL database, read-only folder: both SQLs compile against it (%s; ok %s, no_such_table %s)"
    % (r1.why(), clean_ok, no_table))
if r1.rc != 0:
    note(r1.err.strip()[-300:])
ex = sql.get("execute", {})
tap(r1.rc == 0 and ex.get("executed") == 2 and ex.get("error") == 0 and ex.get("ok") == 1 and
    ex.get("rows") == 1,
    "WAL database: --execute runs both, the count over the log's table returns its row (%s)"
    % json.dumps(ex))
prompt = ""
if r2.rc == 0:
    prompt = jsonl(os.path.join(wbase, "vals.jsonl"))[0]["prompt"]
tap(r2.rc == 0 and "CREATE TABLE walonly" in prompt and
    "label TEXT, -- example values: 'l0', 'l1', 'l2'" in prompt,
    "WAL database: {schema:ddl_values} shows the log's table with its example values (%s)"
    % r2.why())
if r2.rc != 0 or "walonly" not in prompt:
    note((r2.err + prompt).strip()[-300:])
tap(before == after and sorted(after) == ["w.sqlite", "w.sqlite-wal"],
    "WAL database: nothing created or changed in its folder (before %s, after %s)"
    % (sorted(before), sorted(after)))

# A -wal that is a FIFO: refused at once (SQLite would wait for a writer).
fifo_dbs = os.path.join(wbase, "fifo-dbs")
os.makedirs(os.path.join(fifo_dbs, "w"))
shutil.copy(db, os.path.join(fifo_dbs, "w", "w.sqlite"))
os.mkfifo(os.path.join(fifo_dbs, "w", "w.sqlite-wal"))
r = run([PAIRSHARD, "clean", "-q", "--databases", fifo_dbs, "--reject-invalid-sql",
         "-o", os.path.join(wbase, "fifo.jsonl"), records], timeout=15)
tap(not r.timed_out and r.rc == 2 and "w.sqlite-wal" in r.err and "not a regular file" in r.err,
    "a -wal that is a FIFO: exit 2 at once, naming it (%s, %.1fs)" % (r.why(), r.secs))
if r.rc != 2:
    note(r.err.strip()[-300:])

# An empty database file beside a -wal (a copy caught halfway): SQLite
# deletes such a log when it opens the file; it must survive pairshard.
empty_dbs = os.path.join(wbase, "empty-dbs")
os.makedirs(os.path.join(empty_dbs, "w"))
open(os.path.join(empty_dbs, "w", "w.sqlite"), "wb").close()
shutil.copy(db + "-wal", os.path.join(empty_dbs, "w", "w.sqlite-wal"))
r = run([PAIRSHARD, "clean", "-q", "--databases", empty_dbs, "--reject-invalid-sql",
         "-o", os.path.join(wbase, "empty.jsonl"), records], timeout=15)
left = sorted(os.listdir(os.path.join(empty_dbs, "w")))
tap(not r.timed_out and not r.crashed() and left == ["w.sqlite", "w.sqlite-wal"],
    "an empty database file beside a -wal: the log is left as it was (%s; files %s)"
    % (r.why(), left))

print("# TOTAL inputs cases=%d passed=%d" % (cases, cases - faultlib.failures), flush=True)
finish()
