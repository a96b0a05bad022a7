#!/usr/bin/python3
"""The Python binding's two libraries (python/pairshard/_lib.py): a Loader
loads libpairshard-reader alone (none of libpairshard's SQLite, PCRE2,
utf8proc, nettle, LMDB), a Preprocessor libpairshard. Each case runs in a
fresh python3, whose /proc/self/maps says what was loaded:

- with $PAIRSHARD_CUDART naming a missing file (a host without libcudart):
  no libcudart is loaded, device=0 falls back to the host, and an epoch
  delivers every record of the set once;
- those batches equal the ones read through libpairshard (the full
  library exports the same reader) with the CUDA runtime where installed;
- a Preprocessor loads libpairshard, and works beside a Loader in one process.

Prints TAP. Environment as tests/python/test_loader.py's.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import Tap  # noqa: E402
from testenv import DATA, DEV, PAIRSHARD, ROOT  # noqa: E402

T = Tap()
TMP = tempfile.mkdtemp(prefix="pairshard-rl.")
SET = os.path.join(TMP, "set")
subprocess.run([PAIRSHARD, "build", "-q", "--vocab",
                os.path.join(DATA, "vocab", "bert-base-uncased.vocab.txt"), "--max-length", "128",
                "--shards", "2", "-o", SET, DEV], check=True)
RECORDS = json.load(open(os.path.join(SET, "manifest.json")))["totals"]["records"]

# The child: reads one epoch (or opens a Preprocessor) and prints JSON.
CHILD = r"""
import hashlib, json, os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "python"))
import pairshard
from pairshard import _lib as L
what, set_dir = sys.argv[2], sys.argv[3]
out = {}
if what in ("loader", "both"):
    ids, digests = [], []
    with pairshard.Loader(set_dir, batch_size=16, shuffle=False, rank=0, world_size=1,
                          device=0, as_torch=False) as ld:
        info = ld.info()
        for b in ld:
            ids += list(b["ids"])
            digests.append(hashlib.sha256(b["input_ids"].tobytes()).hexdigest())
    out.update(device=info["device"], ids=ids, digests=digests, reader=L.path("reader"))
if what in ("preprocessor", "both"):
    with pairshard.Preprocessor(set_dir) as pp:
        out["encoded"] = [int(x) for x in pp.encode("How many singers do we have?")["input_ids"]]
    out["full"] = L.path("full")
maps = open("/proc/self/maps").read().split("\n")
out["libs"] = sorted({os.path.basename(l.split()[-1]) for l in maps
                      if ".so" in l and l.split()[-1].startswith("/")})
print(json.dumps(out))
"""


def child(what, **env_changes):
    env = dict(os.environ)
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    p = subprocess.run([sys.executable, "-c", CHILD, ROOT, what, SET], env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def has(libs, prefix):
    return any(name.startswith(prefix) for name in libs)


HEAVY = ("libpairshard.so", "libsqlite3", "libpcre2", "libutf8proc", "libnettle", "liblmdb")
NOCUDA = os.path.join(TMP, "no-such-dir", "libcudart.so.13")

r, err = child("loader", PAIRSHARD_CUDART=NOCUDA, PAIRSHARD_READER_LIB=None)
T.check("a Loader reads the set with $PAIRSHARD_CUDART naming a missing file", r is not None, err)
if r is not None:
    T.check("it loaded libpairshard-reader (%s)" % r["reader"],
            os.path.basename(r["reader"]).startswith("libpairshard-reader.so")
            and has(r["libs"], "libpairshard-reader.so"), r["libs"])
    heavy = [n for n in r["libs"] if n.startswith(HEAVY)]
    T.check("and none of libpairshard, SQLite, PCRE2, utf8proc, nettle, LMDB", not heavy, heavy)
    T.check("no libcudart was loaded", not has(r["libs"], "libcudart"), r["libs"])
    T.check("device=0 without a CUDA runtime falls back to the host (info device -1)",
            r["device"] == -1, r["device"])
    T.check("the epoch delivered each of the set's %d records once" % RECORDS,
            len(r["ids"]) == RECORDS and len(set(r["ids"])) == RECORDS, len(r["ids"]))

full_lib = os.path.join(os.path.dirname(os.path.abspath(
    os.environ.get("PAIRSHARD_LIB") or os.path.join(ROOT, "build", "lib", "libpairshard.so"))),
    "libpairshard.so")
f, err = child("loader", PAIRSHARD_CUDART=None, PAIRSHARD_READER_LIB=full_lib)
T.check("a Loader through libpairshard (the runtime found as usual) reads the set", f is not None,
        err)
if r is not None and f is not None:
    T.check("the same batches, id for id and byte for byte",
            (r["ids"], r["digests"]) == (f["ids"], f["digests"]),
            "%d vs %d batches" % (len(r["digests"]), len(f["digests"])))

p, err = child("preprocessor")
T.check("a Preprocessor opens the set and encodes", p is not None and len(p["encoded"]) > 2, err)
if p is not None:
    T.check("it loaded libpairshard, not the reader library",
            has(p["libs"], "libpairshard.so") and not has(p["libs"], "libpairshard-reader"),
            p["libs"])
b, err = child("both", PAIRSHARD_CUDART=NOCUDA)
T.check("a Loader and a Preprocessor work in one process (both libraries loaded)",
        b is not None and r is not None and b["ids"] == r["ids"] and p is not None
        and b["encoded"] == p["encoded"] and has(b["libs"], "libpairshard-reader.so")
        and has(b["libs"], "libpairshard.so"), err)

shutil.rmtree(TMP, ignore_errors=True)
sys.exit(T.done())
