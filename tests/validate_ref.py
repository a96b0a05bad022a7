#!/usr/bin/python3
"""Reference values for pairshard's validation statistics, computed by scipy.

Usage: validate_ref.py SPIDER_DIR OUT.json [CACHE_DIR]

Writes the inputs and scipy's answers; tests/test_validate_scipy.c
(test_scipy_reference, run with PS_VALIDATE_REF=OUT.json) recomputes every
value with validate/stat_math.c and requires a relative error <= 1e-9.

With CACHE_DIR (make test passes $PS_BUILD/cache) the answers are kept
there under a key of everything they depend on: this script's bytes,
Spider's train.json and dev.json, and the Python, numpy and scipy versions.
scipy takes about 12 s over them, and both the unit test and
tests/cli/validate_scipy.sh want them, so a make test computes them once;
a change to any input is a new key, so a cached answer is never stale. A
lock makes a second caller wait for the first rather than compute too.

  ks      two samples of integer lengths (generated, and Spider's question and
          sql lengths): scipy.stats.ks_2samp(method='asymp') on the values
          rounded down to their fixed bin's lower edge (what the histograms
          hold; identity below 256)
  kstwo   scipy.stats.kstwo.sf(x, n) on a grid (the p-value's distribution)
  chi2    count vectors (generated, and Spider db_id counts):
          scipy.stats.chi2_contingency(correction=False) on the table without
          all-zero rows; Cramer's V (scipy.stats.contingency.association,
          method='cramer', correction=False); Jensen-Shannon distance
          (scipy.spatial.distance.jensenshannon, base=2); PSI as
          sum(rel_entr(q, p) + rel_entr(p, q)) with zero shares set to eps
  chi2sf  scipy.stats.chi2.sf(x, df) on a grid
"""
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys

import numpy as np
from scipy import stats
from scipy.spatial.distance import jensenshannon
from scipy.special import rel_entr
from scipy.stats.contingency import association


def bin_lo(v):
    """Lower edge of v's fixed bin (validate/stat_math.h)."""
    if v < 256:
        return v
    if v >= 65536:
        return 65536
    k = v.bit_length() - 1
    sub = (v >> (k - 4)) & 15
    return (1 << k) + sub * (1 << (k - 4))


def ks_case(x, y):
    x = [int(v) for v in x]
    y = [int(v) for v in y]
    bx = np.array([bin_lo(v) for v in x], dtype=float)
    by = np.array([bin_lo(v) for v in y], dtype=float)
    r = stats.ks_2samp(bx, by, method="asymp")
    return {"x": x, "y": y, "d": float(r.statistic), "p": float(r.pvalue)}


def chi2_case(a, b, eps=1e-4):
    a = np.array(a, dtype=float)
    b = np.array(b, dtype=float)
    keep = (a + b) > 0
    table = np.vstack([a[keep], b[keep]]).T
    chi2, p, dof, _ = stats.chi2_contingency(table, correction=False)
    v = association(table.astype(np.int64), method="cramer", correction=False)
    js = jensenshannon(a, b, base=2)
    pa = a / a.sum()
    pb = b / b.sum()
    m = (pa > 0) | (pb > 0)
    pa, pb = pa[m], pb[m]
    pa = np.where(pa == 0, eps, pa)
    pb = np.where(pb == 0, eps, pb)
    psi = float(np.sum(rel_entr(pb, pa) + rel_entr(pa, pb)))
    return {"a": [int(t) for t in a], "b": [int(t) for t in b], "chi2": float(chi2),
            "p": float(p), "dof": int(dof), "v": float(v), "js": float(js), "eps": eps,
            "psi": psi}


def cache_key(spider):
    """Hex digest of everything the answers depend on (see above)."""
    import scipy
    h = hashlib.sha256()
    parts = [open(__file__, "rb").read(), open(f"{spider}/train.json", "rb").read(),
             open(f"{spider}/dev.json", "rb").read(), sys.version.encode(),
             np.__version__.encode(), scipy.__version__.encode()]
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def cached(spider, out, cache_dir):
    """Copies the cached answers to out, computing them first on a miss."""
    os.makedirs(cache_dir, exist_ok=True)
    path = os.path.join(cache_dir, "validate_ref-%s.json" % cache_key(spider)[:32])
    with open(os.path.join(cache_dir, "validate_ref.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path) as f:
                json.load(f)  # a whole file, or computed again
            print("validate_ref: the answers for these inputs from %s" % path, file=sys.stderr)
        except (OSError, ValueError):
            compute(spider, path + ".tmp")
            os.replace(path + ".tmp", path)
    shutil.copyfile(path, out)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    spider, out = sys.argv[1], sys.argv[2]
    if len(sys.argv) == 4:
        cached(spider, out, sys.argv[3])
    else:
        compute(spider, out)


def compute(spider, out):
    rng = np.random.default_rng(20260402)
    ks = []
    # generated: sizes from the minimum sample to tens of thousands, shifts
    # from none to large (every branch of the Kolmogorov distribution)
    for n1, n2 in [(100, 100), (100, 180), (150, 1000), (300, 290), (1000, 1000),
                   (5000, 7000), (20000, 30000), (60000, 250000)]:
        for shift in [0, 1, 3, 10, 40]:
            x = rng.poisson(60, n1)
            y = rng.poisson(60 + shift, n2)
            ks.append(ks_case(x, y))
    # widened bins: long lengths
    for n1, n2 in [(200, 300), (4000, 3000)]:
        for scale in [1.0, 1.1, 1.5]:
            x = rng.lognormal(6, 0.8, n1).astype(int)
            y = (rng.lognormal(6, 0.8, n2) * scale).astype(int)
            ks.append(ks_case(x, y))
    # small samples with large D (exact-distribution branches)
    for n in [100, 120, 140]:
        ks.append(ks_case(rng.poisson(30, n), rng.poisson(45, n)))
        ks.append(ks_case(rng.integers(0, 50, n), rng.integers(40, 90, n)))

    # real data: Spider train vs dev, raw vs whitespace-folded
    train = json.load(open(f"{spider}/train.json"))
    dev = json.load(open(f"{spider}/dev.json"))
    for field in ["question", "query"]:
        tl = [len(r[field]) for r in train]
        dl = [len(r[field]) for r in dev]
        ks.append(ks_case(tl, dl))
        folded = [len(" ".join(r[field].split())) for r in train + dev]
        ks.append(ks_case(tl + dl, folded))
        by_db = {}
        for r in train:
            by_db.setdefault(r["db_id"], []).append(len(r[field]))
        big = sorted(by_db, key=lambda k: (-len(by_db[k]), k))[:4]
        ks.append(ks_case(by_db[big[0]], by_db[big[1]]))
        ks.append(ks_case(by_db[big[2]], by_db[big[3]]))

    kstwo = []
    for n in [1, 2, 5, 10, 50, 100, 139, 140, 141, 300, 1000, 3500, 10000, 50000, 100000,
              100001, 1000000, 5000000]:
        for x in list(np.linspace(0.3 / n, 0.9, 25)) + [0.5 / n, 1.0 / n, 0.001, 0.003, 0.01,
                                                         0.02, 0.05, 0.2, 0.6]:
            x = float(x)
            kstwo.append([n, x, float(stats.kstwo.sf(x, n))])

    chi2 = []
    for k in [2, 3, 5, 20, 160]:
        for eff in [0.0, 0.05, 0.3]:
            base = rng.integers(1, 200, k)
            cur = np.maximum(0, (base * (1 + eff * rng.standard_normal(k))).round()).astype(int)
            if cur.sum() == 0:
                cur[0] = 1
            chi2.append(chi2_case(base, cur))
    a = rng.integers(0, 50, 40)
    a[:3] = 0
    b = rng.integers(0, 50, 40)
    b[2:6] = 0
    chi2.append(chi2_case(a, b))
    dbs = sorted({r["db_id"] for r in train + dev})
    tc = [sum(1 for r in train if r["db_id"] == d) for d in dbs]
    dc = [sum(1 for r in dev if r["db_id"] == d) for d in dbs]
    chi2.append(chi2_case(tc, dc))  # disjoint databases: the largest shift there is
    wine = [sum(1 for r in train + dev if r["db_id"] == d and not (
        d == "wine_1" and re.search(r"(?i)\bwines?\b", r["question"]))) for d in dbs]
    allc = [t + u for t, u in zip(tc, dc)]
    chi2.append(chi2_case(allc, wine))  # the drop-rule incident
    chi2.append(chi2_case(allc, allc))  # identical

    chi2sf = []
    for df in [1, 2, 3, 5, 10, 19, 50, 100, 159, 165, 199, 500, 2000]:
        for x in [1e-3, 0.1, 0.5, 1, df * 0.5, df - 1, df, df + 1, df * 1.5, df * 3,
                  df * 10 + 50, 1e4]:
            if x <= 0:
                continue
            chi2sf.append([df, float(x), float(stats.chi2.sf(x, df))])

    with open(out, "w") as f:
        json.dump({"scipy": __import__("scipy").__version__, "ks": ks, "kstwo": kstwo,
                   "chi2": chi2, "chi2sf": chi2sf}, f)


if __name__ == "__main__":
    main()
