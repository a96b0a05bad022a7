#!/usr/bin/python3
"""Weighted reading through the Python binding (python/pairshard): three
sets built from Spider (dev and two slices of train), joined by `pairshard
merge` into one set of three sources and also read as a list of sets, with
weights {"spider": 1.0, "bird": 2.0, "sparc": 0.5}. Over 2 ranks and 3
epochs: each source's count is exactly round(w * n), every spider record
comes once an epoch and every bird record twice, the sparc records are
distinct, both ranks take the same steps; a Loader resumed mid-epoch from
state_dict() yields the very batches the first went on to yield. Trains
nothing.

Prints TAP. Environment as test_loader.py.
"""

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testenv import DATA, DEV, PAIRSHARD  # noqa: E402
from tap import Tap  # noqa: E402

import pairshard  # noqa: E402

VOCAB = os.path.join(DATA, "vocab", "bert-base-uncased.vocab.txt")
W = {"spider": 1.0, "bird": 2.0, "sparc": 0.5}


def build(tmp):
    train = json.load(open(os.path.join(DATA, "spider", "train.json")))
    slices = {"bird": train[:700], "sparc": train[3000:3461]}
    dirs = []
    for name in ("spider", "bird", "sparc"):
        src = DEV
        if name in slices:
            src = os.path.join(tmp, name + ".json")
            json.dump(slices[name], open(src, "w"))
        out = os.path.join(tmp, name)
        subprocess.check_call([PAIRSHARD, "build", "-q", "--no-gate", "--vocab", VOCAB,
                               "--label-field", "db_id", "--max-length", "128",
                               "--block-records", "16", "--shards", "2", "-o", out, src])
        dirs.append(out)
    mix = os.path.join(tmp, "mix")
    subprocess.check_call([PAIRSHARD, "merge", "-q", "--no-gate", "-o", mix] + dirs)
    return dirs, mix


def epoch(path, rank, e):
    ld = pairshard.Loader(path, batch_size=16, rank=rank, world_size=2, seed=3, epoch=e,
                          weights=W, as_torch=False)
    names = ld.sources
    recs = [(names[int(s)], i) for b in ld for s, i in zip(b["sources"], b["ids"])]
    steps = len(ld)
    sizes = ld.source_records()
    ld.close()
    return recs, steps, sizes


def check_epochs(t, path, what):
    for e in range(3):
        recs, steps = [], []
        for rank in (0, 1):
            r, s, sizes = epoch(path, rank, e)
            recs += r
            steps.append(s)
        t.check("%s epoch %d: both ranks take %d steps" % (what, e, steps[0]),
                steps[0] == steps[1], steps)
        per = collections.Counter(name for name, _ in recs)
        want = {n: int(W[n] * sizes[n] + 0.5) for n in W}
        t.check("%s epoch %d: per-source counts are round(w * n): %s" % (what, e, dict(per)),
                dict(per) == want, "want %s" % want)
        times = collections.Counter(recs)
        ok = all(times[k] == {"spider": 1, "bird": 2, "sparc": 1}[k[0]] for k in times)
        t.check("%s epoch %d: spider once, bird twice, sparc distinct" % (what, e),
                ok and len([k for k in times if k[0] == "spider"]) == sizes["spider"])


def check_resume(t, mix):
    def opened(**kw):
        return pairshard.Loader(mix, batch_size=16, rank=1, world_size=2, seed=3, epoch=2,
                                weights=W, as_torch=False, **kw)
    full = [(list(b["ids"]), b["sources"].tolist()) for b in opened()]
    ld = opened()
    it = iter(ld)
    k = len(full) // 2
    for _ in range(k):
        next(it)
    st = ld.state_dict()
    ld.close()
    again = opened()
    again.load_state_dict(st)
    rest = [(list(b["ids"]), b["sources"].tolist()) for b in again]
    again.close()
    t.check("a Loader resumed after %d of %d batches yields the same rest" % (k, len(full)),
            rest == full[k:], "%d batches after resume" % len(rest))


def main():
    t = Tap()
    tmp = tempfile.mkdtemp(prefix="ps-pymix-")
    try:
        dirs, mix = build(tmp)
        ld = pairshard.Loader(mix, weights=W, as_torch=False)
        t.check("the joined set's sources are named after its sets",
                ld.sources == ["spider", "bird", "sparc"], ld.sources)
        ld.close()
        check_epochs(t, mix, "joined set")
        check_epochs(t, dirs, "list of sets")
        check_resume(t, mix)
        try:
            pairshard.Loader(mix, weights={"cosql": 1.0}, as_torch=False)
            t.check("an unknown source name is refused", False)
        except pairshard.PairshardError as e:
            t.check("an unknown source name is refused, naming it", "cosql" in str(e), e)
        try:
            pairshard.Loader(mix, weights={"bird": -1}, as_torch=False)
            t.check("a negative weight is refused", False)
        except ValueError as e:
            t.check("a negative weight is refused", "bird" in str(e), e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
