#!/usr/bin/env python3
"""Compares two pairshard shard sets record by record, as multisets.

  set_records.py A_DIR B_DIR

Decodes every block of every shard (LMDB through python3-lmdb, zstd through
python3-zstandard; block layout in store/shards.h) into records (bucket
bound, label name, id, type boundary, token ids), labels named through each
set's own manifest (a merged set numbers them afresh), and compares the two
multisets. Then compares the manifests' accounting and per-bucket totals.
Prints one line per check; exits 0 when everything matches, 1 when not,
77 when python3-lmdb or python3-zstandard is missing (only the manifests
are compared then, and the exit status says which way they went: 77 when
they match).
"""
import collections
import hashlib
import json
import os
import struct
import sys

try:
    import lmdb
    import zstandard
except ImportError:
    lmdb = zstandard = None


def manifest(d):
    with open(os.path.join(d, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def records(d, m):
    labels = m["labels"]
    bounds = m["buckets"]
    dctx = zstandard.ZstdDecompressor()
    out = collections.Counter()
    for sh in m["shards"]:
        env = lmdb.open(os.path.join(d, sh["file"]), subdir=False, readonly=True, lock=False,
                        max_dbs=2)
        db = env.open_db(b"blocks", create=False)
        with env.begin(db=db) as txn:
            for key, val in txn.cursor():
                bucket, _seq = struct.unpack(">II", key)
                raw = dctx.decompress(val)
                if raw[:4] != b"PSB1":
                    raise SystemExit("%s: bad block magic" % sh["file"])
                n, width = struct.unpack_from("<IB", raw, 4)
                at = 12
                length = struct.unpack_from("<%dI" % n, raw, at)
                tb = struct.unpack_from("<%dI" % n, raw, at + 4 * n)
                lab = struct.unpack_from("<%dI" % n, raw, at + 8 * n)
                off = struct.unpack_from("<%dI" % (n + 1), raw, at + 12 * n)
                ids_at = at + 4 * (4 * n + 1)
                tok_at = ids_at + off[n]
                tok_at += (-tok_at) % width
                fmt = "<%d%s" % (sum(length), "H" if width == 2 else "I")
                toks = struct.unpack_from(fmt, raw, tok_at)
                t = 0
                for i in range(n):
                    rid = raw[ids_at + off[i]:ids_at + off[i + 1]].decode("utf-8")
                    name = None if lab[i] == 0xFFFFFFFF else labels[lab[i]]
                    out[(bounds[bucket], name, rid, tb[i], toks[t:t + length[i]])] += 1
                    t += length[i]
        env.close()
    return out


def summary(m):
    a = m["accounting"]
    return {
        "accounting": {k: a[k] for k in ("records_in", "kept", "rejected", "duplicates",
                                          "balanced", "rejected_by_reason", "labels")},
        "totals": {"records": m["totals"]["records"], "tokens": m["totals"]["tokens"],
                   "buckets": [(b["bound"], b["records"], b["tokens"])
                               for b in m["totals"]["buckets"]]},
        "labels": m["labels"],
    }


def diff(a, b, path=""):
    """A few lines naming where a and b differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                out += diff(a.get(k), b.get(k), "%s.%s" % (path, k))
        return out
    return ["%s: %.200r vs %.200r" % (path, a, b)]


def main():
    a_dir, b_dir = sys.argv[1:3]
    ma, mb = manifest(a_dir), manifest(b_dir)
    ok = True
    sa, sb = summary(ma), summary(mb)
    for k in sa:
        same = sa[k] == sb[k]
        ok &= same
        print("manifest %-10s %s" % (k, "same" if same else "DIFFERENT"))
        for line in [] if same else diff(sa[k], sb[k], k)[:5]:
            print("  " + line)
    if lmdb is None:
        print("records: python3-lmdb/python3-zstandard missing, not decoded")
        sys.exit(77 if ok else 1)
    ra, rb = records(a_dir, ma), records(b_dir, mb)
    digest = hashlib.sha256(repr(sorted(ra.items())).encode()).hexdigest()[:16]
    same = ra == rb
    ok &= same
    print("records: %d and %d decoded, multisets %s (sha256 %s)" %
          (sum(ra.values()), sum(rb.values()), "same" if same else "DIFFERENT", digest))
    if not same:
        for r in list((ra - rb).keys())[:3]:
            print("  only in %s: %r" % (a_dir, r[:4]))
        for r in list((rb - ra).keys())[:3]:
            print("  only in %s: %r" % (b_dir, r[:4]))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
