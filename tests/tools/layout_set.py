#!/usr/bin/python3
"""Reads a causal or seq2seq shard set with python3-lmdb and python3-zstandard
alone (no pairshard code: docs/FORMAT.md is the whole contract) and checks
what the format promises for the layouts (tests/cli/layout_build.sh):

  layout_set.py check DIR --layout causal|seq2seq --max-length N
                [--max-target N] [--prefix ID,ID...] [--dump OUT.jsonl]
                [--expect-too-long]

Checks: manifest format_version 2 and "layout"; every shard's meta/format
version 2; a "lengths" database with exactly one entry per block, equal to
the block's length[]; every record's boundary <= its length, the length
inside its bucket; causal: total <= max_length and the record starts with
the prefix (boundary >= len(prefix)); seq2seq: source (boundary) <=
max_length, target (length - boundary) <= max_target, both non-empty; the
accounting balances (records_in = kept + rejected + duplicates), kept equals
the records read, and the too_long rejections counted in the manifest equal
the too_long lines of rejects.jsonl (and are > 0 with --expect-too-long).
--dump writes {"id", "input_ids", "boundary"} per record, in stored order.
Prints what failed on stderr; exit status 0 when everything holds.
"""
import argparse
import json
import os
import struct
import sys

import lmdb
import zstandard


def blocks(path):
    """(key, block bytes, lengths bytes or None, meta) of a shard, in key order."""
    env = lmdb.open(path, subdir=False, readonly=True, lock=False, max_dbs=8)
    try:
        with env.begin() as t:
            names = [k for k, _ in t.cursor()]
            bdb = env.open_db(b"blocks", txn=t, create=False)
            mdb = env.open_db(b"meta", txn=t, create=False)
            meta = json.loads(t.get(b"format", db=mdb))
            ldb = env.open_db(b"lengths", txn=t, create=False) if b"lengths" in names else None
            lkeys = [k for k, _ in t.cursor(db=ldb)] if ldb else []
            out = [(bytes(k), bytes(v), t.get(k, db=ldb) if ldb else None)
                   for k, v in t.cursor(db=bdb)]
        return out, meta, names, lkeys
    finally:
        env.close()


def decode(raw):
    """The records of a PSB1 block: (length, boundary, label, id, ids)."""
    assert raw[:4] == b"PSB1", "bad magic"
    n, = struct.unpack_from("<I", raw, 4)
    width = raw[8]
    o = 12
    length = struct.unpack_from("<%dI" % n, raw, o); o += 4 * n
    bound = struct.unpack_from("<%dI" % n, raw, o); o += 4 * n
    label = struct.unpack_from("<%dI" % n, raw, o); o += 4 * n
    idoff = struct.unpack_from("<%dI" % (n + 1), raw, o); o += 4 * (n + 1)
    idb = raw[o:o + idoff[n]]; o += idoff[n]
    o += (width - o % width) % width
    fmt = "<%d%s" % (sum(length), "H" if width == 2 else "I")
    toks = struct.unpack_from(fmt, raw, o)
    recs, t = [], 0
    for i in range(n):
        recs.append((length[i], bound[i], label[i],
                     idb[idoff[i]:idoff[i + 1]].decode(), list(toks[t:t + length[i]])))
        t += length[i]
    return recs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["check"])
    ap.add_argument("dir")
    ap.add_argument("--layout", required=True)
    ap.add_argument("--max-length", type=int, required=True)
    ap.add_argument("--max-target", type=int, default=0)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--dump")
    ap.add_argument("--expect-too-long", action="store_true")
    a = ap.parse_args()
    prefix = [int(x) for x in a.prefix.split(",") if x]
    max_target = a.max_target or a.max_length
    bad = []
    m = json.load(open(os.path.join(a.dir, "manifest.json")))
    if m.get("format_version") != 2 or m.get("layout") != a.layout:
        bad.append("manifest: format_version %r layout %r" % (m.get("format_version"), m.get("layout")))
    bounds = m["buckets"]
    dctx = zstandard.ZstdDecompressor()
    kept = 0
    dump = open(a.dump, "w") if a.dump else None
    for sh in m["shards"]:
        path = os.path.join(a.dir, sh["file"])
        bl, meta, names, lkeys = blocks(path)
        if meta.get("format_version") != 2:
            bad.append("%s: meta format_version %r" % (sh["file"], meta.get("format_version")))
        if b"lengths" not in names:
            bad.append("%s: no lengths database" % sh["file"])
        if lkeys != [k for k, _, _ in bl]:
            bad.append("%s: lengths keys %d, block keys %d, not the same" % (sh["file"], len(lkeys), len(bl)))
        for key, v, lv in bl:
            bucket, seq = struct.unpack(">II", key)
            recs = decode(dctx.decompress(v))
            lengths = [r[0] for r in recs]
            if lv is None or list(struct.unpack("<%dI" % (len(lv) // 4), lv)) != lengths or len(lv) != 4 * len(recs):
                bad.append("%s: bucket %d block %d: lengths entry differs from the block" % (sh["file"], bucket, seq))
            lo = bounds[bucket - 1] if bucket else 0
            for length, b, _, rid, ids in recs:
                kept += 1
                where = "%s: record %s" % (sh["file"], rid)
                if not lo < length <= bounds[bucket] or len(ids) != length or b > length:
                    bad.append("%s: length %d boundary %d bucket (%d, %d]" % (where, length, b, lo, bounds[bucket]))
                if a.layout == "causal":
                    if length > a.max_length or ids[:len(prefix)] != prefix or b < len(prefix):
                        bad.append("%s: length %d boundary %d starts %s" % (where, length, b, ids[:4]))
                elif b > a.max_length or length - b > max_target or b == 0 or b == length:
                    bad.append("%s: source %d target %d" % (where, b, length - b))
                if dump:
                    dump.write(json.dumps({"id": rid, "input_ids": ids, "boundary": b}) + "\n")
    acc = m["accounting"]
    tl = sum(1 for l in open(os.path.join(a.dir, "rejects.jsonl")) if json.loads(l).get("reason") == "too_long")
    counted = acc.get("rejected_by_reason", {}).get("too_long", 0)
    if acc["records_in"] != acc["kept"] + acc["rejected"] + acc["duplicates"] or acc["kept"] != kept:
        bad.append("accounting: %s, %d records read" % ({k: acc[k] for k in ("records_in", "kept", "rejected", "duplicates")}, kept))
    if tl != counted or (a.expect_too_long and not tl):
        bad.append("too_long: %d in rejects.jsonl, %d counted" % (tl, counted))
    for b in bad[:10]:
        print(b, file=sys.stderr)
    print("%s: %d records, %d too_long, %d problems" % (a.dir, kept, tl, len(bad)), file=sys.stderr)
    sys.exit(1 if bad or not kept else 0)


if __name__ == "__main__":
    main()
